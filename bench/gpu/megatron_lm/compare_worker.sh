#!/usr/bin/env bash
# The worker on the exact command lines of the real Megatron-LM runs kept as fixtures
# (tests/fixtures/logs/megatron-lm-h200/*.log, first line), on the same GPU: builds recompute-bench against
# the PyTorch wheel's LibTorch, runs `recompute-bench --mlm-args <the run's pretrain_gpt.py flags>` for each,
# then prints Megatron-LM's peak ("max allocated" of report_memory, MiB) beside the worker's whole-run peak.
# With MEGATRON_DIR holding Megatron-LM's source, TIMED="dense-none llama-none" re-runs those Megatron runs
# alone on the GPU for a clean step time. FIXTURES names another folder of such logs (the FP8 runs:
# tests/fixtures/logs/megatron-lm-fp8), MATCH a regular expression on their names. Streams and logs go to $OUT.
# Usage: [FIXTURES=DIR] [MATCH=REGEX] bench/gpu/megatron_lm/compare_worker.sh
set -u
cd "$(dirname "$0")/../../.."
OUT=${OUT:-$PWD/out/compare_worker}
mkdir -p "$OUT/worker"
. bench/gpu/common.sh
fixtures=${FIXTURES:-tests/fixtures/logs/megatron-lm-h200}
log "configure + build"
build_worker recompute-bench
BIN=build/gpu/app/bench/recompute-bench
log "built"
for f in "$fixtures"/*.log; do
  name=$(basename "$f" .log)
  [[ "$name" =~ ${MATCH:-.} ]] || continue
  grep -q '^# exit: 0' "$f" || continue # the real run failed (dense-mlp): nothing to hold the worker to
  flags=$(head -1 "$f" | sed 's/^# command: .*pretrain_gpt.py //')
  # shellcheck disable=SC2086 # a flag line splits on whitespace, as the shell line did
  timeout 150 "$BIN" --device cuda --warmup 2 --iters 4 --mlm-args $flags </dev/null \
    >"$OUT/worker/$name.jsonl" 2>"$OUT/worker/$name.err"
  log "worker $name rc=$? $(grep '"event":"result"' "$OUT/worker/$name.jsonl" | cut -c1-120)"
done
for name in ${TIMED:-}; do
  f="$fixtures/$name.log"
  flags=$(head -1 "$f" | sed 's/^# command: .*pretrain_gpt.py //')
  # shellcheck disable=SC2086
  (cd "${MEGATRON_DIR:-.megatron}" && PYTHONUNBUFFERED=1 CUDA_DEVICE_MAX_CONNECTIONS=1 \
     timeout 300 torchrun --standalone --nproc-per-node 1 pretrain_gpt.py $flags) >"$OUT/worker/megatron-$name.log" 2>&1
  log "megatron alone $name rc=$?"
done
python3 - "$fixtures" "$OUT/worker" <<'PY' | tee "$OUT/table.txt"
import json, os, re, statistics, sys
fx, wd = sys.argv[1], sys.argv[2]
def mlm(path):
    t = open(path).read()
    peaks = [float(x) for x in re.findall(r"max allocated: ([0-9.]+)", t)]
    ms = [float(x) for x in re.findall(r"elapsed time per iteration \(ms\): ([0-9.]+)", t)][2:]
    return (max(peaks) * 2**20 if peaks else None), (statistics.median(ms) if ms else None)
print(f"{'run':26} {'Megatron GB':>11} {'worker GB':>9} {'error':>7} {'MLM ms':>8} {'worker ms':>9} status / what holds the worker's peak")
for f in sorted(os.listdir(fx)):
    if not f.endswith(".log"): continue
    name = f[:-4]
    mp, mms = mlm(os.path.join(fx, f))
    alone = os.path.join(wd, f"megatron-{name}.log")
    if os.path.exists(alone):
        mms = mlm(alone)[1]
    wp, wms, status, held = None, None, "-", ""
    p = os.path.join(wd, name + ".jsonl")
    if os.path.exists(p):
        attr = {}
        for line in open(p):
            try: j = json.loads(line)
            except ValueError: continue
            e = j.get("event")
            if e == "rank_summary": wp, phase = j["peak_allocated"], j.get("peak_phase")
            if e == "result": status, wms = j.get("status"), j.get("steady_step_ms")
            if e == "peak_attribution": attr[j.get("phase")] = j
        if wp and phase in attr:
            held = " ".join(f"{k}={v/1e9:.2f}" for k, v in sorted(attr[phase]["categories"].items(), key=lambda kv: -kv[1]) if v > 0.01 * wp)
    err = f"{100*(wp-mp)/mp:+.1f}%" if (wp and mp) else "-"
    fmt = lambda x, d=2: f"{x:.{d}f}" if x else "-"
    print(f"{name:26} {fmt(mp and mp/1e9):>11} {fmt(wp and wp/1e9):>9} {err:>7} {fmt(mms,1):>8} {fmt(wms,1):>9} {status} {held}")
PY
# One file back from the device host.
tar -C "$OUT" -czf "$OUT/compare-worker.tar.gz" worker && rm -rf "$OUT/worker"
