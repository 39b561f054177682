#!/usr/bin/env bash
# The worker's measured peaks on the benchmark recipes' variants (bench/gpu/make_variants.py) on the GPU
# host, for the estimate-against-measurement table of docs/benchmarks.md ("Estimator", H200): builds
# recompute-bench (build/gpu, as run_h200.sh), runs each variant for WARMUP + ITERS iterations and packs the
# streams into $OUT/worker-variants.tar.gz. The estimates are computed afterwards on any machine:
#   bench/gpu/estimate_table.py RESULTS_DIR
# Usage: bench/gpu/worker_vs_estimate.sh [VARIANT ...]   (default: every one-rank variant; a layout model
#        such as dense-fused-tp4-pp4-vpp2 by name). JOBS=N runs N variants at once on the GPU: each
#        process's peak is its own (the CUDA caching allocator's counters), its step time is not usable then.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/out/worker_vs_estimate}
mkdir -p "$OUT/variants" "$OUT/streams"
. bench/gpu/common.sh

build_worker recompute-bench
BIN=build/gpu/app/bench/recompute-bench
VARIANTS=$(python3 bench/gpu/make_variants.py "$OUT/variants" "$@")
run_variant() {
  timeout 150 "$BIN" "$OUT/variants/$1.json" --device cuda --warmup "${WARMUP:-2}" --iters "${ITERS:-3}" \
    >"$OUT/streams/$1.jsonl" 2>"$OUT/streams/$1.err"
  log "worker $1 rc=$? $(grep -o '"peak_allocated":[0-9]*' "$OUT/streams/$1.jsonl" | tail -1)"
}
for v in $VARIANTS; do
  while [ "$(jobs -rp | wc -l)" -ge "${JOBS:-1}" ]; do wait -n; done
  run_variant "$v" &
done
wait
tar -C "$OUT" -czf "$OUT/worker-variants.tar.gz" variants streams && rm -rf "$OUT/variants" "$OUT/streams"
