#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Several ranks on one GPU host (docs/benchmarks.md, "Several ranks"): builds recompute-bench against the
# PyTorch wheel's LibTorch (NCCL from the wheel), then runs each recipe once on one GPU and once as
# data-parallel replicas on every GPU of the host, started by torchrun --no-python, and prints per-rank
# step time, gradient-average time and peaks. Results go to $OUT (default ./out/ranks).
# Usage: bench/gpu/run_ranks.sh [VARIANT ...]   (default: dense-fused__none moonlight__none)
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/out/ranks}
mkdir -p "$OUT"
WARMUP=${WARMUP:-2}
ITERS=${ITERS:-8}
NPROC=${NPROC:-$(nvidia-smi -L | wc -l)}
. bench/gpu/common.sh

log "configure + build ($NPROC GPUs)"
build_worker recompute-bench
grep -E "engine:|NCCL|nccl" "$OUT/build.log" | head -5 | tee -a "$OUT/run.log"
BIN=$PWD/build/gpu/app/bench/recompute-bench

[ $# -eq 0 ] && set -- dense-fused__none moonlight__none
VARIANTS=$(python3 bench/gpu/make_variants.py "$OUT/variants" "$@")
: >"$OUT/ranks.jsonl"
for v in $VARIANTS; do
    echo "{\"event\":\"variant\",\"name\":\"$v\",\"world_size\":1}" >>"$OUT/ranks.jsonl"
    timeout 200 "$BIN" "$OUT/variants/$v.json" --device cuda --warmup "$WARMUP" --iters "$ITERS" \
        >>"$OUT/ranks.jsonl" 2>>"$OUT/run.log"
    log "$v on 1 GPU rc=$?"
    echo "{\"event\":\"variant\",\"name\":\"$v\",\"world_size\":$NPROC}" >>"$OUT/ranks.jsonl"
    timeout 300 python3 -m torch.distributed.run --nproc-per-node "$NPROC" --no-python \
        "$BIN" "$OUT/variants/$v.json" --device cuda --warmup "$WARMUP" --iters "$ITERS" \
        >>"$OUT/ranks.jsonl" 2>>"$OUT/run.log"
    log "$v on $NPROC GPUs rc=$? $(tail -1 "$OUT/ranks.jsonl" | cut -c1-200)"
done
rm -rf "$OUT/variants"
python3 - "$OUT/ranks.jsonl" <<'PY' | tee "$OUT/summary.md"
import json, sys
GIB = 1024 ** 3
runs, cur = [], None
for line in open(sys.argv[1]):
    line = line.strip()
    if not line.startswith("{"):
        continue
    e = json.loads(line)
    if e["event"] == "variant":
        cur = {"name": e["name"], "world": e["world_size"], "it": [], "sum": {}, "res": {}, "hello": {}}
        runs.append(cur)
    elif cur is None:
        continue
    elif e["event"] == "iteration" and e["phase"] == "steady":
        cur["it"].append(e)
    elif e["event"] == "rank_summary":
        cur["sum"][e["rank"]] = e
    elif e["event"] in ("result", "hello"):
        cur["res" if e["event"] == "result" else "hello"] = e
print("| recipe | ranks | NCCL | status | step ms | grad average ms (rank 0) | optimizer ms | peak alloc GiB per rank | replicas identical |")
print("|---|---|---|---|---|---|---|---|---|")
for r in runs:
    mean = lambda k: sum(i.get(k, 0) for i in r["it"] if i["rank"] == 0) / max(1, sum(1 for i in r["it"] if i["rank"] == 0))
    peaks = " / ".join(f"{r['sum'][k]['peak_allocated'] / GIB:.2f}" for k in sorted(r["sum"]))
    res = r["res"]
    step = res.get("steady_step_ms")
    print(f"| {r['name']} | {r['world']} | {r['hello'].get('nccl_version') or '-'} | {res.get('status', 'none')} {res.get('message', '')[:80]} | "
          f"{step:.1f} | {mean('grad_reduce_ms'):.1f} | {mean('optimizer_ms'):.1f} | {peaks} | {res.get('dp_replicas_identical', '-')} |"
          if step else f"| {r['name']} | {r['world']} | - | {res.get('status', 'none')} {res.get('message', '')[:120]} | - | - | - | - | - |")
PY
