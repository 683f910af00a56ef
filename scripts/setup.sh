#!/usr/bin/env bash
# Command 1 of the README: install, build (Release), and run vmlab's main job on a
# built-in scenario — the simulated page-table bill of an OLTP-style workload, then the
# same workload validated against this host's kernel when we are root on Linux x86-64.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build vmlab
build/vmlab run examples/oltp-small
if [ "$(id -u)" -eq 0 ] && [ "$(uname -m)" = x86_64 ]; then
  build/vmlab validate validate/shm-256m-4proc validate/fork-cow
else
  echo "(skipping the live validation: it needs root on Linux x86-64)"
fi
