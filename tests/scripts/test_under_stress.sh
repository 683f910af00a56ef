#!/usr/bin/env bash
# The README's second command on a busy machine: `bash scripts/test.sh` (every test,
# Release and ASan builds, the fuzzers) while stress-ng --cpu 2 --vm 1 --vm-bytes 1G runs
# beside it. Too long for every CI run; run it before changing how the live engine
# measures (issue 8). Exit status: that of scripts/test.sh.
set -u
cd "$(dirname "$0")/../.."
command -v stress-ng >/dev/null || bash scripts/install-deps.sh
stress-ng --cpu 2 --vm 1 --vm-bytes 1G --timeout 7200s --quiet &
stress=$!
trap 'kill $stress 2>/dev/null; wait $stress 2>/dev/null' EXIT
bash scripts/test.sh
rc=$?
echo "test_under_stress: scripts/test.sh exited $rc beside stress-ng --cpu 2 --vm 1 --vm-bytes 1G"
exit $rc
