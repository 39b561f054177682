#!/usr/bin/env bash
# Builds the two Debian packages and checks them:
#   recompute-studio_<version>_<arch>.deb  the GUI recompute-studio and the CLI recompute (Qt, no LibTorch)
#   recompute-bench_<version>_<arch>.deb   the worker recompute-bench (the only one that needs LibTorch)
# with the `package` preset (build/package: Release, dpkg-buildflags' hardening flags, no tests), then runs
# lintian on them (failing on any error or warning) and checks what lintian does not: the studio package
# does not depend on LibTorch, and the installed presets match the MIME type's glob.
# Usage: scripts/package.sh [OUTDIR]   (default build/package/debs)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh package
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}"
export CCACHE_BASEDIR="$PWD"
cmake --preset package >/dev/null
# What the two packages hold, not the benchmark programs (the preset keeps `install` from building all).
cmake --build --preset package -j "$(nproc)" --target recompute-studio recompute recompute-bench rs_packaging_docs
out="${1:-build/package/debs}"
rm -rf "$out"
mkdir -p "$out"
out=$(cd "$out" && pwd)
cpack --config build/package/CPackConfig.cmake -B "$out/cpack" >"$out/cpack.log" 2>&1 || {
  cat "$out/cpack.log" >&2
  exit 1
}
mv "$out"/cpack/*.deb "$out"/
rm -rf "$out/cpack"
fail=0
check() { echo "package: FAILED: $*" >&2; fail=1; }
studio=$(ls "$out"/recompute-studio_*.deb)
bench=$(ls "$out"/recompute-bench_*.deb)
for deb in "$studio" "$bench"; do
  echo "== $(basename "$deb")"
  dpkg-deb -f "$deb" Package Version Architecture Depends Recommends | sed 's/^/   /'
done
if dpkg-deb -f "$studio" Depends | grep -qi torch; then check "recompute-studio depends on LibTorch"; fi
dpkg-deb -f "$bench" Depends | grep -qi torch || check "recompute-bench does not depend on LibTorch"
glob=$(sed -n 's/.*<glob pattern="\([^"]*\)".*/\1/p' packaging/recompute-studio.mime.xml)
presets=$(dpkg-deb -c "$studio" | awk '{ print $NF }' | grep '/presets/.' || true)
[ -n "$presets" ] || check "no presets in recompute-studio"
for p in $presets; do
  # shellcheck disable=SC2053 # the glob is meant to match as a pattern
  [[ $(basename "$p") == $glob ]] || check "preset $p does not match the MIME glob $glob"
done
echo "== lintian $(lintian --version | awk '{ print $2 }')"
# lintian says that running as root is not recommended; that is its only complaint about this machine.
if ! lintian --fail-on error,warning "$studio" "$bench" 2> >(grep -v 'running with root privileges' >&2); then
  check "lintian reports errors or warnings (above)"
fi
[ "$fail" -eq 0 ] || exit 1
echo "package: $(basename "$studio") $(basename "$bench") in $out: lintian clean"
