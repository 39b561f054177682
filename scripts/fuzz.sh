#!/usr/bin/env bash
# Builds the libFuzzer targets under fuzz/ in the asan preset (build/asan: clang, AddressSanitizer +
# UndefinedBehaviorSanitizer, the same tree as the sanitizer test run) and runs each for SECONDS (default
# 20) on its seed corpus fuzz/corpus/<target>/, RS_JOBS (default 2) targets at a time. New inputs go to
# build/asan/fuzz/corpus/<target>/ (the seeds in the repository stay as they are); a crash, a sanitizer
# report, an uncaught exception, a leak, a timeout (10 s) or 2 GB of memory stops that target, leaves the
# input in build/asan/fuzz/artifacts/ and fails the script. Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
seconds="${1:-20}"
shift || true
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
jobs="${RS_JOBS:-2}"
all=(fuzz_recipe_json fuzz_overrides fuzz_flags fuzz_estimate fuzz_log_import fuzz_stream fuzz_job_log)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")

scripts/setup.sh fuzz # clang-14, its sanitizer runtimes, libFuzzer
cmake --preset asan >/dev/null
cmake --build --preset asan -j"$jobs" --target "${targets[@]}"
out=build/asan/fuzz

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
export QT_QPA_PLATFORM=offscreen
mkdir -p "$out/artifacts"
run_target() {
  local t=$1 start
  mkdir -p "$out/corpus/$t"
  start=$(date +%s)
  if "$out/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
      -print_final_stats=1 -artifact_prefix="$out/artifacts/$t-" \
      "$out/corpus/$t" "fuzz/corpus/$t" >"$out/$t.log" 2>&1; then
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$out/$t.log" | grep -o '[0-9]*$' || echo '?')
    echo "fuzz: $t clean ($runs inputs in $(( $(date +%s) - start )) s)"
  else
    echo "fuzz: $t FAILED, see $out/$t.log and $out/artifacts/" >&2
    grep -E 'ERROR|runtime error|SUMMARY|uncaught|Test unit written' "$out/$t.log" | head -20 >&2 || true
    return 1
  fi
}
# Each target's verdict in a file: `wait -n` reaps jobs in any order.
rm -f "$out"/*.failed
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  (run_target "$t" || touch "$out/$t.failed") &
done
wait
failed=()
for t in "${targets[@]}"; do
  [ ! -e "$out/$t.failed" ] || failed+=("$t")
done
[ ${#failed[@]} -eq 0 ] || { echo "fuzz: failed: ${failed[*]}" >&2; exit 1; }
