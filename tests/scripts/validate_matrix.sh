#!/usr/bin/env bash
# The built-in sim-versus-live matrix, as CI runs it: `vmlab validate` must exit 0.
# Skips (exit 77, which CTest reports as skipped) where the live engine cannot run.
set -u
vmlab=$1
if [ "$(id -u)" -ne 0 ] || [ "$(uname -s)" != Linux ] || [ "$(uname -m)" != x86_64 ]; then
  echo "SKIP: vmlab validate needs root on Linux x86-64 (uid $(id -u), $(uname -sm))"
  exit 77
fi
exec "$vmlab" validate
