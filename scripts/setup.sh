#!/usr/bin/env bash
# Installs the Debian packages a task needs, on Debian 12 (checked from a bare debootstrap minbase root by
# .ci/run). Idempotent: packages already present are left as they are, and apt is not touched at all when
# nothing is missing.
#   scripts/setup.sh            the build and the GUI (scripts/build.sh, run-studio.sh)
#   scripts/setup.sh test       and what the suite's own fixtures start (sshd, Slurm, munge, Python checks)
#   scripts/setup.sh shot       and a virtual display for screenshots (docs/screenshots/take.sh, .ci/studio-shot.sh)
#   scripts/setup.sh package    and what scripts/package.sh needs (lintian)
#   scripts/setup.sh ci-host    and what .ci/run needs on the machine that runs CI (debootstrap)
#   scripts/setup.sh fuzz       and the sanitizer build's compiler (scripts/test.sh, scripts/fuzz.sh)
set -euo pipefail
packages=(
  build-essential cmake ninja-build ccache pkg-config git
  nlohmann-json3-dev
  libtorch-dev                                   # LibTorch 1.13 (CPU) for the worker on dev machines and CI
  libgloo-dev                                    # c10d's Gloo headers: several worker ranks on CPU
  libopenblas0-pthread                           # LibTorch's BLAS: without it Debian's reference BLAS makes
                                                 # CPU runs about 25x slower
  qt6-base-dev qt6-base-dev-tools qt6-charts-dev qt6-svg-dev
  libqt6opengl6-dev                              # Qt6Charts' CMake package needs Qt6OpenGL's
  libqt6sql6-sqlite libqt6svg6 libgl1-mesa-dev
  libsqlite3-dev                                 # the store binds iteration rows through SQLite's C API
  sqlite3 fonts-dejavu-core
  openssh-client                                 # runs on another host (the Launch page's Host: ssh)
)
for group in "$@"; do
  case "$group" in
    # the suite's fixtures: the remote launch through a real sshd, Slurm jobs against a real slurmctld /
    # slurmd, written Bridge overrides checked by OmegaConf, exports read by pandas, the one-rank job's
    # symmetric-ranks bootstrap run by Python with torch.distributed
    test) packages+=(openssh-server slurm-wlm munge python3 python3-omegaconf python3-pandas python3-torch) ;;
    shot) packages+=(xvfb xauth) ;;
    package) packages+=(lintian file dpkg-dev) ;;
    ci-host) packages+=(debootstrap util-linux tar ccache) ;;
    # scripts/test.sh and fuzz.sh (the asan preset): clang, its ASan + UBSan runtimes, libFuzzer, and lld
    # (links the suite's 70-odd executables in a quarter of ld.bfd's time)
    fuzz) packages+=(clang-14 libclang-rt-14-dev libfuzzer-14-dev lld) ;;
    *) echo "setup: unknown group '$group' (test, shot, package, ci-host, fuzz)" >&2; exit 2 ;;
  esac
done
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
