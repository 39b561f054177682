#!/usr/bin/env bash
# The README's test command (what .ci/run runs): sets up, builds everything in the asan preset (build/asan:
# clang, AddressSanitizer + UndefinedBehaviorSanitizer, -O0 -g1, asserts on, warnings are errors; the
# worker, the GUI, the tests and the libFuzzer targets), runs every test under the sanitizers, then every
# fuzz target for FUZZ_SECONDS each (default 20, scripts/fuzz.sh). Arguments go to ctest (e.g. -R tst_rules);
# with arguments the fuzzers are not run. Exits non-zero when a build, a test or a fuzzer fails.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh fuzz
echo "test: [${SECONDS}s] set up"
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}"
export CCACHE_BASEDIR="$PWD"   # clones in other folders share cache hits: paths relative to the clone,
export CCACHE_NOHASHDIR=1       # and the working directory left out of the -g1 compiles' hash
jobs="$(nproc)"
cmake --preset asan >/dev/null
cmake --build --preset asan -j "$jobs"
echo "test: [${SECONDS}s] built"
status=0
# The preset's environment: offscreen Qt; no leak report for the suite (LibTorch keeps pools it never
# frees; the fuzzers, on code that is ours alone, do report leaks); the first UBSan report fails the test.
ctest --preset asan -j "$jobs" "$@" || status=$?
echo "test: [${SECONDS}s] tested"
if [ $# -eq 0 ]; then
  RS_JOBS="$jobs" scripts/fuzz.sh "${FUZZ_SECONDS:-20}" || status=$?
  echo "test: [${SECONDS}s] fuzzed"
fi
exit "$status"
