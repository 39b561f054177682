#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Ground truth for hybrid stacks (issue 27) on one H200, in one device call of about 8 minutes: real
# Megatron-LM d98e8a64 (profile main) `pretrain_hybrid.py` (what `pretrain_mamba.py` re-runs) with
# Transformer Engine 2.17.1, mamba_ssm's and FLA's Triton kernels, on
#  - nh-*:  a small Nemotron-H-like stack, "M*EM-EME" (Mamba, attention, MoE and MLP layers; squared ReLU,
#           a shared expert, TE grouped GEMM), seq 4096, MBS 2, GBS 4, bf16, distributed optimizer, with
#           [], moe_act, moe, layernorm, moe + layernorm, mlp and full recompute (uniform, 1 layer);
#  - gdn-*: a hybrid stack with GatedDeltaNet layers, "G*G-G*G-" (SwiGLU MLPs; --experimental-attention-
#           variant gdn, whose TransformerConfig check wants --linear-attention-freq although the pattern
#           decides), with [], gdn_norm_out and full recompute;
# then the worker (recompute-bench, built here against the PyTorch wheel's LibTorch) on the same flag lines,
# and a table of Megatron's peak ("max allocated" of report_memory), the worker's peak and each run's saving
# against its stack's [] run.
# Prepare once on the dev machine: scripts/fetch_hybrid_deps.sh (Megatron-LM, mamba_ssm, fla, the
# causal_conv1d and einops stand-ins, TE into .deps/), then run with carry [".deps"].
# Each log starts with its command line; logs, streams and the table go to $OUT/hybrid (and
# $OUT/hybrid.tar.gz).
# FLA_GUARD_OFF=1: the gdn-* runs go on past FLA's refusal of its gated backward kernel on Hopper with
# Triton >= 3.4 (shim-fla-hopper/sitecustomize.py: memory to trust, gradients not); each log says so.
# SNAPSHOT=1: real runs of 3 iterations with the allocator's history; what is live at the peak, by the
# Megatron line that allocated it (snapshot_peak.py), goes beside the worker's own attribution
# (worker_peak.py) in $OUT/hybrid/NAME.peak.txt.
# Usage: [FLA_GUARD_OFF=1] [SNAPSHOT=1] bench/gpu/megatron_lm/hybrid_runs.sh [PARALLEL] [NAME_REGEX]
#        bench/gpu/megatron_lm/hybrid_runs.sh --list   (NAME<TAB>FLAGS per run, nothing started: for
#                                                     `recompute estimate --mlm-args FLAGS` here)
set -uo pipefail
set -f # the hybrid patterns hold '*'
cd "$(dirname "$0")/../../.." || exit 1
root=$PWD

common=(--mock-data --tokenizer-type NullTokenizer --no-persist-layer-norm --no-masked-softmax-fusion
  --no-gradient-accumulation-fusion --log-interval 1 --log-memory-interval 1 --train-iters 5 --lr 3e-4
  --min-lr 3e-5 --lr-decay-style constant --eval-iters 0 --eval-interval 100000 --seed 1234 --log-throughput
  --spec megatron.core.models.hybrid.hybrid_layer_specs hybrid_stack_spec
  --hidden-size 1024 --num-attention-heads 8 --group-query-attention --num-query-groups 2 --kv-channels 128
  --normalization RMSNorm --disable-bias-linear --position-embedding-type none
  --untie-embeddings-and-output-weights --attention-dropout 0 --hidden-dropout 0 --seq-length 4096
  --max-position-embeddings 4096 --micro-batch-size 2 --global-batch-size 4 --bf16 --use-distributed-optimizer
  --vocab-size 32000 --make-vocab-size-divisible-by 128)
# Nemotron-H's layer kinds at a small size: MambaMixer with d_inner 2 h (32 heads of 64), state 128,
# 8 groups; squared ReLU MLPs; MoE with a shared expert (Nemotron 3 Nano's shape of layer, 16 experts).
nh=(--hybrid-layer-pattern "M*EM-EME" --mamba-num-heads 32 --mamba-head-dim 64 --mamba-state-dim 128
  --mamba-num-groups 8 --ffn-hidden-size 2048 --squared-relu --num-experts 16 --moe-router-topk 4
  --moe-ffn-hidden-size 512 --moe-shared-expert-intermediate-size 1024 --moe-grouped-gemm
  --moe-token-dispatcher-type alltoall --moe-aux-loss-coeff 1e-3)
gdn=(--hybrid-layer-pattern "G*G-G*G-" --experimental-attention-variant gdn --linear-attention-freq 4
  --linear-num-key-heads 8 --linear-num-value-heads 16 --linear-key-head-dim 128 --linear-value-head-dim 128
  --linear-conv-kernel-dim 4 --ffn-hidden-size 3072 --swiglu)
sel=(--recompute-granularity selective --recompute-modules)
full=(--recompute-granularity full --recompute-method uniform --recompute-num-layers 1)
declare -A runs=(
  [nh-none]="${nh[*]}"
  [nh-moe_act]="${nh[*]} ${sel[*]} moe_act"
  [nh-moe]="${nh[*]} ${sel[*]} moe"
  [nh-layernorm]="${nh[*]} ${sel[*]} layernorm"
  [nh-layernorm-moe]="${nh[*]} ${sel[*]} layernorm moe"
  [nh-mlp]="${nh[*]} ${sel[*]} mlp"
  [nh-full]="${nh[*]} ${full[*]}"
  [gdn-none]="${gdn[*]}"
  [gdn-gdn_norm_out]="${gdn[*]} ${sel[*]} gdn_norm_out"
  [gdn-full]="${gdn[*]} ${full[*]}"
)
if [ "${1:-}" = "--list" ]; then
  for n in $(printf '%s\n' "${!runs[@]}" | sort); do printf '%s\t%s\n' "$n" "${common[*]} ${runs[$n]}"; done
  exit 0
fi

mdir="${MEGATRON_DIR:-$root/.deps/mlm}"
OUT="${OUT:-/tmp/megatron-out}"
par="${1:-3}"
only="${2:-.}"
logs="$OUT/hybrid"
mkdir -p "$logs/worker"
# shellcheck source=bench/gpu/common.sh
. bench/gpu/common.sh
if [ ! -f "$mdir/pretrain_hybrid.py" ] || [ ! -d .deps/py/mamba_ssm ] || [ ! -d .deps/py/fla ]; then
  echo "hybrid_runs: run scripts/fetch_hybrid_deps.sh on the dev machine and carry .deps" >&2
  exit 1
fi
set +f
te_site=(.deps/te/te-site-*.tar.xz)
set -f
tar -C /tmp -xJf "${te_site[0]}"
export PYTHONPATH=/tmp/te-site:$root/.deps/te/shim:$root/.deps/py
python3 -c 'import einops' 2>/dev/null || PYTHONPATH=$PYTHONPATH:$root/.deps/py-einops
export PYTHONUNBUFFERED=1 CUDA_DEVICE_MAX_CONNECTIONS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export TRITON_CACHE_DIR=/tmp/triton-cache # shared by the runs: each kernel compiles once
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$logs/gpu.txt"
# What imports, from where: the kernels Megatron's Mamba and GatedDeltaNet paths take.
python3 - <<'PY' 2>&1 | tee -a "$logs/gpu.txt"
import importlib, torch
print("torch", torch.__version__, "cuda", torch.version.cuda)
for m in ("transformer_engine", "triton", "packaging", "einops", "causal_conv1d", "mamba_ssm.ops.triton.ssd_combined",
          "mamba_ssm.ops.triton.layernorm_gated", "fla.modules.convolution", "fla.modules.l2norm",
          "fla.ops.gated_delta_rule"):
    try:
        mod = importlib.import_module(m)
        print(f"{m}: {getattr(mod, '__version__', '')} {getattr(mod, '__file__', '')}")
    except Exception as e:
        print(f"{m}: NOT IMPORTABLE: {type(e).__name__}: {e}")
PY

names=$(printf '%s\n' "${!runs[@]}" | grep -E "$only" | sort)
start=$(date +%s)
# The worker builds on the CPU cores while the Megatron runs use the GPU, then runs each flag line (its
# peak is its own allocator's, whatever else shares the GPU).
BIN=build/gpu/app/bench/recompute-bench
(
  build_worker recompute-bench
  log "worker built: $(( $(date +%s) - start )) s"
  for n in $names; do
    # shellcheck disable=SC2086 # a flag line splits on whitespace, as the shell line did
    timeout 120 "$BIN" --device cuda --warmup 2 --iters 2 --mlm-args "${common[@]}" ${runs[$n]} </dev/null \
      >"$logs/worker/$n.jsonl" 2>"$logs/worker/$n.err"
    log "worker $n rc=$? $(grep '"event":"result"' "$logs/worker/$n.jsonl" | cut -c1-160)"
  done
) >"$logs/worker/build.out" 2>&1 &
worker=$!

run_one() {
  local name=$1 log="$logs/$1.log"
  local -a env_=(RANK=0 LOCAL_RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$((29500 + RANDOM % 1000)))
  # shellcheck disable=SC2206 # a flag line splits on whitespace, as the shell line did
  local cmd=(python3 pretrain_hybrid.py "${common[@]}" ${runs[$name]})
  { echo "# command: ${env_[*]} ${cmd[*]}"
    echo "# megatron-lm: d98e8a64 (profile main); TE 2.17.1; mamba_ssm 0048fbf2; fla v0.5.1; GPU: $(head -1 "$logs/gpu.txt")"; } >"$log"
  if [ -n "${FLA_GUARD_OFF:-}" ] && [[ $name == gdn-* ]]; then
    env_+=(PYTHONPATH="$root/bench/gpu/megatron_lm/shim-fla-hopper:$PYTHONPATH")
    echo "# shim: bench/gpu/megatron_lm/shim-fla-hopper (FLA's Hopper + Triton >= 3.4 guard lifted: memory only)" >>"$log"
  fi
  [ -n "${SNAPSHOT:-}" ] && cmd+=(--train-iters 3 --record-memory-history --memory-snapshot-path "/tmp/snap-$name.pickle")
  (cd "$mdir" && env "${env_[@]}" timeout 300 "${cmd[@]}") >>"$log" 2>&1
  echo "# exit: $?" >>"$log"
  if [ -n "${SNAPSHOT:-}" ]; then # Megatron names the file by rank
    python3 "$root/bench/gpu/megatron_lm/snapshot_peak.py" "/tmp/snap-${name}_0.pickle" --top 40 \
      >"$logs/$name.peak.txt" 2>&1
    rm -f "/tmp/snap-${name}_0.pickle"
  fi
}
for n in $names; do
  while [ "$(jobs -rp | grep -cvx "$worker")" -ge "$par" ]; do sleep 1; done
  run_one "$n" &
  sleep 2
done
wait
log "all: $(( $(date +%s) - start )) s"
cat "$logs/worker/build.out"
if [ -n "${SNAPSHOT:-}" ]; then
  for n in $names; do
    [ -f "$logs/worker/$n.jsonl" ] && python3 bench/gpu/megatron_lm/worker_peak.py "$logs/worker/$n.jsonl" --heading >>"$logs/$n.peak.txt"
  done
fi

# shellcheck disable=SC2086 # one argument per run name
python3 - "$logs" $names <<'PY' | tee "$logs/table.txt"
import json, os, re, sys
d, names = sys.argv[1], sys.argv[2:]
def mlm(name):
    t = open(os.path.join(d, name + ".log"), errors="replace").read()
    peaks = [float(x) for x in re.findall(r"max allocated: ([0-9.]+)", t)]
    first = peaks[0] * 2**20 if peaks else None # iteration 1's report (no Adam moments before its step)
    err = re.findall(r"(\w*Error: .*)", t)
    return (max(peaks) * 2**20 if peaks else None), first, (err[-1][:110] if err else "")
def worker(name):
    p = os.path.join(d, "worker", name + ".jsonl")
    if not os.path.exists(p): return None, ""
    peak, status = None, ""
    for line in open(p):
        try: j = json.loads(line)
        except ValueError: continue
        if j.get("event") == "rank_summary": peak = j.get("peak_allocated")
        if j.get("event") == "result": status = j.get("status", "")
    return peak, status
rows = {n: (mlm(n), worker(n)) for n in names}
gb = lambda x: f"{x / 1e9:.3f}" if x else "-"
print(f"{'run':20} {'MLM GB':>8} {'MLM it1':>8} {'worker':>8} {'err':>7} {'MLM saved':>9} {'wkr saved':>9}  status")
for n in names:
    (mp, m1, merr), (wp, ws) = rows[n]
    ctl = rows.get(n.split("-")[0] + "-none")
    ms = ctl[0][0] - mp if ctl and ctl[0][0] and mp else None
    wsv = ctl[1][0] - wp if ctl and ctl[1][0] and wp else None
    e = f"{100 * (wp - mp) / mp:+.1f}%" if wp and mp else "-"
    fmt = lambda x: f"{x / 1e9:+.3f}" if x is not None else "-"
    print(f"{n:20} {gb(mp):>8} {gb(m1):>8} {gb(wp):>8} {e:>7} {fmt(ms):>9} {fmt(wsv):>9}  {ws} {merr}")
PY
tar -C "$OUT" -czf "$OUT/hybrid.tar.gz" hybrid
