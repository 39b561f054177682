#!/usr/bin/env bash
# Installs every Debian package the build, the tests and the GUI need. Idempotent: packages already
# present are left as they are, and apt is not touched at all when nothing is missing.
set -euo pipefail
packages=(
  build-essential cmake ninja-build ccache pkg-config git
  nlohmann-json3-dev
  libtorch-dev                                   # LibTorch 1.13 (CPU) for the worker on dev machines and CI
  libgloo-dev                                    # c10d's Gloo headers: several worker ranks on CPU
  libopenblas0-pthread                           # LibTorch's BLAS: without it Debian's reference BLAS makes
                                                 # CPU runs about 25x slower
  qt6-base-dev qt6-base-dev-tools qt6-charts-dev qt6-svg-dev
  libqt6sql6-sqlite libqt6svg6 libgl1-mesa-dev
  libsqlite3-dev                                 # the store binds iteration rows through SQLite's C API
  sqlite3 xvfb xauth fonts-dejavu-core
  openssh-client
  openssh-server                                 # tests: the remote launch goes through a real sshd
  clang-14 libclang-rt-14-dev libfuzzer-14-dev    # scripts/fuzz.sh: libFuzzer targets with ASan + UBSan
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
