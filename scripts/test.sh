#!/usr/bin/env bash
# Command 2 of the README: every test, in a Release build (unit, property, golden, live,
# CLI) and in an ASan+UBSan build. Live tests run for real as root and skip, saying why,
# elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
jobs=$(nproc)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build -j"$jobs"
ctest --test-dir build --output-on-failure -j1
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DVMLAB_SANITIZE=ON >/dev/null
ninja -C build-asan -j"$jobs" vmlab vmlab_tests
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --test-dir build-asan --output-on-failure -j1
# Every parser's fuzzer: replay the regression inputs, then ten seconds each.
bash scripts/fuzz.sh 10
