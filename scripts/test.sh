#!/usr/bin/env bash
# The README's test command: sets up, builds with warnings as errors, runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
echo "test: [${SECONDS}s] set up"
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}"
export CCACHE_BASEDIR="$PWD"   # clones in other folders share cache hits
scripts/build.sh ci
echo "test: [${SECONDS}s] built"
status=0
QT_QPA_PLATFORM=offscreen ctest --preset ci -j "$(nproc)" "$@" || status=$?
echo "test: [${SECONDS}s] tested"
exit "$status"
