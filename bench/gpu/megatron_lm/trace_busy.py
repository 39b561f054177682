#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Where a real Megatron-LM step's time goes, from the PyTorch profiler's Chrome trace (Megatron-LM's
# --profile --use-pytorch-profiler --profile-step-start A --profile-step-end B --tensorboard-dir D writes
# D/../torch_profile/rank-N.json.gz): the wall time of the profiled steps (ProfilerStep# spans), the time at
# least one GPU kernel or copy ran (the union of their intervals: the GPU is busy), the host's device
# synchronisations (cudaStreamSynchronize, cudaDeviceSynchronize, device-to-host copies and the waits
# inside them), and the GPU time by kernel name family. A step whose GPU is busy for a fraction of its wall
# time is bound by the host (Python, launches, synchronisations), not by the GPU's work.
# With --gaps (a trace taken with Python stacks: --pytorch-profiler-collect-callstack), the GPU's idle time
# inside the steps is split by where the host was when it launched the work that ended each idle gap (the
# innermost Megatron frame), and by whether a host wait on the device ended inside the gap: that is what
# a step-time model must add for the host, by place.
# With --ops, the GPU time by the operators that launched it: each kernel's or copy's launch is placed in
# the torch operators open on its host thread at that moment (cpu_op events nest by time; the backward's
# run on autograd's thread inside "evaluate_function: XBackward0"), grouped by the outermost and the
# innermost of them: which operator makes the device-to-device copies and the small elementwise kernels.
# Usage: trace_busy.py TRACE.json[.gz] [--top N] [--gaps] [--ops]
import argparse
import bisect
import collections
import gzip
import json

ap = argparse.ArgumentParser()
ap.add_argument("trace")
ap.add_argument("--top", type=int, default=12)
ap.add_argument("--gaps", action="store_true")
ap.add_argument("--ops", action="store_true")
a = ap.parse_args()
opener = gzip.open if a.trace.endswith(".gz") else open
with opener(a.trace, "rt") as f:
    events = json.load(f)["traceEvents"]

steps = [e for e in events if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")]
gpu = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
sync_names = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy",
              "cudaMemcpyAsync")
syncs = [e for e in events if e.get("ph") == "X" and e.get("cat") == "cuda_runtime"
         and e.get("name") in sync_names]


def union(intervals):
    total, end = 0.0, None
    for s, e in sorted(intervals):
        if end is None or s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


print(f"# {a.trace}")
for st in steps:
    t0, t1 = st["ts"], st["ts"] + st["dur"]
    inside = [(e["ts"], e["ts"] + e["dur"]) for e in gpu if t0 <= e["ts"] < t1]
    busy = union(inside)
    ss = [e for e in syncs if t0 <= e["ts"] < t1]
    print(f"{st['name']}: wall {st['dur'] / 1e3:.1f} ms, GPU busy {busy / 1e3:.1f} ms "
          f"({100 * busy / st['dur']:.0f} %), {len(inside)} kernels/copies, "
          f"{len(ss)} host waits on the device ({sum(e['dur'] for e in ss) / 1e3:.1f} ms in them)")
by = collections.Counter()
for e in gpu:
    name = e["name"]
    key = name.split("<")[0].split("(")[0][:60]
    by[key] += e["dur"]
total = sum(by.values())
print(f"GPU time by kernel (all profiled steps, {total / 1e3:.1f} ms):")
for k, v in by.most_common(a.top):
    print(f"  {v / 1e3:8.1f} ms  {100 * v / total:4.1f} %  {k}")

if a.ops:
    # Launches and operators by thread, swept in time order with a stack of the open operators.
    corr = {}
    per_tid = collections.defaultdict(list)
    for e in events:
        if e.get("ph") != "X":
            continue
        if e.get("cat") == "cpu_op":
            per_tid[e["tid"]].append((e["ts"], 0, e))
        elif e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {}):
            per_tid[e["tid"]].append((e["ts"], 1, e))
    for tid, items in per_tid.items():
        items.sort(key=lambda x: (x[0], x[1], -x[2].get("dur", 0)))
        stack = []
        for ts, kind, e in items:
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= ts:
                stack.pop()
            if kind == 0:
                stack.append(e)
            else:
                names = [o["name"] for o in stack] or ["(no operator)"]
                outer, inner = names[0], names[-1]
                corr[e["args"]["correlation"]] = outer if inner == outer else f"{outer} > {inner}"
    n = max(len(steps), 1)
    by_op, op_count = collections.Counter(), collections.Counter()
    for st in steps:
        t0, t1 = st["ts"], st["ts"] + st["dur"]
        for k in gpu:
            if not t0 <= k["ts"] < t1:
                continue
            fam = k["name"].split("<")[0].split("(")[0][:34]
            key = (corr.get(k.get("args", {}).get("correlation"), "(no launch record)")[:110], fam)
            by_op[key] += k["dur"]
            op_count[key] += 1
    print(f"GPU time by launching operator (outermost > innermost) and kernel family, a step on average "
          f"({n} steps):")
    for (op, fam), v in by_op.most_common(4 * a.top):
        print(f"  {v / 1e3 / n:8.2f} ms  {op_count[(op, fam)] / n:6.0f} x  {fam:34}  {op}")

if not a.gaps:
    raise SystemExit(0)
# The launch (cuda_runtime) of every kernel, by correlation id; the Python frames by thread, for lookup by time.
launch = {e["args"]["correlation"]: e for e in events if e.get("ph") == "X" and e.get("cat") == "cuda_runtime"
          and "correlation" in e.get("args", {})}
frames = collections.defaultdict(list)
for e in events:
    if e.get("ph") == "X" and e.get("cat") == "python_function" and "megatron/" in e["name"]:
        frames[e["tid"]].append(e)
starts = {}
for tid, fs in frames.items():
    fs.sort(key=lambda f: f["ts"])
    starts[tid] = [f["ts"] for f in fs]


def place(ts, tid):
    """The innermost megatron/ frame (file:line function) open on thread tid at time ts: frames nest, so
    it is the latest-starting one that is still open."""
    fs = frames.get(tid, [])
    for i in range(bisect.bisect_right(starts.get(tid, []), ts) - 1, max(-1, bisect.bisect_right(starts.get(tid, []), ts) - 50000), -1):
        if ts < fs[i]["ts"] + fs[i]["dur"]:
            return fs[i]["name"].split("megatron/", 1)[1][:90]
    return "(no Megatron frame: the autograd thread, or C++)"


by_place, by_kind = collections.Counter(), collections.Counter()
count = collections.Counter()
for st in steps:
    t0, t1 = st["ts"], st["ts"] + st["dur"]
    ks = sorted((e for e in gpu if t0 <= e["ts"] < t1), key=lambda e: e["ts"])
    end = t0
    for k in ks:
        gap = k["ts"] - end
        if gap > 5:  # µs: below this a gap is the launch queue's own spacing
            l = launch.get(k.get("args", {}).get("correlation"))
            where = place(l["ts"], l["tid"]) if l else "(no launch record)"
            waited = any(end <= s_["ts"] + s_["dur"] <= k["ts"] for s_ in syncs)
            by_place[where] += gap
            count[where] += 1
            by_kind["after a host wait" if waited else "host behind, no wait"] += gap
        end = max(end, k["ts"] + k["dur"])
    if t1 > end:
        by_kind["after the step's last kernel"] += t1 - end
n = max(len(steps), 1)
# The GPU's work by where it was launched: kernel families by innermost Megatron frame (the forward's and
# the optimizer's frames; the backward runs on autograd's thread, without Python frames, under one name).
by_site, site_count = collections.Counter(), collections.Counter()
for st in steps:
    t0, t1 = st["ts"], st["ts"] + st["dur"]
    for k in gpu:
        if not t0 <= k["ts"] < t1:
            continue
        l = launch.get(k.get("args", {}).get("correlation"))
        where = place(l["ts"], l["tid"]) if l else "(no launch record)"
        key = (where, k["name"].split("<")[0].split("(")[0][:40])
        by_site[key] += k["dur"]
        site_count[key] += 1
print(f"GPU time by launch site and kernel family, a step on average ({n} steps):")
for (where, fam), v in by_site.most_common(3 * a.top):
    print(f"  {v / 1e3 / n:8.2f} ms  {site_count[(where, fam)] / n:6.0f} x  {fam:40}  {where}")
print(f"GPU idle inside the steps, a step on average ({n} steps):")
for k, v in by_kind.most_common():
    print(f"  {v / 1e3 / n:8.2f} ms  {k}")
print("by where the host launched the work that ended the gap (innermost Megatron frame):")
for k, v in by_place.most_common(a.top):
    print(f"  {v / 1e3 / n:8.2f} ms  {count[k] / n:6.1f} gaps  {k}")
