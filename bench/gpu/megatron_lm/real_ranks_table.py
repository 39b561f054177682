#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# The table of bench/gpu/megatron_lm/real_ranks.sh's runs: real Megatron-LM's peak ("max allocated" of
# report_memory, the last line: a running maximum), the worker's (rank_summary), and the estimate of the same
# Megatron-LM line for the rank that ran (`recompute estimate --json`, Megatron layout, that rank's stage),
# each error against real Megatron. Runs on this machine, after the device call.
# Usage: real_ranks_table.py LOG_DIR [RECOMPUTE]    (RECOMPUTE default build/asan/app/cli/recompute)
import json
import os
import re
import shlex
import subprocess
import sys

logs = sys.argv[1]
cli = sys.argv[2] if len(sys.argv) > 2 else "build/asan/app/cli/recompute"
GIB = 2**30


def megatron(path):
    text = open(path).read()
    peaks = re.findall(r"max allocated: ([0-9.]+)", text)
    steady = re.findall(r"\(after ([0-9]+) iterations\) memory \(MB\) \| allocated: ([0-9.]+)", text)
    skipped = re.findall(r"number of skipped iterations: +([0-9]+)", text)
    ms = [float(x) for x in re.findall(r"elapsed time per iteration \(ms\): ([0-9.]+)", text)]
    first = text.splitlines()[0].removeprefix("# command: ")
    return {
        "peak": float(peaks[-1]) * 2**20 if peaks else None,
        "after": float(steady[-1][1]) * 2**20 if steady else None,
        "skipped": sum(int(s) for s in skipped),
        "ms": sorted(ms[2:])[len(ms[2:]) // 2] if len(ms) > 2 else None,
        "command": first,
    }


def worker(path):
    out = {"peak": None, "status": "-", "ms": None}
    if not os.path.exists(path):
        return out
    for line in open(path):
        try:
            j = json.loads(line)
        except ValueError:
            continue
        if j.get("event") == "rank_summary":
            out["peak"] = j.get("peak_allocated")
        if j.get("event") == "result":
            out["status"], out["ms"] = j.get("status"), j.get("steady_step_ms")
    return out


def estimate(command):
    words = shlex.split(command)
    env = dict(w.split("=", 1) for w in words if re.match(r"^[A-Z_]+=", w))
    script = next(i for i, w in enumerate(words) if w.endswith(".py"))
    world, rank = env.get("WORLD_SIZE", "1"), int(env.get("RANK", "0"))
    args = [cli, "estimate", "--profile", "main", "--json", "--mlm-args", "torchrun", "--nproc-per-node", world]
    args += words[script:]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        return None, p.stderr.strip().splitlines()[-1:] or ["?"]
    j = json.loads(p.stdout)
    # the rank's stage: ranks run tp-cp-ep-dp-pp, the stage slowest
    per_stage = int(world) // max(1, len(j["ranks"]))
    stage = rank // per_stage
    for r in j["ranks"]:
        if r["stage"] == stage:
            return r["peak_bytes"], None
    return None, ["no stage %d" % stage]


rows = []
print(f"{'run':30} {'Megatron GiB':>12} {'worker GiB':>10} {'error':>7} {'estimate GiB':>12} {'error':>7}"
      f" {'MLM ms':>8} {'worker ms':>9}")
for f in sorted(os.listdir(logs)):
    if not f.endswith(".log"):
        continue
    name = f[:-4]
    m = megatron(os.path.join(logs, f))
    w = worker(os.path.join(logs, name + ".jsonl"))
    e, why = estimate(m["command"])
    g = lambda b: f"{b / GIB:.3f}" if b else "-"
    err = lambda b: f"{100 * (b - m['peak']) / m['peak']:+.1f}%" if b and m["peak"] else "-"
    fm = lambda x: f"{x:.1f}" if x else "-"
    print(f"{name:30} {g(m['peak']):>12} {g(w['peak']):>10} {err(w['peak']):>7} {g(e):>12} {err(e):>7}"
          f" {fm(m['ms']):>8} {fm(w['ms']):>9}" + (f"  ({m['skipped']} skipped)" if m["skipped"] else "")
          + (f"  estimate: {why[0]}" if why else ""))
