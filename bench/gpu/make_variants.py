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

# One rank of parallel layouts (issue 14): the worker runs the hottest rank of each (the estimator names it).
TP2SP_CP2_PP2 = {"tensor_model_parallel_size": 2, "sequence_parallel": True, "context_parallel_size": 2,
                 "pipeline_model_parallel_size": 2, "data_parallel_size": 2, "global_batch_size": 8}
TP4_PP4_VPP2 = {"tensor_model_parallel_size": 4, "pipeline_model_parallel_size": 4,
                "virtual_pipeline_model_parallel_size": 2, "data_parallel_size": 4,
                "use_distributed_optimizer": True, "global_batch_size": 32}
TP8SP_CP2 = {"tensor_model_parallel_size": 8, "sequence_parallel": True, "context_parallel_size": 2,
             "data_parallel_size": 2, "micro_batch_size": 4}
TP2SP_EP8 = {"tensor_model_parallel_size": 2, "sequence_parallel": True, "expert_model_parallel_size": 8,
             "data_parallel_size": 4, "use_distributed_optimizer": True}
DENSE_CHOICES = VARIANTS[0][3]
MOE_CHOICES = VARIANTS[2][3]
LAYOUT_VARIANTS = [
    ("dense-fused-tp2sp-cp2-pp2", "dense-gpt.json", dict(attention_backend="fused", **TP2SP_CP2_PP2), DENSE_CHOICES),
    ("dense-fused-tp4-pp4-vpp2", "dense-gpt.json", dict(attention_backend="fused", **TP4_PP4_VPP2), DENSE_CHOICES),
    ("dense-fused-tp8sp-cp2", "dense-gpt.json", dict(attention_backend="fused", **TP8SP_CP2), DENSE_CHOICES),
    ("moonlight-tp2sp-ep8", "moonlight-like.json", TP2SP_EP8, MOE_CHOICES),
    # MoE layers under TP need sequence parallelism: Megatron raises without it (rule RT16).
    ("moonlight-tp4sp-pp4-vpp2", "moonlight-like.json", dict(sequence_parallel=True, **TP4_PP4_VPP2), MOE_CHOICES),
    # As Megatron-LM and Bridge run pipelines: each sent chunk output freed (deallocate_pipeline_outputs).
    ("dense-fused-tp4-pp4-vpp2-dealloc", "dense-gpt.json",
     dict(attention_backend="fused", deallocate_pipeline_outputs=True, **TP4_PP4_VPP2), DENSE_CHOICES),
    ("moonlight-tp4sp-pp4-vpp2-dealloc", "moonlight-like.json",
     dict(sequence_parallel=True, deallocate_pipeline_outputs=True, **TP4_PP4_VPP2), MOE_CHOICES),
]


def main():
    out = sys.argv[1]
    only = set(sys.argv[2:])
    os.makedirs(out, exist_ok=True)
    # The layout variants only when asked for by name (the default set stays the one-rank benchmark).
    groups = VARIANTS + [v for v in LAYOUT_VARIANTS if any(o.split("__")[0] == v[0] for o in only)]
    for model, base_file, base_patch, choices in groups:
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
