#!/usr/bin/env bash
# The live engine beside a busy host: stress-ng (Debian's) loads every CPU and churns a
# gigabyte of memory (page tables allocated and freed all the time) while `vmlab validate`
# runs a few scenarios. Nothing may FAIL: per-process figures are exact whatever the rest
# of the host does, and a system-wide figure the host would not let vmlab measure must be
# reported as "not measurable", never as a wrong number.
#
#   tests/scripts/live_under_stress.sh VMLAB [SCENARIO...]
#
# Exit 0 when validate exits 0, 1 when it reports a failure, 77 (skip) without root on
# Linux x86-64 or without stress-ng.
set -u
vmlab=$1
shift
scenarios=("$@")
((${#scenarios[@]})) || scenarios=(validate/shm-256m-4proc validate/fork-cow validate/rmap-cow validate/madvise-aligned)
if [ "$(id -u)" -ne 0 ] || [ "$(uname -s)" != Linux ] || [ "$(uname -m)" != x86_64 ]; then
  echo "SKIP: the live engine needs root on Linux x86-64 (uid $(id -u), $(uname -sm))"
  exit 77
fi
command -v stress-ng >/dev/null || { echo "SKIP: stress-ng is not installed (scripts/install-deps.sh installs it)"; exit 77; }
stress-ng --cpu 2 --vm 1 --vm-bytes 1G --timeout 600s --quiet &
stress=$!
trap 'kill $stress 2>/dev/null; wait $stress 2>/dev/null' EXIT
sleep 2  # let it get going
"$vmlab" validate "${scenarios[@]}"
rc=$?
echo "live_under_stress: vmlab validate exited $rc beside stress-ng --cpu 2 --vm 1 --vm-bytes 1G"
exit $rc
