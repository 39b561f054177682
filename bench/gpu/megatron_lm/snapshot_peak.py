#!/usr/bin/env python3
# What real Megatron-LM holds at its peak: replays the caching allocator's trace in a CUDA memory snapshot
# (Megatron's --record-memory-history / --memory-snapshot-path, torch.cuda.memory._dump_snapshot), finds the
# moment allocated bytes were highest, and groups the blocks live then by the innermost Megatron source line
# that allocated them (and by the module file). Prints a table; --json writes the same as JSON.
# Usage: snapshot_peak.py SNAPSHOT.pickle [--top N] [--json OUT.json]
import argparse
import collections
import json
import pickle
import sys


def frame_key(frames, depth=1):
    """The innermost `depth` frames inside megatron/ (file:line function), else the innermost frame."""
    inside = [f for f in frames if "/megatron/" in f.get("filename", "")]
    if not inside:
        if not frames:
            return "(no Python frame: autograd engine / C++)"
        f = frames[0]
        return f"{f['filename'].split('/')[-1]}:{f['line']} {f['name']}"
    keys = []
    for f in inside[:depth]:
        path = f["filename"].split("/megatron/", 1)[1]
        keys.append(f"megatron/{path}:{f['line']} {f['name']}")
    return " < ".join(keys)


def in_backward(frames):
    names = {f.get("name", "") for f in frames}
    return bool(names & {"backward", "backward_step", "_engine_run_backward"})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("snapshot")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--depth", type=int, default=1)
    ap.add_argument("--json")
    a = ap.parse_args()
    snap = pickle.load(open(a.snapshot, "rb"))
    traces = snap.get("device_traces") or []
    trace = traces[0] if traces else []
    live = {}  # addr -> (size, frames, event index)
    cur = peak = 0
    peak_at = -1
    for i, e in enumerate(trace):
        act = e.get("action")
        if act == "alloc":
            live[e["addr"]] = (e["size"], e.get("frames", []), i)
            cur += e["size"]
            if cur > peak:
                peak, peak_at = cur, i
        elif act == "free_requested":  # the allocated-bytes statistic drops here, not at free_completed
            blk = live.pop(e["addr"], None)
            if blk:
                cur -= blk[0]
    # Second pass to the peak event, keeping the live set at that point.
    live = {}
    for i, e in enumerate(trace[: peak_at + 1]):
        act = e.get("action")
        if act == "alloc":
            live[e["addr"]] = (e["size"], e.get("frames", []), i)
        elif act == "free_requested":  # the allocated-bytes statistic drops here, not at free_completed
            live.pop(e["addr"], None)
    groups = collections.Counter()
    counts = collections.Counter()
    for size, frames, _ in live.values():
        k = frame_key(frames, a.depth)
        groups[k] += size
        counts[k] += 1
    ev = trace[peak_at] if peak_at >= 0 else {}
    out = {
        "snapshot": a.snapshot,
        "events": len(trace),
        "ring_full": len(trace) >= 100000,
        "peak_bytes": peak,
        "peak_event": peak_at,
        "peak_alloc_frames": [f"{f['filename'].split('/')[-1]}:{f['line']} {f['name']}" for f in ev.get("frames", [])[:12]],
        "peak_in_backward": in_backward(ev.get("frames", [])),
        "groups": [{"where": k, "bytes": v, "blocks": counts[k]} for k, v in groups.most_common()],
    }
    print(f"# {a.snapshot}: {len(trace)} trace events{' (ring full: early events lost!)' if out['ring_full'] else ''}")
    print(f"# peak allocated {peak / 1e9:.3f} GB at event {peak_at}; the allocation that made it:")
    for f in out["peak_alloc_frames"]:
        print(f"#   {f}")
    print(f"{'GB':>8} {'blocks':>6}  where (innermost Megatron frame)")
    for g in out["groups"][: a.top]:
        print(f"{g['bytes'] / 1e9:8.3f} {g['blocks']:6d}  {g['where']}")
    rest = sum(g["bytes"] for g in out["groups"][a.top:])
    print(f"{rest / 1e9:8.3f} {'':6}  (the other {max(0, len(out['groups']) - a.top)} places)")
    if a.json:
        json.dump(out, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    sys.exit(main())
