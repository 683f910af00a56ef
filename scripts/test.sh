#!/usr/bin/env bash
# Command 2 of the README: every test, in a Release build (unit, property, golden, live,
# CLI) and in an ASan+UBSan build. Live tests run for real as root and skip, saying why,
# elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each phase's wall time goes to stderr, so a slow CI run shows where the time went.
phase() { echo "== test.sh: $1 done at ${SECONDS}s" >&2; }
bash scripts/install-deps.sh
phase install-deps
jobs=$(nproc)
# Tests that run the live engine (or time real I/O) run one at a time, after the others:
# they take the host-wide live lock and measure this host. The rest run $jobs at a time.
# tiobench_vs_fio compares two tools' disk rates and runs alone.
serial='Live|live|validate_matrix|tiobench|Tiobench|InspectCli|CliCleanup'
alone='tiobench_vs_fio'
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build -j"$jobs"
phase release-build
ctest --test-dir build --output-on-failure -j"$jobs" -E "$serial"
ctest --test-dir build --output-on-failure -j1 -R "$alone"
phase release-tests-parallel
# The sanitizer build is also the fuzz build: clang-14 at -O1 with ASan, UBSan and
# libFuzzer's coverage hooks, so one compile serves the tests and the fuzzers (the
# tests link no fuzzer; ASan's runtime supplies the hooks; fuzz.sh builds the fuzz
# targets in it). -O1 is what the ASan authors recommend. docs/decisions.md "Testing:
# one sanitizer build for the tests and the fuzzers".
# It compiles at the lowest priority while the Release build's live tests run one at a
# time: they mostly wait (on kill points, on worker processes), and they are written for
# busy hosts (validate retries host noise, the kill points scale with the run they time).
# docs/decisions.md "Testing: the sanitizer build beside the live tests".
CC=clang-14 CXX=clang++-14 cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -gline-tables-only" -DVMLAB_SANITIZE=ON -DVMLAB_FUZZ=ON -DVMLAB_BENCH=OFF >/dev/null
asan_log=$(mktemp)
trap 'rm -f "$asan_log"' EXIT
nice -n 19 ninja -C build-asan -j"$jobs" vmlab vmlab_tests >"$asan_log" 2>&1 &
asan_build=$!
if ! ctest --test-dir build --output-on-failure -j1 -R "$serial" -E "$alone"; then
  kill "$asan_build" 2>/dev/null || true
  wait "$asan_build" 2>/dev/null || true
  exit 1
fi
phase release-tests
if ! wait "$asan_build"; then
  cat "$asan_log"
  echo "test.sh: the sanitizer build failed" >&2
  exit 1
fi
phase asan-build
export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1
ctest --test-dir build-asan --output-on-failure -j"$jobs" -E "$serial"
ctest --test-dir build-asan --output-on-failure -j1 -R "$serial"
phase asan-tests
# Every parser's fuzzer: replay the regression inputs, then ten seconds each.
FUZZ_BUILD_DIR=build-asan FUZZ_REUSE_BUILD=1 bash scripts/fuzz.sh 10
phase fuzz
