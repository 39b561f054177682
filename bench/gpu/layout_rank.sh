#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue 14 on one H200: (1) the guide's Moonlight 16B recipe (resources/presets/moonlight-mla-moe.json:
# TP2 SP, EP8, PP1, CP1, seq 4096, MBS 1, GBS 4 on 8 GPUs, so DP 4 and expert-DP 1) run as its hottest
# rank (the estimator names it; --rank-of-layout picks another) for every module set of the guide's
# table (recompute-guide.md, "Matched H100 Evidence: Moonlight 16B"); (2) the MoE-speed comparison on the
# Moonlight-shaped bench recipe (bench/gpu/recipes/moonlight-like.json, one rank): moe_grouped_gemm true
# (torch::_grouped_mm on LibTorch >= 2.9) against false (the per-expert loop), 3 runs x 20 steady
# iterations each. Results go to $OUT (default ./out/layout_rank): layout_rank.jsonl, moe_speed.jsonl
# (the worker's streams, one variant marker line before each) and summary.md.
# Assumed for the Moonlight rank, as Megatron-Bridge's bf16_mixed pretraining config sets them:
# use_distributed_optimizer and grad_reduce_in_fp32 on (override with DISTOPT=0 / FP32_GRADS=0).
# Usage: bench/gpu/layout_rank.sh                 (everything: about 10-15 minutes on an H200, build included)
#        STAGES="build" bench/gpu/layout_rank.sh, then STAGES="moonlight", then STAGES="speed summary"
#        (one part per call under a 10-minute limit; build/gpu and $OUT are kept between calls)
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/out/layout_rank}
mkdir -p "$OUT"
WARMUP=${WARMUP:-3}
ITERS=${ITERS:-10}
SPEED_ITERS=${SPEED_ITERS:-20}
SPEED_RUNS=${SPEED_RUNS:-3}
RANK_ARGS=()
[ -n "${RANK_OF_LAYOUT:-}" ] && RANK_ARGS=(--rank-of-layout "$RANK_OF_LAYOUT")
. bench/gpu/common.sh

STAGES=${STAGES:-build moonlight speed summary}
want() { case " $STAGES " in *" $1 "*) return 0 ;; esac; return 1; }

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv >"$OUT/gpu.txt" 2>&1
BIN=build/gpu/app/bench/recompute-bench
if want build || [ ! -x "$BIN" ]; then
    log "configure + build"
    build_worker recompute-bench
    log "built"
fi

python3 - "$OUT/variants" "${DISTOPT:-1}" "${FP32_GRADS:-1}" <<'EOF'
import json, os, sys
out, distopt, fp32 = sys.argv[1], sys.argv[2] == "1", sys.argv[3] == "1"
os.makedirs(out, exist_ok=True)
base = json.load(open("resources/presets/moonlight-mla-moe.json"))
base.update(data_parallel_size=4, use_distributed_optimizer=distopt, grad_reduce_in_fp32=fp32)
# The guide's table, row by row (selective recompute_modules).
for name, modules in [("none", []), ("core_attn", ["core_attn"]), ("mla_up_proj", ["mla_up_proj"]),
                      ("mla_up_proj+mlp", ["mla_up_proj", "mlp"]), ("moe_act", ["moe_act"]),
                      ("layernorm+moe_act", ["layernorm", "moe_act"])]:
    r = dict(base, recompute_granularity="selective", recompute_modules=modules)
    json.dump(r, open(f"{out}/moonlight16b-{name}.json", "w"), indent=1)
speed = json.load(open("bench/gpu/recipes/moonlight-like.json"))
for grouped in (True, False):
    json.dump(dict(speed, moe_grouped_gemm=grouped),
              open(f"{out}/speed-grouped-{str(grouped).lower()}.json", "w"), indent=1)
EOF

if want moonlight; then
: >"$OUT/layout_rank.jsonl"
for name in none core_attn mla_up_proj mla_up_proj+mlp moe_act layernorm+moe_act; do
    echo "{\"event\":\"variant\",\"name\":\"moonlight16b $name\"}" >>"$OUT/layout_rank.jsonl"
    timeout 580 "$BIN" "$OUT/variants/moonlight16b-$name.json" --device cuda --warmup "$WARMUP" --iters "$ITERS" \
        "${RANK_ARGS[@]}" >>"$OUT/layout_rank.jsonl" 2>>"$OUT/run.log"
    log "moonlight16b $name rc=$? $(tail -1 "$OUT/layout_rank.jsonl" | cut -c1-200)"
done
fi

if want speed; then
: >"$OUT/moe_speed.jsonl"
for run in $(seq 1 "$SPEED_RUNS"); do
    for grouped in true false; do
        echo "{\"event\":\"variant\",\"name\":\"grouped=$grouped run $run\"}" >>"$OUT/moe_speed.jsonl"
        timeout 580 "$BIN" "$OUT/variants/speed-grouped-$grouped.json" --device cuda --warmup "$WARMUP" \
            --iters "$SPEED_ITERS" >>"$OUT/moe_speed.jsonl" 2>>"$OUT/run.log"
        log "speed grouped=$grouped run $run rc=$? $(tail -1 "$OUT/moe_speed.jsonl" | cut -c1-200)"
    done
done
fi

want summary || exit 0

python3 - "$OUT" <<'EOF' | tee "$OUT/summary.md"
import json, os, sys, statistics
out = sys.argv[1]
def runs(path):
    cur, rows = None, {}
    if not os.path.exists(path):
        return rows
    for line in open(path):
        try:
            j = json.loads(line)
        except ValueError:
            continue
        if j.get("event") == "variant":
            cur = j["name"]; rows[cur] = {}
        elif cur is not None and j.get("event") in ("result", "rank_summary", "note"):
            rows[cur].setdefault(j["event"], j)
    return rows
print("## Moonlight 16B, one rank of TP2 EP8 (guide: 35.9-36.6 GB per rank, Bridge + TE on H100)\n")
print("| modules | status | peak allocated (GB) | phase | step median (ms) | median 95% CI (ms) |")
print("| --- | --- | --- | --- | --- | --- |")
for name, r in runs(f"{out}/layout_rank.jsonl").items():
    res, s = r.get("result", {}), r.get("rank_summary", {})
    ci = s.get("steady_step_ms_median_ci95") or [0, 0]
    print(f"| {name.split(' ', 1)[1]} | {res.get('status')} {res.get('message', '')[:60]} | "
          f"{s.get('peak_allocated', 0) / 1e9:.3f} | {s.get('peak_phase', '')} | "
          f"{s.get('steady_step_ms_median', 0):.1f} | {ci[0]:.1f}-{ci[1]:.1f} |")
print("\n## MoE speed: Moonlight-shaped [] (bench/gpu/recipes/moonlight-like.json)\n")
print("| moe_grouped_gemm | run | step median (ms) | median 95% CI (ms) | model TFLOP/s |")
print("| --- | --- | --- | --- | --- |")
med = {"true": [], "false": []}
for name, r in runs(f"{out}/moe_speed.jsonl").items():
    g = name.split()[0].split("=")[1]
    res = r.get("result", {})
    m = res.get("steady_step_ms_median") or 0
    ci = res.get("steady_step_ms_median_ci95") or [0, 0]
    if m:
        med[g].append(m)
    print(f"| {g} | {name.split()[-1]} | {m:.1f} | {ci[0]:.1f}-{ci[1]:.1f} | {res.get('model_tflops') or 0:.1f} |")
for g, v in med.items():
    if v:
        spread = (max(v) - min(v)) / statistics.mean(v) * 100
        print(f"\ngrouped={g}: median of run medians {statistics.median(v):.1f} ms, runs within {spread:.2f} %")
if med["true"] and med["false"]:
    print(f"\nspeed-up grouped vs sequential: {statistics.median(med['false']) / statistics.median(med['true']):.2f}x")
EOF
