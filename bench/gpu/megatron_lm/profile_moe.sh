#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Why the worker's MoE step is shorter than real Megatron-LM's (issue 28): real Megatron-LM (d98e8a64, TE
# 2.17.1, grouped GEMM, the alltoall dispatcher on one rank) on an MoE stack, each choice run alone with the
# PyTorch profiler over two steady steps, and trace_busy.py's account of each step (wall time, the time the GPU
# was busy, the host's waits on the device, GPU time by kernel); then the worker alone on the same line.
# Logs and the summaries to $OUT/profile-moe. Needs .deps/mlm and .deps/te as real_ranks.sh does; the worker
# binary of a real_ranks.sh call (build/gpu) is built when missing.
# Usage: bench/gpu/megatron_lm/profile_moe.sh [CHOICE ...]    (default: none moe_act)
set -uo pipefail
cd "$(dirname "$0")/../../.."
root=$PWD
OUT=${OUT:-$root/out/profile_moe}
mdir="${MEGATRON_DIR:-$root/.deps/mlm}"
logs="$OUT/profile-moe"
mkdir -p "$logs"
. bench/gpu/common.sh
[ -d /tmp/te-site ] || tar -C /tmp -xJf .deps/te/te-site-*.tar.xz
export PYTHONPATH=/tmp/te-site:$root/.deps/te/shim
export PYTHONUNBUFFERED=1 CUDA_DEVICE_MAX_CONNECTIONS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
BIN=build/gpu/app/bench/recompute-bench
[ -x "$BIN" ] || build_worker recompute-bench
choices=("$@")
[ ${#choices[@]} -gt 0 ] || choices=(none moe_act)
flags=(--mock-data --tokenizer-type NullTokenizer --vocab-size 32000 --no-persist-layer-norm
  --no-masked-softmax-fusion --no-gradient-accumulation-fusion --log-interval 1 --log-memory-interval 1
  --train-iters 12 --lr 1e-4 --min-lr 1e-5 --lr-decay-style constant --eval-iters 0 --eval-interval 100000
  --seed 1234 --log-throughput --bf16 --num-layers 4 --hidden-size 2048 --num-attention-heads 16
  --group-query-attention --num-query-groups 4 --num-experts 64 --moe-router-topk 6 --moe-ffn-hidden-size 1408
  --moe-grouped-gemm --moe-token-dispatcher-type alltoall --moe-aux-loss-coeff 1e-2 --swiglu
  --normalization RMSNorm --position-embedding-type rope --disable-bias-linear
  --untie-embeddings-and-output-weights --attention-dropout 0 --hidden-dropout 0 --seq-length 4096
  --max-position-embeddings 4096 --micro-batch-size 1 --global-batch-size 4)
for c in "${choices[@]}"; do
  sel=()
  [ "$c" = none ] || sel=(--recompute-granularity selective --recompute-modules ${c//,/ })
  log="$logs/megatron-$c.log"
  echo "# command: RANK=0 WORLD_SIZE=1 python3 pretrain_gpt.py ${flags[*]} ${sel[*]}" >"$log"
  (cd "$mdir" && RANK=0 LOCAL_RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29533 timeout 300 \
     python3 pretrain_gpt.py "${flags[@]}" "${sel[@]}" --profile --use-pytorch-profiler --profile-step-start 8 \
     --profile-step-end 10 --tensorboard-dir "/tmp/tb-$c/tb") >>"$log" 2>&1
  echo "# exit: $?" >>"$log"
  python3 bench/gpu/megatron_lm/trace_busy.py /tmp/tb-"$c"/torch_profile/rank-0.json.gz >"$logs/megatron-$c.busy.txt" 2>&1
  log "megatron $c: $(head -3 "$logs/megatron-$c.busy.txt" | tail -2 | tr '\n' ' ')"
  timeout 200 "$BIN" --profile main --device cuda --warmup 4 --iters 12 \
    --mlm-args torchrun --nproc-per-node 1 pretrain_gpt.py "${flags[@]}" "${sel[@]}" </dev/null \
    >"$logs/worker-$c.jsonl" 2>"$logs/worker-$c.err"
  log "worker $c: $(grep -o '"steady_step_ms":[0-9.]*' "$logs/worker-$c.jsonl" | head -1)"
done
