#!/usr/bin/env bash
# The built-in sim-versus-live matrix, as CI runs it: every validate/ scenario must pass
# `vmlab validate`. Skips (exit 77, which CTest reports as skipped) where the live engine
# cannot run.
#
# The system-wide figures (PageTables from /proc/meminfo, the slab caches from
# /proc/slabinfo) include whatever else the host does during a run, so a scenario that
# fails is run again, up to three runs, and fails the test only if every run fails: a
# wrong model or method fails every time, host noise rarely three times in a row. The
# per-process VmPTE figures are exact and cannot be disturbed by other processes.
set -u
vmlab=$1
if [ "$(id -u)" -ne 0 ] || [ "$(uname -s)" != Linux ] || [ "$(uname -m)" != x86_64 ]; then
  echo "SKIP: vmlab validate needs root on Linux x86-64 (uid $(id -u), $(uname -sm))"
  exit 77
fi
scenarios=$("$vmlab" scenarios | awk '/^validate\//{print $1}') || exit 2
# Every host setting a live run may change (huge-page pools, THP policies) must be as it
# was once the whole matrix has run, including the scenarios that change them and the one
# whose run ends early (validate/hugetlb-sigbus).
settings=(/proc/sys/vm/nr_hugepages /proc/sys/vm/nr_overcommit_hugepages
          /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
          /sys/kernel/mm/hugepages/hugepages-2048kB/nr_overcommit_hugepages
          /sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages
          /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/shmem_enabled)
settings_now() { for f in "${settings[@]}"; do [ -r "$f" ] && echo "$f = $(cat "$f")"; done; }
before=$(settings_now)
failed=()
for s in $scenarios; do
  ok=0
  for attempt in 1 2 3; do
    "$vmlab" validate "$s"
    rc=$?
    if [ "$rc" -eq 0 ]; then ok=1; break; fi
    [ "$rc" -eq 1 ] || exit "$rc"  # not a tolerance failure: report it as it is
    echo "validate: $s outside tolerance on run $attempt of 3 (host noise check)"
  done
  [ "$ok" -eq 1 ] || failed+=("$s")
done
after=$(settings_now)
if [ "$after" != "$before" ]; then
  echo "validate: host settings changed by the matrix:"
  diff <(echo "$before") <(echo "$after")
  exit 1
fi
echo "validate: host huge-page and THP settings unchanged after the matrix"
if [ "${#failed[@]}" -gt 0 ]; then
  echo "validate: failed on every run: ${failed[*]}"
  exit 1
fi
echo "validate: every scenario within tolerance"
