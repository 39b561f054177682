#!/usr/bin/env python3
# The estimate beside the worker's measured peak for every variant in a worker_vs_estimate.sh results folder
# (variants/*.json, streams/*.jsonl): runs `recompute estimate --json` on each variant's recipe and prints a
# Markdown table (estimate, measured, error, the phases of both peaks).
# Usage: bench/gpu/estimate_table.py RESULTS_DIR [--recompute PATH]
import argparse, json, os, subprocess, sys

ap = argparse.ArgumentParser()
ap.add_argument("results")
ap.add_argument("--recompute", default="build/ci/app/cli/recompute")
ap.add_argument("--layout", default="worker", help="the estimate layout: worker (the worker runs a JSON recipe) or megatron")
a = ap.parse_args()
print("| variant | estimate GB (phase) | measured GB (phase) | error |")
print("| --- | --- | --- | --- |")
errors = []
for f in sorted(os.listdir(os.path.join(a.results, "variants"))):
    name = f[:-5]
    recipe = os.path.join(a.results, "variants", f)
    est = json.loads(subprocess.run([a.recompute, "estimate", recipe, "--json", "--layout", a.layout], capture_output=True, text=True, check=True).stdout)
    ranks = est.get("ranks") or [{}]
    hottest = max(ranks, key=lambda r: r.get("peak_bytes", 0))
    measured, phase = None, "-"
    stream = os.path.join(a.results, "streams", name + ".jsonl")
    for line in open(stream) if os.path.exists(stream) else []:
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if e.get("event") == "rank_summary":
            measured, phase = e["peak_allocated"], e.get("peak_phase", "-")
    p = est["peak_allocated_bytes"]
    err = "-" if not measured else f"{100 * (p - measured) / measured:+.1f} %"
    if measured:
        errors.append(abs(p - measured) / measured)
    print(f"| {name} | {p / 1e9:.2f} ({hottest.get('phase', '-')}) | "
          f"{measured / 1e9 if measured else float('nan'):.2f} ({phase}) | {err} |")
if errors:
    print(f"\n{sum(e <= 0.05 for e in errors)} of {len(errors)} within ±5 %; largest {100 * max(errors):.1f} %")
