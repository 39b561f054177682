#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Where a real Megatron-LM step's time goes, from the PyTorch profiler's Chrome trace (Megatron-LM's
# --profile --use-pytorch-profiler --profile-step-start A --profile-step-end B --tensorboard-dir D writes
# D/../torch_profile/rank-N.json.gz): the wall time of the profiled steps (ProfilerStep# spans), the time at
# least one GPU kernel or copy ran (the union of their intervals: the GPU is busy), the host's device
# synchronisations (cudaStreamSynchronize, cudaDeviceSynchronize, device-to-host copies and the waits
# inside them), and the GPU time by kernel name family. A step whose GPU is busy for a fraction of its wall
# time is bound by the host (Python, launches, synchronisations), not by the GPU's work.
# Usage: trace_busy.py TRACE.json[.gz] [--top N]
import argparse
import collections
import gzip
import json

ap = argparse.ArgumentParser()
ap.add_argument("trace")
ap.add_argument("--top", type=int, default=12)
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
