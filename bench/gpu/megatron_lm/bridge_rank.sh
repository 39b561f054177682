#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Real Megatron-LM with Transformer Engine on one H200, as ground truth for two jobs of issue 26:
#  - moonlight-*: the guide's Moonlight study as it ran (Bridge's moonlight_16b_pretrain_8gpu_h100_bf16_config:
#    TP 2 with SP, EP 8, expert-TP 1, 8 GPUs so DP 4; bf16 with a bf16 gradient buffer; the precision-aware
#    distributed optimizer with bf16 moments; seq 4096, MBS 1, GBS 4), written as Megatron-LM flags, run as
#    rank 0 of its 8-GPU layout with --fake-process-group (real tensors, collectives skipped), one run per
#    module set of the guide's table;
#  - fp16-*: --fp16 on a dense and an MoE stack, without and with recompute (how Megatron-LM keeps an fp16
#    job's gradients, main parameters and loss scaler).
# Megatron-LM (d98e8a64: megatron/, pretrain_gpt.py, gpt_builders.py, model_provider.py) sits in MEGATRON_DIR
# (default .deps/mlm), Transformer Engine 2.17.1 in .deps/te (../shared/gpu-host/transformer-engine). Each
# log starts with its command line; all go to $OUT/bridge-rank.
# moonlight-sym-*: the same runs with shim-symmetric-ranks on PYTHONPATH: the collectives the fake process
# group skips fill their outputs as if every rank held this rank's tensors, so the alltoall dispatcher sizes
# what it receives from this rank's own routing counts (not from uninitialized memory, as moonlight-*).
# RUN_TIMEOUT: seconds a run may take (480; a rank that fails under the fake process group can hang).
# Usage: bench/gpu/megatron_lm/bridge_rank.sh [PARALLEL] [NAME_REGEX]
set -uo pipefail
cd "$(dirname "$0")/../../.."
root=$PWD
mdir="${MEGATRON_DIR:-$root/.deps/mlm}"
out="${OUT:-/tmp/megatron-out}"
par="${1:-3}"
only="${2:-.}"
logs="$out/bridge-rank"
mkdir -p "$logs"
tar -C /tmp -xJf .deps/te/te-site-*.tar.xz
export PYTHONPATH=/tmp/te-site:$root/.deps/te/shim
export PYTHONUNBUFFERED=1 CUDA_DEVICE_MAX_CONNECTIONS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$logs/gpu.txt"
python3 -c 'import torch, transformer_engine; print("torch", torch.__version__, "cuda", torch.version.cuda, "te", transformer_engine.__version__)' | tee -a "$logs/gpu.txt"

common=(--mock-data --tokenizer-type NullTokenizer --no-persist-layer-norm --no-masked-softmax-fusion
  --no-gradient-accumulation-fusion --log-interval 1 --log-memory-interval 1 --train-iters 6 --lr 3e-4
  --min-lr 3e-5 --lr-decay-style constant --eval-iters 0 --eval-interval 100000 --seed 1234 --log-throughput)
# Bridge 067f987d's MoonlightModelProvider fields with the recipe's settings (resources/bridge/recipes-067f987d.json).
moonlight=(--num-layers 27 --hidden-size 2048 --ffn-hidden-size 11264 --num-attention-heads 16
  --multi-latent-attention --kv-lora-rank 512 --qk-head-dim 128 --qk-pos-emb-head-dim 64 --v-head-dim 128
  --qk-layernorm --num-experts 64 --moe-router-topk 6 --moe-ffn-hidden-size 1408
  --moe-shared-expert-intermediate-size 2816 --moe-shared-expert-overlap --moe-layer-freq "([0]+[1]*26)"
  --moe-grouped-gemm --moe-token-dispatcher-type alltoall --moe-router-load-balancing-type seq_aux_loss
  --moe-aux-loss-coeff 1e-3 --moe-router-score-function sigmoid --moe-router-enable-expert-bias
  --moe-router-topk-scaling-factor 2.446 --moe-router-pre-softmax --moe-router-dtype fp32 --swiglu
  --normalization RMSNorm --disable-bias-linear --position-embedding-type rope --rotary-base 50000
  --untie-embeddings-and-output-weights --attention-dropout 0 --hidden-dropout 0
  --tensor-model-parallel-size 2 --sequence-parallel --expert-model-parallel-size 8
  --expert-tensor-parallel-size 1 --seq-length 4096 --max-position-embeddings 4096 --micro-batch-size 1
  --global-batch-size 4 --bf16 --use-distributed-optimizer --use-precision-aware-optimizer
  --main-grads-dtype bf16 --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16 --vocab-size 163840
  --make-vocab-size-divisible-by 1280 --fake-process-group)
# fp16: the fixtures' dense GPT at 4 layers, and their MoE stack (TE grouped GEMM).
dense16=(--num-layers 4 --hidden-size 2048 --num-attention-heads 16 --seq-length 4096
  --max-position-embeddings 4096 --micro-batch-size 1 --global-batch-size 4 --vocab-size 32000 --fp16)
moe16=(--num-layers 4 --hidden-size 2048 --num-attention-heads 16 --group-query-attention
  --num-query-groups 4 --num-experts 8 --moe-router-topk 2 --moe-ffn-hidden-size 2816 --moe-grouped-gemm
  --moe-token-dispatcher-type alltoall --moe-aux-loss-coeff 1e-2 --swiglu --normalization RMSNorm
  --position-embedding-type rope --disable-bias-linear --untie-embeddings-and-output-weights
  --attention-dropout 0 --hidden-dropout 0 --seq-length 4096 --max-position-embeddings 4096
  --micro-batch-size 1 --global-batch-size 4 --vocab-size 32000 --fp16)
sel=(--recompute-granularity selective --recompute-modules)
declare -A runs=(
  [moonlight-none]="${moonlight[*]}"
  [moonlight-core_attn]="${moonlight[*]} ${sel[*]} core_attn"
  [moonlight-mla_up_proj]="${moonlight[*]} ${sel[*]} mla_up_proj"
  [moonlight-mla_up_proj-mlp]="${moonlight[*]} ${sel[*]} mla_up_proj mlp"
  [moonlight-moe_act]="${moonlight[*]} ${sel[*]} moe_act"
  [moonlight-layernorm-moe_act]="${moonlight[*]} ${sel[*]} layernorm moe_act"
  [fp16-dense-none]="${dense16[*]}"
  [fp16-dense-core_attn]="${dense16[*]} ${sel[*]} core_attn"
  [fp16-moe-none]="${moe16[*]}"
  [fp16-moe-moe_act]="${moe16[*]} ${sel[*]} moe_act"
)
for n in moonlight-none moonlight-core_attn moonlight-mla_up_proj moonlight-mla_up_proj-mlp moonlight-moe_act \
  moonlight-layernorm-moe_act; do
  runs[moonlight-sym-${n#moonlight-}]=${runs[$n]}
done
run_one() {
  local name=$1 log="$logs/$1.log"
  local -a env_=(RANK=0 LOCAL_RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$((29500 + RANDOM % 1000)))
  case $name in moonlight-*) env_[2]=WORLD_SIZE=8 ;; esac
  case $name in moonlight-sym-*) env_+=(PYTHONPATH="$root/bench/gpu/megatron_lm/shim-symmetric-ranks:$PYTHONPATH") ;; esac
  local cmd=(python3 pretrain_gpt.py "${common[@]}" ${runs[$name]})
  { echo "# command: ${env_[*]} ${cmd[*]}"; echo "# megatron-lm: d98e8a64 (profile main); TE 2.17.1; GPU: $(head -1 "$logs/gpu.txt")"; } > "$log"
  case $name in moonlight-sym-*) echo "# shim: bench/gpu/megatron_lm/shim-symmetric-ranks (the skipped collectives' outputs filled as if every rank held this rank's tensors)" >> "$log" ;; esac
  (cd "$mdir" && env "${env_[@]}" timeout "${RUN_TIMEOUT:-480}" "${cmd[@]}") >> "$log" 2>&1
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
  printf '%-30s %s | %s\n' "$n" "$(grep -a 'max allocated' "$logs/$n.log" | tail -1 | grep -o 'max allocated: [0-9.]*')" \
    "$(grep -a -E 'elapsed time per iteration' "$logs/$n.log" | tail -1 | grep -o 'elapsed time per iteration (ms): [0-9.]*')"
  grep -a -E 'Error|error:' "$logs/$n.log" | tail -2
done
tar -C "$out" -czf "$out/bridge-rank.tar.gz" bridge-rank
