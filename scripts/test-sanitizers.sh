#!/usr/bin/env bash
# The sanitizer run (not in CI: 37 min cold, docs/benchmarks.md "CI"), after scripts/setup.sh fuzz, with
# RS_JOBS (default 2) jobs: the whole test suite built with AddressSanitizer + UndefinedBehaviorSanitizer
# (the asan preset: build/asan, worker included, warnings are errors), then every libFuzzer target for
# FUZZ_SECONDS each (default 20; scripts/fuzz.sh). Exits non-zero on the first failure.
# Usage: scripts/test-sanitizers.sh [--no-suite] [--no-fuzz]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
suite=1 fuzz=1
for a in "$@"; do
  case "$a" in
    --no-suite) suite=0 ;;
    --no-fuzz) fuzz=0 ;;
    *) echo "usage: scripts/test-sanitizers.sh [--no-suite] [--no-fuzz]" >&2; exit 2 ;;
  esac
done
jobs="${RS_JOBS:-2}"
t0=$(date +%s)
if [ "$suite" = 1 ]; then
  cmake --preset asan >/dev/null
  cmake --build --preset asan -j"$jobs"
  # LibTorch allocates pools it never frees and its static initialisers are not ours: leaks are not
  # reported for the whole suite (the fuzzers do report them, on code that is ours alone).
  ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}" \
  UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}" \
    ctest --preset asan -j"$jobs"
  echo "sanitizers: test suite clean under ASan + UBSan in $(( $(date +%s) - t0 )) s"
fi
t1=$(date +%s)
if [ "$fuzz" = 1 ]; then
  scripts/fuzz.sh "${FUZZ_SECONDS:-20}"
  echo "sanitizers: fuzzers clean in $(( $(date +%s) - t1 )) s"
fi
