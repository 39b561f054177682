#!/usr/bin/env bash
# Real Megatron-LM training runs on one GPU, for the fixtures the estimator, the log import and the worker
# comparison are held to. Megatron-LM's own source (not ours, not committed) sits in MEGATRON_DIR
# (default .megatron: megatron/, pretrain_gpt.py, gpt_builders.py, model_provider.py at profile main,
# d98e8a64). Each run's log starts with the exact command line; all logs are packed into $OUT/logs.tar.gz.
# Usage: bench/gpu/megatron_lm/run_fixtures.sh [PARALLEL] [NAME_REGEX]
set -uo pipefail
cd "$(dirname "$0")/../../.."
root=$PWD
mdir="${MEGATRON_DIR:-$root/.megatron}"
out="${OUT:-/tmp/megatron-out}"
par="${1:-4}"
only="${2:-.}"
logs="$out/megatron-lm-h200"
mkdir -p "$logs"
export PYTHONUNBUFFERED=1 CUDA_DEVICE_MAX_CONNECTIONS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$logs/gpu.txt"
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' | tee -a "$logs/gpu.txt"
make -C "$mdir/megatron/core/datasets" >/dev/null 2>&1 || echo "datasets helpers: make failed (Megatron compiles them at start)"

common=(--mock-data --tokenizer-type NullTokenizer --vocab-size 32000 --transformer-impl local
  --no-persist-layer-norm --no-masked-softmax-fusion --no-bias-dropout-fusion
  --no-gradient-accumulation-fusion --no-rope-fusion --log-interval 1 --log-memory-interval 1
  --train-iters 6 --lr 1e-4 --min-lr 1e-5 --lr-decay-style constant --bf16
  --eval-iters 0 --eval-interval 100000 --seed 1234 --log-throughput)
# Dense GPT with Megatron-LM's own defaults (learned absolute positions, biases, tied embeddings,
# dropout 0.1, softmax in bf16).
dense=(--num-layers 8 --hidden-size 2048 --num-attention-heads 16 --seq-length 4096
  --max-position-embeddings 4096 --micro-batch-size 1 --global-batch-size 4)
# Llama-like: GQA, SwiGLU, RMSNorm, RoPE, no biases, untied, no dropout.
llama=(--num-layers 8 --hidden-size 2048 --num-attention-heads 16 --group-query-attention
  --num-query-groups 4 --ffn-hidden-size 5632 --swiglu --normalization RMSNorm
  --position-embedding-type rope --disable-bias-linear --untie-embeddings-and-output-weights
  --attention-dropout 0 --hidden-dropout 0 --seq-length 4096 --max-position-embeddings 4096
  --micro-batch-size 1 --global-batch-size 4)
# MoE: 8 experts top-2 with a shared expert, SequentialMLP (no grouped GEMM without TE), alltoall.
moe=(--num-layers 4 --hidden-size 2048 --num-attention-heads 16 --group-query-attention
  --num-query-groups 4 --num-experts 8 --moe-router-topk 2 --moe-ffn-hidden-size 2816
  --moe-shared-expert-intermediate-size 2816 --moe-token-dispatcher-type alltoall
  --moe-aux-loss-coeff 1e-2 --swiglu --normalization RMSNorm --position-embedding-type rope
  --disable-bias-linear --untie-embeddings-and-output-weights --attention-dropout 0 --hidden-dropout 0
  --seq-length 4096 --max-position-embeddings 4096 --micro-batch-size 1 --global-batch-size 4)
sel=(--recompute-granularity selective)
declare -A runs=(
  [dense-none]="${dense[*]}"
  [dense-core_attn]="${dense[*]} ${sel[*]}"
  [dense-mlp]="${dense[*]} ${sel[*]} --recompute-modules mlp"
  [dense-core_attn-mlp]="${dense[*]} ${sel[*]} --recompute-modules core_attn mlp"
  [dense-full-uniform-1]="${dense[*]} --recompute-granularity full --recompute-method uniform --recompute-num-layers 1"
  [dense-full-block-4]="${dense[*]} --recompute-granularity full --recompute-method block --recompute-num-layers 4"
  [dense-none-softmax-fp32]="${dense[*]} --attention-softmax-in-fp32"
  [dense-none-distopt]="${dense[*]} --use-distributed-optimizer"
  [dense-none-mbs2]="${dense[*]} --micro-batch-size 2"
  [llama-none]="${llama[*]}"
  [llama-core_attn]="${llama[*]} ${sel[*]}"
  [llama-mlp]="${llama[*]} ${sel[*]} --recompute-modules mlp"
  [llama-full-uniform-1]="${llama[*]} --recompute-granularity full --recompute-method uniform --recompute-num-layers 1"
  [llama-none-distopt]="${llama[*]} --use-distributed-optimizer"
  [moe-none]="${moe[*]}"
  [moe-moe]="${moe[*]} ${sel[*]} --recompute-modules moe"
  [moe-shared_experts]="${moe[*]} ${sel[*]} --recompute-modules shared_experts"
  [moe-core_attn]="${moe[*]} ${sel[*]}"
  [moe-full-uniform-1]="${moe[*]} --recompute-granularity full --recompute-method uniform --recompute-num-layers 1"
)
run_one() {
  local name=$1 log="$logs/$1.log"
  local cmd=(torchrun --standalone --nproc-per-node 1 pretrain_gpt.py "${common[@]}" ${runs[$name]})
  { echo "# command: ${cmd[*]}"; echo "# megatron-lm: d98e8a64 (profile main); GPU: $(head -1 "$logs/gpu.txt")"; } > "$log"
  (cd "$mdir" && timeout 420 "${cmd[@]}") >> "$log" 2>&1
  echo "# exit: $?" >> "$log"
}
names=$(printf '%s\n' "${!runs[@]}" | grep -E "$only" | sort)
start=$(date +%s)
for n in $names; do
  while [ "$(jobs -rp | wc -l)" -ge "$par" ]; do sleep 1; done
  run_one "$n" &
  sleep 2
done
wait
echo "all runs: $(( $(date +%s) - start )) s"
for n in $names; do
  f="$logs/$n.log"
  peak=$(grep -o 'max allocated: [0-9.]*' "$f" | awk '{print $3}' | sort -g | tail -1)
  printf '%-26s exit=%-4s max_allocated_MB=%-10s %s\n' "$n" "$(grep -o '# exit: [0-9]*' "$f" | awk '{print $3}')" "${peak:-?}" \
    "$(grep -m1 -E 'Error|error:' "$f" | cut -c1-100)"
done
tar -C "$out" -czf "$out/logs.tar.gz" megatron-lm-h200 && rm -rf "$logs"
