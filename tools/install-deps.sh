#!/usr/bin/env bash
# Installs the Debian packages mfusim builds with. Idempotent: does nothing
# when every package is already installed.
set -euo pipefail
packages=(build-essential cmake libboost-graph-dev libeigen3-dev libcli11-dev
          libtomlplusplus-dev doctest-dev libbenchmark-dev
          python3 python3-dev python3-pybind11 pybind11-dev)   # the Python module (python/)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q || true
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
