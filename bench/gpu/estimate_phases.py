#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The estimate beside the worker's measured peak per phase (forward, backward, optimizer) for every variant
in a worker_vs_estimate.sh results folder (variants/*.json, streams/*.jsonl): `recompute estimate --json`
on each variant's recipe against the stream's rank_summary phase_peaks. Prints a Markdown table and the
count within 5 %.
Usage: bench/gpu/estimate_phases.py RESULTS_DIR [--recompute PATH] [--layout megatron|worker]"""
import argparse
import json
import os
import subprocess

ap = argparse.ArgumentParser()
ap.add_argument("results")
ap.add_argument("--recompute", default="build/ci/app/cli/recompute")
ap.add_argument("--layout", default="megatron")
a = ap.parse_args()
phases = ("forward", "backward", "optimizer")
print("| variant | " + " | ".join(f"{p}: estimate / measured GB" for p in phases) + " |")
print("| --- |" + " --- |" * len(phases))
n = within = 0
for f in sorted(os.listdir(os.path.join(a.results, "variants"))):
    name = f[:-5]
    out = subprocess.run([a.recompute, "estimate", os.path.join(a.results, "variants", f), "--json", "--layout",
                          a.layout], capture_output=True, text=True, check=True).stdout
    ranks = json.loads(out)["ranks"]
    hottest = max(ranks, key=lambda r: r["peak_bytes"])
    est = {p["phase"]: p["peak_bytes"] for p in hottest["phases"]}
    measured = {}
    stream = os.path.join(a.results, "streams", name + ".jsonl")
    for line in open(stream) if os.path.exists(stream) else []:
        if '"rank_summary"' in line:
            measured = {k: v["allocated"] for k, v in json.loads(line)["phase_peaks"].items()}
    cells = []
    for p in phases:
        e, m = est.get(p), measured.get(p)
        if not e or not m:
            cells.append("-")
            continue
        err = (e - m) / m
        n += 1
        within += abs(err) <= 0.05
        cells.append(f"{e / 1e9:.2f} / {m / 1e9:.2f} ({100 * err:+.1f} %)")
    print(f"| {name} | " + " | ".join(cells) + " |")
print(f"\n{within} of {n} phase peaks within ±5 %")
