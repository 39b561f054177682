#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Real Megatron-LM (d98e8a64, Transformer Engine 2.17.1) beside the worker on one H200, run by run, for
# the memory of one rank of a job:
#  - layout-*: one rank of a TP/SP/PP/VPP/CP layout with --fake-process-group (issue 28: real tensors and the
#    real allocator, collectives skipped), RANK / WORLD_SIZE as the job's launcher would set them; the worker
#    runs the same Megatron-LM line with --rank-of-layout of the same rank;
#  - fp16-*: --fp16 with a dynamic loss scaler that starts at 4096 (issue 26: Megatron-LM's default 2^32
#    skips every step of a short run, so its moments never exist), a dense and an MoE stack, with and
#    without recompute;
#  - fp8-*: FP8 with TE (issue 28): a dense and an MoE stack, bf16 beside, --fp8-format hybrid with delayed
#    and tensorwise (current) scaling, with and without recompute, and --fp8-param-gather;
#  - cg-*: TE's and Megatron's own CUDA graphs (--cuda-graph-impl transformer_engine / local) on bf16;
#  - mtp-*: multi-token prediction (issue 26): the bf16 dense8 stack under TE with one MTP depth
#    (--mtp-num-layers 1), with and without core_attn, beside the same lines without it (mtp-off-*;
#    mtp-off-dense-none is fp8-dense-bf16-none's line again), so that `NO_WORKER=1 real_ranks.sh '^mtp-'`
#    measures what MTP adds in one call (the worker builds no MTP layer and refuses the mtp-dense-* lines);
#  - time-*: step time per recompute choice (issue 31), 16 iterations each (TIME_ITERS): run them with JOBS=0 (one real run
#    at a time, alone on the GPU) and NO_WORKER=1: a Llama-like stack, the MoE stack, and Moonlight's layer
#    kinds (MLA + 64 experts, top-6, shared expert, first layer dense) at 4 layers; time-big-*: the Llama-like
#    layer at its full width (hidden 4096, FFN 14336), 4 layers, where the GPU's work and not the host sets the
#    step (time-big8k-*: at seq 8192); time-dlocal-*: the H200 job sweep's dense local-spec job, every
#    choice the plan weighs at a 12-17 GB target (issue 31: the plan's choice against a measured sweep's);
#  - llocal-*: the H200 fixtures' Llama-like local-spec job (unfused attention and RoPE, no dropout), for
#    SNAPSHOT=1 (issue 28: its core_attn estimate reads -4.3 %); time-llocal-*: the same timed alone, 16
#    iterations (the step-time model on a second local shape);
#  - qkln-*: qk_layernorm (issue 26: Qwen3, GLM-4.5): the dense8 and moe8 stacks with --qk-layernorm, beside
#    mtp-off-* and fp8-*-bf16-* (the same lines without it); the worker has no norms on the heads and refuses them;
#  - lora-*: Megatron Bridge's LoRA (issue 26) on the dense and MoE stacks, through pretrain_gpt_lora.py
#    (Bridge's peft/ at 067f987d laid out by scripts/fetch_bridge_peft.sh): a first flag LORA=TARGETS:DIM
#    (TARGETS comma-separated) selects it; the worker has no PEFT and skips these rows.
# Every run is one line of RUNS below: NAME WORLD RANK FLAGS... (FLAGS after pretrain_gpt.py). Real runs go
# JOBS at a time (memory is per process: the allocator's own counters); the worker's runs one at a time
# beside them. Logs: $OUT/real-ranks/NAME.log (first line: the command) and NAME.jsonl (the worker's stream).
# Needs Megatron-LM in MEGATRON_DIR (default .deps/mlm: megatron/, pretrain_gpt.py, gpt_builders.py,
# model_provider.py) and TE in .deps/te (../shared/gpu-host/transformer-engine/README.md).
# Usage: [NO_WORKER=1] [SNAPSHOT=1] [PROFILE=STEP] [REAL_RE=REGEX] [REBUILD=1] bench/gpu/megatron_lm/real_ranks.sh [NAME_REGEX]
#   SNAPSHOT=1: real runs of 3 iterations with the allocator's history, summarised by snapshot_peak.py
#   (NAME.peak.txt: what is live at the peak, by the Megatron line that allocated it); REAL_RE: real
#   Megatron-LM only for the runs it matches (the worker runs every selected one); NO_WORKER=1: real runs only;
#   PROFILE=STEP: the PyTorch profiler over steps STEP and STEP+1 of each real run, read by trace_busy.py
#   (NAME.busy.txt: each step's wall time, the time the GPU was busy, GPU time by kernel).
set -uo pipefail
cd "$(dirname "$0")/../../.."
root=$PWD
OUT=${OUT:-$root/out/real_ranks}
mdir="${MEGATRON_DIR:-$root/.deps/mlm}"
only="${1:-.}"
jobs="${JOBS:-4}"
logs="$OUT/real-ranks"
mkdir -p "$logs"
. bench/gpu/common.sh
tar -C /tmp -xJf .deps/te/te-site-*.tar.xz
export PYTHONPATH=/tmp/te-site:$root/.deps/te/shim
export PYTHONUNBUFFERED=1 CUDA_DEVICE_MAX_CONNECTIONS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$logs/gpu.txt"
# Megatron's dataset helpers are compiled by rank 0 at start (initialize.py): a run of another rank alone
# finds none, so build them first.
make -C "$mdir/megatron/core/datasets" >"$logs/helpers.txt" 2>&1 || tail -5 "$logs/helpers.txt"
BIN=build/gpu/app/bench/recompute-bench
if [ -z "${NO_WORKER:-}" ] && { [ ! -x "$BIN" ] || [ -n "${REBUILD:-}" ]; }; then
  log "configure + build"
  build_worker recompute-bench
  log "built"
fi

common="--mock-data --tokenizer-type NullTokenizer --vocab-size 32000 --no-persist-layer-norm
  --no-masked-softmax-fusion --no-gradient-accumulation-fusion --log-interval 1 --log-memory-interval 1
  --train-iters 8 --lr 1e-4 --min-lr 1e-5 --lr-decay-style constant --eval-iters 0 --eval-interval 100000
  --seed 1234 --log-throughput"
# Llama-like GQA + SwiGLU + RMSNorm, bf16, the distributed optimizer (Megatron-LM turns grad_reduce_in_fp32 on).
llama="--bf16 --use-distributed-optimizer --hidden-size 4096 --num-attention-heads 32 --group-query-attention
  --num-query-groups 8 --ffn-hidden-size 14336 --swiglu --normalization RMSNorm --position-embedding-type rope
  --disable-bias-linear --untie-embeddings-and-output-weights --attention-dropout 0 --hidden-dropout 0
  --micro-batch-size 1 --fake-process-group"
tp2pp2="$llama --seq-length 4096 --max-position-embeddings 4096 --num-layers 8 --global-batch-size 8
  --tensor-model-parallel-size 2 --sequence-parallel --pipeline-model-parallel-size 2"
tp4pp4v2="$llama --seq-length 4096 --max-position-embeddings 4096 --num-layers 16 --global-batch-size 8
  --tensor-model-parallel-size 4 --sequence-parallel --pipeline-model-parallel-size 4
  --num-layers-per-virtual-pipeline-stage 2"
cp2="$llama --seq-length 8192 --max-position-embeddings 8192 --num-layers 4 --global-batch-size 2
  --context-parallel-size 2"
dense16="--fp16 --initial-loss-scale 4096 --num-layers 4 --hidden-size 2048 --num-attention-heads 16
  --seq-length 4096 --max-position-embeddings 4096 --micro-batch-size 1 --global-batch-size 4"
moe16="--fp16 --initial-loss-scale 4096 --num-layers 4 --hidden-size 2048 --num-attention-heads 16
  --group-query-attention --num-query-groups 4 --num-experts 8 --moe-router-topk 2 --moe-ffn-hidden-size 2816
  --moe-grouped-gemm --moe-token-dispatcher-type alltoall --moe-aux-loss-coeff 1e-2 --swiglu
  --normalization RMSNorm --position-embedding-type rope --disable-bias-linear
  --untie-embeddings-and-output-weights --attention-dropout 0 --hidden-dropout 0 --seq-length 4096
  --max-position-embeddings 4096 --micro-batch-size 1 --global-batch-size 4"
# FP8 and CUDA graphs: the same shapes smaller (five runs share the GPU), in bf16, four micro-batches a step
# (TE keeps its fp8 weight copies across the micro-batches of a step).
dense8="--bf16 --num-layers 4 --hidden-size 2048 --num-attention-heads 16 --group-query-attention
  --num-query-groups 4 --ffn-hidden-size 7168 --swiglu --normalization RMSNorm --position-embedding-type rope
  --disable-bias-linear --untie-embeddings-and-output-weights --attention-dropout 0 --hidden-dropout 0
  --seq-length 4096 --max-position-embeddings 4096 --micro-batch-size 1 --global-batch-size 4"
moe8="${moe16/--fp16 --initial-loss-scale 4096/--bf16}"
llama8="${dense8/--num-layers 4/--num-layers 8}"
llama8="${llama8/--ffn-hidden-size 7168/--ffn-hidden-size 5632}"
# The dense local-spec job of the H200 job sweep (bench/gpu/results/h200-2026-12-01-job-sweep): unfused
# attention with dropout, GPU-bound and steady.
dlocal="--num-layers 8 --hidden-size 2048 --num-attention-heads 16 --seq-length 4096 --micro-batch-size 1
  --global-batch-size 4 --max-position-embeddings 4096 --bf16 --attention-backend unfused --transformer-impl local
  --no-bias-dropout-fusion --no-rope-fusion"
# The H200 fixtures' Llama-like local-spec job (tests/fixtures/logs/megatron-lm-h200/llama-*.log).
llocal="--transformer-impl local --no-bias-dropout-fusion --no-rope-fusion --bf16 --num-layers 8 --hidden-size 2048
  --num-attention-heads 16 --group-query-attention --num-query-groups 4 --ffn-hidden-size 5632 --swiglu
  --normalization RMSNorm --position-embedding-type rope --disable-bias-linear --untie-embeddings-and-output-weights
  --attention-dropout 0 --hidden-dropout 0 --seq-length 4096 --max-position-embeddings 4096 --micro-batch-size 1
  --global-batch-size 4"
big4="${dense8/--hidden-size 2048 --num-attention-heads 16/--hidden-size 4096 --num-attention-heads 32}"
big4="${big4/--num-query-groups 4 --ffn-hidden-size 7168/--num-query-groups 8 --ffn-hidden-size 14336}"
# The same at seq 8192 with two micro-batches a step: attention's share of the step doubles.
big8k="${big4/--seq-length 4096 --max-position-embeddings 4096/--seq-length 8192 --max-position-embeddings 8192}"
big8k="${big8k/--global-batch-size 4/--global-batch-size 2}"
# Moonlight's layer kinds (Bridge's MoonlightModelProvider, as bridge_rank.sh) at 4 layers on one GPU.
moon4="--bf16 --num-layers 4 --hidden-size 2048 --ffn-hidden-size 11264 --num-attention-heads 16
  --multi-latent-attention --kv-lora-rank 512 --qk-head-dim 128 --qk-pos-emb-head-dim 64 --v-head-dim 128
  --qk-layernorm --num-experts 64 --moe-router-topk 6 --moe-ffn-hidden-size 1408
  --moe-shared-expert-intermediate-size 2816 --moe-layer-freq ([0]+[1]*3) --moe-grouped-gemm
  --moe-token-dispatcher-type alltoall --moe-router-load-balancing-type seq_aux_loss --moe-aux-loss-coeff 1e-3
  --moe-router-score-function sigmoid --moe-router-enable-expert-bias --moe-router-topk-scaling-factor 2.446
  --moe-router-pre-softmax --moe-router-dtype fp32 --swiglu --normalization RMSNorm --disable-bias-linear
  --position-embedding-type rope --rotary-base 50000 --untie-embeddings-and-output-weights --attention-dropout 0
  --hidden-dropout 0 --seq-length 4096 --max-position-embeddings 4096 --micro-batch-size 1 --global-batch-size 4"
# EP 8: the MoE stack with 32 experts over 8 expert ranks (4 local, TE grouped GEMM), one micro-batch a
# step, rank 0 of 8 with the fake process group and shim-symmetric-ranks (runs named *-sym): the dispatcher's
# counts from this rank's own routing, not from the skipped gather's uninitialized output.
moe8ep="${moe8/--num-experts 8 --moe-router-topk 2/--num-experts 32 --moe-router-topk 4}
  --expert-model-parallel-size 8 --use-distributed-optimizer --fake-process-group"
moe8ep="${moe8ep/--global-batch-size 4/--global-batch-size 8}"
# One line each (a run is one line of RUNS).
# shellcheck disable=SC2086,SC2116
for v in common llama tp2pp2 tp4pp4v2 cp2 dense16 moe16 dense8 moe8 moe8ep llama8 big4 big8k dlocal llocal moon4; do printf -v "$v" '%s' "$(echo ${!v})"; done
mlp="--recompute-granularity selective --recompute-modules mlp"
full="--recompute-granularity full --recompute-method uniform --recompute-num-layers 1"
delayed="--fp8-format hybrid --fp8-recipe delayed"
current="--fp8-format hybrid --fp8-recipe tensorwise"
sel="--recompute-granularity selective --recompute-modules"
t16="--train-iters ${TIME_ITERS:-16}" # TIME_ITERS: longer runs for a tighter median
# NAME WORLD RANK FLAGS (the hottest rank of each layout is its first stage's first rank, rank 0, by the
# estimate; tp2sp-pp2 also runs its last stage's first rank, 2)
RUNS=$(cat <<EOF
layout-tp2sp-pp2-none 4 0 $tp2pp2
layout-tp2sp-pp2-mlp 4 0 $tp2pp2 $mlp
layout-tp2sp-pp2-full 4 0 $tp2pp2 $full
layout-tp2sp-pp2-none-rank2 4 2 $tp2pp2
layout-tp4sp-pp4-vpp2-none 16 0 $tp4pp4v2
layout-tp4sp-pp4-vpp2-mlp 16 0 $tp4pp4v2 $mlp
layout-tp4sp-pp4-vpp2-full 16 0 $tp4pp4v2 $full
layout-cp2-none 2 0 $cp2
layout-cp2-mlp 2 0 $cp2 $mlp
layout-cp2-full 2 0 $cp2 $full
layout-ep8-sym-none 8 0 $moe8ep
layout-ep8-sym-moe_act 8 0 $moe8ep $sel moe_act
layout-ep8-sym-full 8 0 $moe8ep $full
layout-ep8-none 8 0 $moe8ep
fp16-dense-none 1 0 $dense16
fp16-dense-core_attn 1 0 $dense16 --recompute-granularity selective --recompute-modules core_attn
fp16-moe-none 1 0 $moe16
fp16-moe-moe_act 1 0 $moe16 --recompute-granularity selective --recompute-modules moe_act
fp8-dense-bf16-none 1 0 $dense8
fp8-dense-delayed-none 1 0 $dense8 $delayed
fp8-dense-delayed-mlp 1 0 $dense8 $delayed $mlp
fp8-dense-delayed-full 1 0 $dense8 $delayed $full
fp8-dense-tensorwise-none 1 0 $dense8 $current
fp8-dense-tensorwise-mlp 1 0 $dense8 $current $mlp
fp8-dense-tensorwise-layernorm 1 0 $dense8 $current --recompute-granularity selective --recompute-modules layernorm
fp8-dense-tensorwise-full 1 0 $dense8 $current $full
fp8-dense-tensorwise-paramgather 1 0 $dense8 $current --use-distributed-optimizer --fp8-param-gather
fp8-moe-bf16-none 1 0 $moe8
fp8-moe-delayed-none 1 0 $moe8 $delayed
fp8-moe-delayed-moe_act 1 0 $moe8 $delayed --recompute-granularity selective --recompute-modules moe_act
fp8-moe-tensorwise-none 1 0 $moe8 $current
fp8-moe-tensorwise-moe_act 1 0 $moe8 $current --recompute-granularity selective --recompute-modules moe_act
fp8-moe-tensorwise-layernorm-moe_act 1 0 $moe8 $current --recompute-granularity selective --recompute-modules layernorm moe_act
cg-dense-te-none 1 0 $dense8 --cuda-graph-impl transformer_engine --te-rng-tracker
cg-dense-local-none 1 0 $dense8 --cuda-graph-impl local --te-rng-tracker
cg-moe-te-attn 1 0 $moe8 --cuda-graph-impl transformer_engine --cuda-graph-modules attn --te-rng-tracker
mtp-off-dense-none 1 0 $dense8
mtp-off-dense-core_attn 1 0 $dense8 $sel core_attn
mtp-dense-none 1 0 $dense8 --mtp-num-layers 1
mtp-dense-core_attn 1 0 $dense8 --mtp-num-layers 1 $sel core_attn
qkln-dense-none 1 0 $dense8 --qk-layernorm
qkln-dense-core_attn 1 0 $dense8 --qk-layernorm $sel core_attn
qkln-moe-moe_act 1 0 $moe8 --qk-layernorm $sel moe_act
time-llama-none 1 0 $llama8 $t16
time-llama-core_attn 1 0 $llama8 $t16 $sel core_attn
time-llama-mlp 1 0 $llama8 $t16 $mlp
time-llama-full 1 0 $llama8 $t16 $full
time-dlocal-none 1 0 $dlocal $t16
time-dlocal-core_attn 1 0 $dlocal $t16 $sel core_attn
time-dlocal-full 1 0 $dlocal $t16 $full
time-dlocal-full-block-4 1 0 $dlocal $t16 --recompute-granularity full --recompute-method block --recompute-num-layers 4
time-dlocal-core_attn-mlp 1 0 $dlocal $t16 $sel core_attn mlp
time-dlocal-core_attn-layernorm 1 0 $dlocal $t16 $sel core_attn layernorm
time-dlocal-full-block-6 1 0 $dlocal $t16 --recompute-granularity full --recompute-method block --recompute-num-layers 6
time-dlocal-full-block-7 1 0 $dlocal $t16 --recompute-granularity full --recompute-method block --recompute-num-layers 7
time-dlocal-mlp 1 0 $dlocal $t16 $sel mlp
time-dlocal-core_attn-mlp-te 1 0 ${dlocal/--attention-backend unfused --transformer-impl local/} $t16 $sel core_attn mlp
time-dlocal-full-block-3 1 0 $dlocal $t16 --recompute-granularity full --recompute-method block --recompute-num-layers 3
time-dlocal-full-block-5 1 0 $dlocal $t16 --recompute-granularity full --recompute-method block --recompute-num-layers 5
time-dlocal-full-block-8 1 0 $dlocal $t16 --recompute-granularity full --recompute-method block --recompute-num-layers 8
time-dlocal-full-uniform-2 1 0 $dlocal $t16 --recompute-granularity full --recompute-method uniform --recompute-num-layers 2
time-dlocal-full-uniform-4 1 0 $dlocal $t16 --recompute-granularity full --recompute-method uniform --recompute-num-layers 4
time-dlocal-nobias-none 1 0 $dlocal $t16 --disable-bias-linear
time-dlocal-nobias-mlp 1 0 $dlocal $t16 --disable-bias-linear $sel mlp
llocal-none 1 0 $llocal
llocal-core_attn 1 0 $llocal $sel core_attn
llocal-full 1 0 $llocal $full
time-llocal-none 1 0 $llocal $t16
time-llocal-core_attn 1 0 $llocal $t16 $sel core_attn
time-llocal-full 1 0 $llocal $t16 $full
time-big-none 1 0 $big4 $t16
time-big-core_attn 1 0 $big4 $t16 $sel core_attn
time-big-mlp 1 0 $big4 $t16 $mlp
time-big-full 1 0 $big4 $t16 $full
time-big8k-none 1 0 $big8k $t16
time-big8k-core_attn 1 0 $big8k $t16 $sel core_attn
time-big8k-mlp 1 0 $big8k $t16 $mlp
time-big8k-full 1 0 $big8k $t16 $full
time-moe-none 1 0 $moe8 $t16
time-moe-moe_act 1 0 $moe8 $t16 $sel moe_act
time-moe-layernorm-moe_act 1 0 $moe8 $t16 $sel layernorm moe_act
time-moon-none 1 0 $moon4 $t16
time-moon-core_attn 1 0 $moon4 $t16 $sel core_attn
time-moon-mla_up_proj 1 0 $moon4 $t16 $sel mla_up_proj
time-moon-mla_up_proj-mlp 1 0 $moon4 $t16 $sel mla_up_proj mlp
time-moon-moe_act 1 0 $moon4 $t16 $sel moe_act
time-moon-layernorm-moe_act 1 0 $moon4 $t16 $sel layernorm moe_act
lora-dense-base 1 0 $dense8
lora-dense-all-r32 1 0 LORA=linear_qkv,linear_proj,linear_fc1,linear_fc2:32 $dense8
lora-dense-qkv-r16 1 0 LORA=linear_qkv:16 $dense8
lora-dense-all-r32-core_attn 1 0 LORA=linear_qkv,linear_proj,linear_fc1,linear_fc2:32 $dense8 $sel core_attn
lora-dense-all-r32-mlp 1 0 LORA=linear_qkv,linear_proj,linear_fc1,linear_fc2:32 $dense8 $mlp
lora-dense-all-r32-distopt 1 0 LORA=linear_qkv,linear_proj,linear_fc1,linear_fc2:32 $dense8 --use-distributed-optimizer
lora-moe-base 1 0 $moe8
lora-moe-attn-r8 1 0 LORA=linear_qkv,linear_proj:8 $moe8
lora-moe-all-r8 1 0 LORA=linear_qkv,linear_proj,linear_fc1,linear_fc2:8 $moe8
lora-moe-all-r8-moe_act 1 0 LORA=linear_qkv,linear_proj,linear_fc1,linear_fc2:8 $moe8 $sel moe_act
EOF
)
RUNS=$(printf '%s\n' "$RUNS" | awk -v re="$only" '$1 ~ re')

real_one() { # NAME WORLD RANK FLAGS...
  local name=$1 world=$2 rank=$3
  shift 3
  local log="$logs/$name.log"
  local -a env_=(RANK=$rank LOCAL_RANK=0 WORLD_SIZE=$world MASTER_ADDR=127.0.0.1 MASTER_PORT=$((29500 + RANDOM % 1000)))
  local script=pretrain_gpt.py
  [[ $name == *-sym-* ]] && env_+=(PYTHONPATH="$root/bench/gpu/megatron_lm/shim-symmetric-ranks:$PYTHONPATH")
  if [[ $1 == LORA=* ]]; then # Bridge's LoRA on the job (pretrain_gpt_lora.py)
    local spec=${1#LORA=}
    env_+=(LORA_TARGETS=${spec%%:*} LORA_DIM=${spec##*:})
    script=$root/bench/gpu/megatron_lm/pretrain_gpt_lora.py
    shift
  fi
  {
    echo "# command: ${env_[*]} python3 $(basename "$script") $common $*"
    echo "# megatron-lm: d98e8a64 (profile main); TE 2.17.1; GPU: $(head -1 "$logs/gpu.txt")"
    [[ $name == *-sym-* ]] && echo "# shim: bench/gpu/megatron_lm/shim-symmetric-ranks (the skipped collectives' outputs filled as if every rank held this rank's tensors)"
  } >"$log"
  # Megatron-LM d98e8a64 + TE 2.17.1 cannot build a delayed-scaling recipe (shim-te-compat/sitecustomize.py)
  [[ " $* " == *" --fp8-recipe delayed "* ]] && {
    env_+=(PYTHONPATH="$root/bench/gpu/megatron_lm/shim-te-compat:$PYTHONPATH")
    echo "# shim: bench/gpu/megatron_lm/shim-te-compat (TE 2.17 DelayedScaling without override_linear_precision)" >>"$log"
  }
  local -a snap=()
  # SNAPSHOT=1: the allocator's history, and what is live at the peak by the Megatron line that allocated it
  [ -n "${SNAPSHOT:-}" ] && snap=(--train-iters 3 --record-memory-history --memory-snapshot-path "/tmp/snap-$name.pickle")
  [ -n "${PROFILE:-}" ] && snap+=(--profile --use-pytorch-profiler --profile-step-start "$PROFILE"
    --profile-step-end $((PROFILE + 2)) --tensorboard-dir "/tmp/tb-$name/tb")
  # PROFILE_STACK=1: Python stacks in the trace, for the idle gaps by place (trace_busy.py --gaps);
  # PROFILE_OPS=1: the GPU time by the torch operator that launched it (trace_busy.py --ops)
  [ -n "${PROFILE:-}" ] && [ -n "${PROFILE_STACK:-}" ] && snap+=(--pytorch-profiler-collect-callstack)
  # shellcheck disable=SC2086 # flag lines split on whitespace, as a shell line does
  (cd "$mdir" && env "${env_[@]}" timeout "${RUN_TIMEOUT:-420}" python3 "$script" $common "$@" "${snap[@]}") >>"$log" 2>&1
  echo "# exit: $?" >>"$log"
  if [ -n "${SNAPSHOT:-}" ]; then
    # The exact name: a prefix glob would also take (and delete) the snapshot of a run whose name extends
    # this one's (lora-dense-all-r32 and lora-dense-all-r32-core_attn run side by side).
    python3 "$root/bench/gpu/megatron_lm/snapshot_peak.py" /tmp/snap-"$name"_"$rank".pickle --top 40 \
      >"$logs/$name.peak.txt" 2>&1
    rm -f /tmp/snap-"$name"_"$rank".pickle
  fi
  if [ -n "${PROFILE:-}" ]; then
    python3 "$root/bench/gpu/megatron_lm/trace_busy.py" /tmp/tb-"$name"/torch_profile/rank-*.json.gz --top 25 \
      ${PROFILE_STACK:+--gaps} ${PROFILE_OPS:+--ops} \
      >"$logs/$name.busy.txt" 2>&1
    rm -rf /tmp/tb-"$name"
  fi
}
worker_one() { # NAME WORLD RANK FLAGS...
  local name=$1 world=$2 rank=$3
  shift 3
  [[ $1 == LORA=* ]] && return 0 # the worker trains every parameter: no PEFT
  # shellcheck disable=SC2086
  timeout 200 "$BIN" --profile main --device cuda --warmup 3 --iters 5 --rank-of-layout "$rank" \
    --mlm-args torchrun --nproc-per-node "$world" pretrain_gpt.py $common "$@" </dev/null \
    >"$logs/$name.jsonl" 2>"$logs/$name.err"
  log "worker $name rc=$? $(grep -o '"status":"[a-z]*"' "$logs/$name.jsonl" | head -1)"
}

start=$(date +%s)
(
  [ -n "${NO_WORKER:-}" ] && exit 0
  while read -r line; do
    [ -n "$line" ] || continue
    # shellcheck disable=SC2086
    worker_one $line
  done <<<"$RUNS"
) &
wpid=$!
while read -r line; do
  [ -n "$line" ] || continue
  [[ ${line%% *} =~ ${REAL_RE:-.} ]] || continue # REAL_RE: real Megatron for these only (the worker for all)
  while [ "$(jobs -rp | wc -l)" -gt "$jobs" ]; do sleep 2; done
  # shellcheck disable=SC2086
  real_one $line &
  log "real $(echo "$line" | cut -d' ' -f1) started"
done <<<"$RUNS"
wait
log "all done in $(($(date +%s) - start)) s"
python3 - "$logs" <<'PY' | tee "$OUT/real-ranks-table.txt"
import json, os, re, sys
d = sys.argv[1]
print(f"{'run':30} {'Megatron GiB':>12} {'worker GiB':>10} {'error':>7} {'skipped':>7}  worker status")
for f in sorted(os.listdir(d)):
    if not f.endswith(".log"): continue
    name = f[:-4]
    t = open(os.path.join(d, f)).read()
    peaks = [float(x) for x in re.findall(r"max allocated: ([0-9.]+)", t)]
    mp = max(peaks) * 2**20 if peaks else None
    sk = re.findall(r"number of skipped iterations: +([0-9]+)", t)
    wp, st = None, "-"
    p = os.path.join(d, name + ".jsonl")
    if os.path.exists(p):
        for line in open(p):
            try: j = json.loads(line)
            except ValueError: continue
            if j.get("event") == "rank_summary": wp = j.get("peak_allocated")
            if j.get("event") == "result": st = j.get("status")
    err = f"{100 * (wp - mp) / mp:+.1f}%" if wp and mp else "-"
    g = lambda x: f"{x / 2**30:.3f}" if x else "-"
    print(f"{name:30} {g(mp):>12} {g(wp):>10} {err:>7} {'/'.join(sk) or '-':>7}  {st}")
PY
tar -C "$OUT" -czf "$OUT/real-ranks.tar.gz" real-ranks
