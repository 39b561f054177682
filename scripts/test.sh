#!/usr/bin/env bash
# The README's test command: sets up, builds everything once with AddressSanitizer + UndefinedBehaviorSanitizer
# and warnings as errors (the asan preset: -O0 -g1, asserts on, -Wall -Wextra -Werror, build/asan), runs every
# test under them, then builds the libFuzzer targets with clang and runs each for FUZZ_SECONDS (default 30;
# 0 skips them; scripts/fuzz.sh). Arguments go to ctest (e.g. -R tst_store). Fails if anything fails.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh fuzz
echo "test: [${SECONDS}s] set up"
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}"
export CCACHE_BASEDIR="$PWD"   # clones in other folders share cache hits
scripts/build.sh asan
echo "test: [${SECONDS}s] built"
status=0
ctest --preset asan -j "$(nproc)" "$@" || status=$?
echo "test: [${SECONDS}s] tested"
seconds="${FUZZ_SECONDS:-30}"
if [ "$seconds" != 0 ]; then
  scripts/fuzz.sh "$seconds" || status=1
  echo "test: [${SECONDS}s] fuzzed"
fi
exit "$status"
