#!/usr/bin/env bash
# What real Megatron-LM holds at its peak, beside the worker's attribution of its own peak, on the same
# command lines (issue 13's ±3 % goal): runs the chosen fixture runs of tests/fixtures/logs/megatron-lm-h200
# again for 3 iterations with --record-memory-history (all at once: memory is per process, time is not
# measured here), builds the worker meanwhile, runs the worker on the same lines, and prints for each run
# Megatron's peak grouped by the source line that allocated it (snapshot_peak.py) and the worker's
# peak_attribution at its peak phase (worker_peak.py). Then, for issue 12's H200 table, the worker on the
# benchmark recipes' variants (bench/gpu/make_variants.py) named in VARIANTS. Everything goes to $OUT.
# Usage: bench/gpu/megatron_lm/snapshot_compare.sh [RUN ...]   (default: the runs the worker misses most)
set -u
cd "$(dirname "$0")/../../.."
OUT=${OUT:-$PWD/out/snapshot_compare}
mkdir -p "$OUT/snap" "$OUT/worker" "$OUT/bench"
. bench/gpu/common.sh
export PYTHONUNBUFFERED=1 CUDA_DEVICE_MAX_CONNECTIONS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
fixtures=tests/fixtures/logs/megatron-lm-h200
mdir=${MEGATRON_DIR:-$PWD/.megatron}
runs=("$@")
[ ${#runs[@]} -gt 0 ] || runs=(dense-full-uniform-1 moe-full-uniform-1 dense-core_attn llama-none moe-none)
flags_of() { head -1 "$fixtures/$1.log" | sed 's/^# command: .*pretrain_gpt.py //'; }
log "build (background) + Megatron-LM with memory history: ${runs[*]}"
(build_worker recompute-bench; echo built >"$OUT/built") &
builder=$!
port=29600
for r in "${runs[@]}"; do
  f=$(flags_of "$r" | sed 's/--train-iters [0-9]*/--train-iters 3/')
  # shellcheck disable=SC2086 # the fixture's flag line splits on whitespace, as its shell line did
  (cd "$mdir" && timeout 400 torchrun --nproc-per-node 1 --master-port $port pretrain_gpt.py $f \
     --record-memory-history --memory-snapshot-path "$OUT/snap/$r.pickle") >"$OUT/snap/$r.log" 2>&1 &
  port=$((port + 1))
  sleep 1
done
wait $builder
log "built: $(cat "$OUT/built" 2>/dev/null || echo FAILED)"
wait
log "megatron runs done"
BIN=build/gpu/app/bench/recompute-bench
for r in "${runs[@]}"; do
  echo "## $r: Megatron-LM max allocated (MiB): $(grep -o 'max allocated: [0-9.]*' "$OUT/snap/$r.log" | awk '{print $3}' | sort -g | tail -1)"
  python3 bench/gpu/megatron_lm/snapshot_peak.py "$OUT/snap/${r}_0.pickle" --top 30 --json "$OUT/snap/$r.peak.json" 2>&1 | tee "$OUT/snap/$r.peak.txt"
  python3 bench/gpu/megatron_lm/snapshot_peak.py "$OUT/snap/${r}_0.pickle" --top 15 --depth 3 >"$OUT/snap/$r.peak3.txt" 2>&1
  rm -f "$OUT/snap/${r}_0.pickle"
  # shellcheck disable=SC2046
  timeout 150 "$BIN" --device cuda --warmup 2 --iters 3 --mlm-args $(flags_of "$r") </dev/null \
    >"$OUT/worker/$r.jsonl" 2>"$OUT/worker/$r.err"
  python3 bench/gpu/megatron_lm/worker_peak.py "$OUT/worker/$r.jsonl" --heading
done
VARIANTS=${VARIANTS:-"dense-fused__none dense-fused__core_attn dense-fused__mlp dense-fused__full-uniform-1 dense-fused__full-block-4 dense-unfused__none dense-unfused__core_attn dense-unfused__full-uniform-1 moonlight__none moonlight__moe_act moonlight__full-uniform-1"}
# shellcheck disable=SC2086
python3 bench/gpu/make_variants.py "$OUT/bench/variants" $VARIANTS >/dev/null
for v in $VARIANTS; do
  timeout 120 "$BIN" "$OUT/bench/variants/$v.json" --device cuda --warmup 2 --iters 3 \
    >"$OUT/bench/$v.jsonl" 2>"$OUT/bench/$v.err"
  log "worker $v rc=$? $(grep -o '"peak_allocated":[0-9]*' "$OUT/bench/$v.jsonl" | head -1)"
done
log done
# One file back from the device host: everything in a tarball.
tar -C "$OUT" -czf "$OUT/results.tar.gz" snap worker bench && rm -rf "$OUT/snap" "$OUT/worker" "$OUT/bench"
