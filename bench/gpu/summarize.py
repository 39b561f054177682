#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Reads worker.jsonl (recompute-bench streams, each after a {"event":"variant"} line) and eager.jsonl
(bench/torch_eager/eager_stack.py) from DIR and prints a Markdown table: per recompute choice, the
worker's and eager PyTorch's step time and peak allocated / reserved per phase."""
import json
import os
import sys

GIB = 1024 ** 3


def load(path):
    rows = []
    if os.path.exists(path):
        for line in open(path):
            line = line.strip()
            if line.startswith("{"):
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError:
                    pass
    return rows


def main():
    d = sys.argv[1]
    worker, current = {}, None
    for j in load(os.path.join(d, "worker.jsonl")):
        if j["event"] == "variant":
            current = j["name"]
            worker[current] = {}
        elif current:
            if j["event"] == "iteration" and "first_iteration" not in worker[current]:
                worker[current]["first_iteration"] = j
            if j["event"] == "iteration" and j.get("phase") == "steady":
                worker[current].setdefault("steady", []).append(j)
            worker[current][j["event"]] = j
    eager, rate = {}, None
    for j in load(os.path.join(d, "eager.jsonl")):
        if j["event"] == "matmul_rate":
            rate = j["tflops"]
        elif j["event"] == "eager_result":
            eager[os.path.basename(j["recipe"])[:-5]] = j
    g = lambda v: f"{v / GIB:.2f}" if isinstance(v, (int, float)) else "-"
    ms = lambda v: f"{v:.1f}" if isinstance(v, (int, float)) else "-"
    print(f"bf16 8192^3 matmul rate on this GPU: {rate:.0f} TFLOP/s\n" if rate else "")
    print("| recipe / choice | worker ms | eager ms | worker/eager | worker TFLOP/s (model) | % of matmul rate "
          "| worker peak alloc GiB (fwd/bwd/opt) | eager peak alloc GiB (fwd/bwd/opt) | worker / eager peak reserved GiB "
          "| worker fwd/bwd/opt ms | first loss worker / eager | status |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in sorted(set(worker) | set(eager), key=lambda n: (n.split("__")[0], list(worker).index(n) if n in worker else 99)):
        w = worker.get(name, {})
        res, summ = w.get("result", {}), w.get("rank_summary", {})
        e = eager.get(name, {})
        wms, ems = res.get("steady_step_ms"), e.get("steady_step_ms")
        ratio = f"{wms / ems:.3f}" if wms and ems else "-"
        tf = res.get("model_tflops")
        pct = f"{100 * tf / rate:.0f}%" if tf and rate else "-"
        wp, ep = summ.get("phase_peaks", {}), e.get("phase_peaks", {})
        trio = lambda p: "/".join(g(p.get(k, {}).get("allocated")) for k in ("forward", "backward", "optimizer"))
        wl, el = w.get("first_iteration", {}).get("loss"), e.get("first_loss")
        losses = f"{wl:.4f} / {el:.4f}" if isinstance(wl, float) and isinstance(el, float) else "-"
        steady = w.get("steady", [])
        mean = lambda k: sum(i[k] for i in steady) / len(steady) if steady and all(k in i for i in steady) else None
        phases = "/".join(ms(mean(k)) for k in ("forward_ms", "backward_ms", "optimizer_ms"))
        status = f"{res.get('status', 'none')} / {e.get('status', 'none')}"
        if res.get("status") not in (None, "pass"):
            status += f" ({res.get('stage')}: {res.get('message', '')[:60]})"
        print(f"| {name} | {ms(wms)} | {ms(ems)} | {ratio} | {tf:.0f} | {pct} | {trio(wp)} (max {g(summ.get('peak_allocated'))}) "
              f"| {trio(ep)} (max {g(e.get('peak_allocated'))}) | {g(summ.get('peak_reserved'))} / {g(e.get('peak_reserved'))} | {phases} | {losses} | {status} |"
              if tf else
              f"| {name} | {ms(wms)} | {ms(ems)} | {ratio} | - | - | {trio(wp)} | {trio(ep)} | {g(summ.get('peak_reserved'))} / {g(e.get('peak_reserved'))} | {phases} | {losses} | {status} |")


if __name__ == "__main__":
    main()
