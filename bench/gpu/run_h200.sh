#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The worker's H200 benchmark in one command (docs/benchmarks.md, "Worker on the H200"): builds
# recompute-bench against the PyTorch wheel's LibTorch, runs a smoke test, checks and times the optimizer
# step (bench_optimizer), measures the bf16 matmul rate,
# then runs every recompute choice of bench/gpu/make_variants.py with the worker and with the PyTorch eager
# stack, and prints a summary table. Results go to $OUT (default ./out/h200).
# Usage: bench/gpu/run_h200.sh [MODEL_OR_VARIANT ...]   (default: all)
# Needs: CMake, ninja, nvcc, python3 with torch; nlohmann/json.hpp under .deps/include when the host lacks it.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/out/h200}
mkdir -p "$OUT"
WARMUP=${WARMUP:-2}
ITERS=${ITERS:-5}
. bench/gpu/common.sh

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv >"$OUT/gpu.txt" 2>&1
log "configure + build"
build_worker recompute-bench bench_optimizer
BIN=build/gpu/app/bench/recompute-bench
log "built"

: >"$OUT/worker.jsonl"
echo '{"event":"variant","name":"smoke"}' >>"$OUT/worker.jsonl"
timeout 120 "$BIN" bench/gpu/recipes/smoke.json --device cuda --warmup 1 --iters 2 >>"$OUT/worker.jsonl" 2>>"$OUT/run.log"
log "smoke rc=$? $(tail -1 "$OUT/worker.jsonl" | cut -c1-200)"

timeout 120 build/gpu/bench/bench_optimizer --device cuda >"$OUT/optimizer.jsonl" 2>>"$OUT/run.log"
log "optimizer rc=$? $(tr '\n' ' ' <"$OUT/optimizer.jsonl")"

python3 bench/torch_eager/eager_stack.py --matmul-rate >"$OUT/eager.jsonl" 2>>"$OUT/run.log"
log "matmul $(cat "$OUT/eager.jsonl")"

VARIANTS=$(python3 bench/gpu/make_variants.py "$OUT/variants" "$@")
for v in $VARIANTS; do
    echo "{\"event\":\"variant\",\"name\":\"$v\"}" >>"$OUT/worker.jsonl"
    timeout 150 "$BIN" "$OUT/variants/$v.json" --device cuda --warmup "$WARMUP" --iters "$ITERS" \
        >>"$OUT/worker.jsonl" 2>>"$OUT/run.log"
    log "worker $v rc=$? $(tail -1 "$OUT/worker.jsonl" | cut -c1-160)"
done
# One Python process for every eager variant (the cache is emptied and the peaks reset between them).
FILES=()
for v in $VARIANTS; do FILES+=("$OUT/variants/$v.json"); done
PYTHONUNBUFFERED=1 timeout "${EAGER_TIMEOUT:-400}" python3 bench/torch_eager/eager_stack.py --warmup "$WARMUP" \
    --iters "$ITERS" "${FILES[@]}" >>"$OUT/eager.jsonl" 2>>"$OUT/run.log"
log "eager rc=$?" 
rm -rf "$OUT/variants"
python3 bench/gpu/summarize.py "$OUT" | tee "$OUT/summary.md"
