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
serial='Live|live|validate_matrix|tiobench|Tiobench|InspectCli|CliCleanup'
run_tests() {
  ctest --test-dir "$1" --output-on-failure -j"$jobs" -E "$serial"
  ctest --test-dir "$1" --output-on-failure -j1 -R "$serial"
}
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build -j"$jobs"
phase release-build
run_tests build
phase release-tests
# The sanitizer build is also the fuzz build: clang-14 at -O1 with ASan, UBSan and
# libFuzzer's coverage hooks, so one compile serves the tests and the fuzzers (the
# tests link no fuzzer; ASan's runtime supplies the hooks; fuzz.sh builds the fuzz
# targets in it). -O1 is what the ASan authors recommend. docs/decisions.md "Testing:
# one sanitizer build for the tests and the fuzzers".
CC=clang-14 CXX=clang++-14 cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -gline-tables-only" -DVMLAB_SANITIZE=ON -DVMLAB_FUZZ=ON -DVMLAB_BENCH=OFF >/dev/null
ninja -C build-asan -j"$jobs" vmlab vmlab_tests
phase asan-build
export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1
run_tests build-asan
phase asan-tests
# Every parser's fuzzer: replay the regression inputs, then ten seconds each.
FUZZ_BUILD_DIR=build-asan FUZZ_REUSE_BUILD=1 bash scripts/fuzz.sh 10
phase fuzz
