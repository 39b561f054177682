#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The worker as one rank of a Megatron-LM job, on one H200, for the shapes the lead gives real Megatron-LM
# (issue 13): each run is `recompute-bench --mlm-args <pretrain_gpt.py flags>`, the same flag line, with
# Megatron-LM's defaults for everything it does not set. Builds recompute-bench against the PyTorch
# wheel's LibTorch (bench/gpu/common.sh), then prints one table row per run: the whole-run peak allocated,
# its phase, what holds it (peak_attribution), the steady step time. Results go to $OUT (default
# ./out/megatron_compare): worker.jsonl (every stream, each after a {"event":"variant"} line), table.txt.
# Usage: bench/gpu/run_megatron_compare.sh [STACK ...]   (dense, llama, moe; default all)
#   ALL_DISTOPT=1   every recompute choice also with --use-distributed-optimizer (default: none and
#                   full uniform 1 only, which keeps the whole run under 5 minutes on one H200)
#   WARMUP / ITERS  default 2 / 4
# Needs: CMake, ninja, nvcc, python3 with torch; nlohmann/json.hpp under .deps/include when the host lacks it.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/out/megatron_compare}
mkdir -p "$OUT"
WARMUP=${WARMUP:-2}
ITERS=${ITERS:-4}
ALL_DISTOPT=${ALL_DISTOPT:-0}
. bench/gpu/common.sh

# What every run shares: mock data, a null tokenizer of 32000 ids (a multiple of 128: no padding), the
# local transformer implementation (no Transformer Engine), bf16, 6 iterations; what does not change
# memory (lr, logging, data) is listed by the worker in its note and ignored.
COMMON="--seq-length 4096 --max-position-embeddings 4096 --micro-batch-size 1 --global-batch-size 8 --bf16
 --transformer-impl local --attention-backend local --mock-data --tokenizer-type NullTokenizer
 --vocab-size 32000 --lr 1e-4 --min-lr 1e-5 --lr-decay-style cosine --weight-decay 0.1 --clip-grad 1.0
 --train-iters 6 --log-interval 1 --eval-iters 0 --split 100,0,0 --seed 1234"
# Dense GPT with Megatron-LM's defaults (learned absolute positions, biases, tied embeddings, GeLU,
# LayerNorm, softmax in bf16, dropout 0.1).
DENSE="--num-layers 8 --hidden-size 4096 --num-attention-heads 32"
# Llama-like: GQA 8 groups, SwiGLU, RoPE, RMSNorm, no biases, untied output layer.
LLAMA="--num-layers 8 --hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32
 --group-query-attention --num-query-groups 8 --swiglu --normalization RMSNorm --position-embedding-type rope
 --disable-bias-linear --untie-embeddings-and-output-weights"
# MoE: 8 experts, top-2, SwiGLU experts, RoPE, RMSNorm, no biases, the load-balancing loss.
MOE="--num-layers 8 --hidden-size 2048 --ffn-hidden-size 8192 --num-attention-heads 16 --num-experts 8
 --moe-router-topk 2 --moe-ffn-hidden-size 4096 --moe-aux-loss-coeff 1e-2 --swiglu --normalization RMSNorm
 --position-embedding-type rope --disable-bias-linear --untie-embeddings-and-output-weights"

# The recompute choices (name|flags); on MoE layers mlp's place is taken by moe_act.
recompute_choices() {
    local mlp_label=$1
    echo "none|"
    echo "core_attn|--recompute-granularity selective --recompute-modules core_attn"
    echo "$mlp_label|--recompute-granularity selective --recompute-modules $mlp_label"
    echo "full-uniform-1|--recompute-granularity full --recompute-method uniform --recompute-num-layers 1"
    echo "full-block-4|--recompute-granularity full --recompute-method block --recompute-num-layers 4"
}

STACKS=${*:-dense llama moe}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >"$OUT/gpu.txt" 2>&1
log "configure + build"
build_worker recompute-bench
BIN=build/gpu/app/bench/recompute-bench
log "built"

: >"$OUT/worker.jsonl"
: >"$OUT/flags.txt"
for stack in $STACKS; do
    case $stack in
    dense) shape=$DENSE mlp_label=mlp ;;
    llama) shape=$LLAMA mlp_label=mlp ;;
    moe) shape=$MOE mlp_label=moe_act ;;
    *) echo "unknown stack '$stack' (dense, llama, moe)"; exit 2 ;;
    esac
    while IFS='|' read -r choice rflags; do
        for distopt in 0 1; do
            if [ "$distopt" = 1 ] && [ "$ALL_DISTOPT" != 1 ] && [ "$choice" != none ] && [ "$choice" != full-uniform-1 ]; then
                continue
            fi
            name="$stack/$choice"
            dflag=""
            if [ "$distopt" = 1 ]; then name="$name/distopt"; dflag="--use-distributed-optimizer"; fi
            # shellcheck disable=SC2086 # the flag lines split on whitespace, as a shell line does
            set -- $shape $COMMON $rflags $dflag
            echo "$name: pretrain_gpt.py $*" >>"$OUT/flags.txt"
            echo "{\"event\":\"variant\",\"name\":\"$name\"}" >>"$OUT/worker.jsonl"
            timeout 120 "$BIN" --device cuda --warmup "$WARMUP" --iters "$ITERS" --mlm-args "$@" \
                </dev/null >>"$OUT/worker.jsonl" 2>>"$OUT/run.log"
            log "worker $name rc=$? $(tail -1 "$OUT/worker.jsonl" | cut -c1-160)"
        done
    done < <(recompute_choices "$mlp_label")
done

python3 - "$OUT/worker.jsonl" <<'EOF' | tee "$OUT/table.txt"
import json, sys
runs, name = {}, None
for line in open(sys.argv[1]):
    try:
        j = json.loads(line)
    except ValueError:
        continue
    if j.get("event") == "variant":
        name = j["name"]
        runs[name] = {"attr": {}}
    elif name:
        runs[name].setdefault(j.get("event"), j)
        if j.get("event") == "peak_attribution":
            runs[name]["attr"][j["phase"]] = j
gb = lambda b: b / 1e9
print(f"{'run':34} {'status':7} {'peak GB':>8} {'phase':15} {'attrib%':>7} {'step ms':>8}  what holds the peak (GB)")
for name, r in runs.items():
    res, summ = r.get("result", {}), r.get("rank_summary")
    if not summ:
        print(f"{name:34} {res.get('status', 'aborted'):7} {res.get('message', '')[:80]}")
        continue
    peak, phase = summ["peak_allocated"], summ["peak_phase"]
    a = r["attr"].get(phase)
    held, pct = "", ""
    if a:
        cats = sorted(a["categories"].items(), key=lambda kv: -kv[1])
        held = " ".join(f"{k}={gb(v):.2f}" for k, v in cats if v > 0.01 * peak)
        pct = f"{100.0 * a['attributed'] / max(1, a['peak_allocated']):.1f}"
    print(f"{name:34} {res.get('status', '?'):7} {gb(peak):8.2f} {phase:15} {pct:>7} "
          f"{summ['steady_step_ms']:8.1f}  {held}")
EOF
log "table in $OUT/table.txt; flag lines in $OUT/flags.txt"
