#!/usr/bin/env bash
# Builds the libFuzzer targets under fuzz/ with clang, AddressSanitizer and UndefinedBehaviorSanitizer
# (build/fuzz, RS_BUILD_FUZZERS=ON, no worker, no GUI programs) and runs each for SECONDS (default 20) on
# its seed corpus fuzz/corpus/<target>/. New inputs go to build/fuzz/corpus/<target>/ (the seeds in the
# repository stay as they are); a crash, a sanitizer report, an uncaught exception, a leak, a timeout
# (10 s) or 2 GB of memory stops that target, leaves the input in build/fuzz/artifacts/ and fails the
# script. Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
seconds="${1:-20}"
shift || true
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${RS_FUZZ_BUILD:-$root/build/fuzz}"
jobs="${RS_JOBS:-2}"
all=(fuzz_recipe_json fuzz_overrides fuzz_flags fuzz_log_import fuzz_stream)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")

"$root/scripts/setup.sh" fuzz # clang-14, its sanitizer runtimes, libFuzzer
cc="$(command -v clang-14 || command -v clang || true)"
cxx="$(command -v clang++-14 || command -v clang++ || true)"
if [ -z "$cxx" ]; then
  echo "fuzz: clang++ not found (scripts/setup.sh fuzz installs clang-14 and libfuzzer-14-dev)" >&2
  exit 2
fi
sanitize="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
if [ ! -f "$build/CMakeCache.txt" ]; then
  # Asserts on (Debug) at -O1 with line tables only (-g1: file:line in reports; a smaller, faster build).
  CC="$cc" CXX="$cxx" cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
    -DRS_BUILD_FUZZERS=ON -DRS_BUILD_WORKER=OFF -DRS_BUILD_TESTS=OFF \
    -DCMAKE_CXX_FLAGS="$sanitize -fsanitize=fuzzer-no-link" >/dev/null
fi
cmake --build "$build" -j"$jobs" --target "${targets[@]}"

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
export QT_QPA_PLATFORM=offscreen
mkdir -p "$build/artifacts"
failed=()
for t in "${targets[@]}"; do
  mkdir -p "$build/corpus/$t"
  start=$(date +%s)
  if "$build/fuzz/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
      -print_final_stats=1 -artifact_prefix="$build/artifacts/$t-" \
      "$build/corpus/$t" "$root/fuzz/corpus/$t" >"$build/$t.log" 2>&1; then
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$build/$t.log" | grep -o '[0-9]*$' || echo '?')
    echo "fuzz: $t clean ($runs inputs in $(( $(date +%s) - start )) s)"
  else
    echo "fuzz: $t FAILED, see $build/$t.log and $build/artifacts/" >&2
    grep -E 'ERROR|runtime error|SUMMARY|uncaught|Test unit written' "$build/$t.log" | head -20 >&2 || true
    failed+=("$t")
  fi
done
[ ${#failed[@]} -eq 0 ] || { echo "fuzz: failed: ${failed[*]}" >&2; exit 1; }
