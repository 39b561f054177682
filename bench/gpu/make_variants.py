#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the H200 benchmark's recipe variants (one recompute choice changed at a time against the
matched [] control) as JSON files into DIR and prints their names, one a line."""
import copy
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

SELECTIVE = lambda *labels: {"recompute_granularity": "selective", "recompute_modules": list(labels)}
FULL = lambda method, k: {"recompute_granularity": "full", "recompute_method": method, "recompute_num_layers": k,
                          "recompute_modules": None}

VARIANTS = [
    ("dense-fused", "dense-gpt.json", {"attention_backend": "fused"}, [
        ("none", SELECTIVE()), ("core_attn", SELECTIVE("core_attn")), ("layernorm", SELECTIVE("layernorm")),
        ("mlp", SELECTIVE("mlp")), ("full-uniform-1", FULL("uniform", 1)), ("full-block-4", FULL("block", 4)),
    ]),
    ("dense-unfused", "dense-gpt.json", {"attention_backend": "unfused"}, [
        ("none", SELECTIVE()), ("core_attn", SELECTIVE("core_attn")), ("full-uniform-1", FULL("uniform", 1)),
    ]),
    ("moonlight", "moonlight-like.json", {}, [
        ("none", SELECTIVE()), ("mla_up_proj", SELECTIVE("mla_up_proj")), ("moe_act", SELECTIVE("moe_act")),
        ("layernorm+moe_act", SELECTIVE("layernorm", "moe_act")), ("core_attn", SELECTIVE("core_attn")),
        ("moe", SELECTIVE("moe")), ("full-uniform-1", FULL("uniform", 1)),
    ]),
]


def main():
    out = sys.argv[1]
    only = set(sys.argv[2:])
    os.makedirs(out, exist_ok=True)
    for model, base_file, base_patch, choices in VARIANTS:
        base = json.load(open(os.path.join(HERE, "recipes", base_file)))
        base.update(base_patch)
        for choice, patch in choices:
            name = f"{model}__{choice}"
            if only and model not in only and name not in only:
                continue
            r = copy.deepcopy(base)
            r.update(patch)
            r["name"] = name
            with open(os.path.join(out, name + ".json"), "w") as f:
                json.dump(r, f, indent=1)
            print(name)


if __name__ == "__main__":
    main()
