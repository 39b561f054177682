#!/usr/bin/env python3
# What holds the worker's peak: from one recompute-bench stream (JSON lines), the peak of rank_summary and
# its phase, then that phase's peak_attribution, by category and the activations by region (largest first,
# in GB). Beside Megatron-LM's own peak in probe_flags.sh and snapshot_compare.sh.
# Usage: worker_peak.py WORKER.jsonl [--heading]   (--heading: the peak line is a "## " heading)
import argparse
import json


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("stream", help="the worker's JSON-lines stream")
    ap.add_argument("--heading", action="store_true", help='print the peak line as a "## " heading')
    args = ap.parse_args()
    lead = "## " if args.heading else "   "
    with open(args.stream) as f:
        ev = [json.loads(l) for l in f if l.startswith("{")]
    rs = [e for e in ev if e.get("event") == "rank_summary"]
    if not rs:
        messages = [e.get("message") for e in ev if e.get("event") in ("error", "result")]
        print(f"{lead}worker: no rank_summary", messages)
        return
    peak, phase = rs[0]["peak_allocated"], rs[0].get("peak_phase")
    print(f"{lead}worker peak {peak/1e9:.3f} GB in {phase}")
    for e in ev:
        if e.get("event") == "peak_attribution" and e.get("phase") == phase:
            for k, v in sorted(e["categories"].items(), key=lambda kv: -kv[1]):
                print(f"   {v/1e9:8.3f}  {k}")
            reg = {}
            for a in e.get("activations", []):
                reg[a["region"]] = reg.get(a["region"], 0) + a["bytes"]
            for k, v in sorted(reg.items(), key=lambda kv: -kv[1]):
                print(f"   {v/1e9:8.3f}    activations/{k}")


if __name__ == "__main__":
    main()
