#!/usr/bin/env bash
# Installs every Debian package vmlab needs to build, test and benchmark. Idempotent.
set -euo pipefail
PKGS=(g++ cmake ninja-build pkg-config libgtest-dev libgmock-dev libbenchmark-dev
      libtomlplusplus-dev libcli11-dev nlohmann-json3-dev libfmt-dev gnuplot-nox
      clang-14 libclang-rt-14-dev stress-ng chromium parallel
      python3-jsonschema fio)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
