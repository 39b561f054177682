#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Per-label savings against the matched [] control, real Megatron-LM beside the worker (issue 13's
"per-label savings within 10 %"): for every fixture run of tests/fixtures/logs/megatron-lm-h200 whose
stack has a `<stack>-none` control, the bytes the recompute choice saves at the whole-run peak, from
Megatron-LM's log ("max allocated", MiB) and from the worker's stream on the same flag line
(compare_worker.sh's worker/<run>.jsonl, rank_summary.peak_allocated). Prints a Markdown table.
Usage: savings_table.py FIXTURES_DIR WORKER_DIR"""
import json
import os
import re
import sys


def megatron_peak(path):
    peaks = [float(x) for x in re.findall(r"max allocated: ([0-9.]+)", open(path).read())]
    return max(peaks) * 2**20 if peaks else None


def worker_peak(path):
    if not os.path.exists(path):
        return None
    for line in open(path):
        if '"rank_summary"' in line:
            return json.loads(line).get("peak_allocated")
    return None


def main():
    fixtures, worker = sys.argv[1], sys.argv[2]
    runs = sorted(f[:-4] for f in os.listdir(fixtures) if f.endswith(".log"))
    print("| run | Megatron-LM saves (GB) | worker saves (GB) | difference |")
    print("| --- | ---: | ---: | ---: |")
    for run in runs:
        stack, _, choice = run.partition("-")
        if choice in ("none", "") or "-none" in run:
            continue
        control = f"{stack}-none"
        if control not in runs:
            continue
        m0, m1 = megatron_peak(os.path.join(fixtures, control + ".log")), megatron_peak(
            os.path.join(fixtures, run + ".log"))
        w0, w1 = worker_peak(os.path.join(worker, control + ".jsonl")), worker_peak(
            os.path.join(worker, run + ".jsonl"))
        if None in (m0, m1, w0, w1):
            print(f"| {run} | {'-' if None in (m0, m1) else f'{(m0 - m1) / 1e9:.2f}'} | - | (a run is missing) |")
            continue
        ms, ws = (m0 - m1) / 1e9, (w0 - w1) / 1e9
        diff = f"{100 * (ws - ms) / ms:+.1f} %" if abs(ms) > 1e-9 else "-"
        print(f"| {run} | {ms:.2f} | {ws:.2f} | {diff} |")


if __name__ == "__main__":
    main()
