#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The worker's layer stack written in PyTorch eager, with torch.utils.checkpoint at the same boundaries.

The comparison side of the H200 benchmark (docs/benchmarks.md, "Worker on the H200"): for each recipe
file it builds the same model as recompute-bench (same shapes, same ops in the same order: norms,
projections, unfused or scaled_dot_product_attention core attention, MLA up-projection with RoPE, dense
MLP or grouped MoE with a per-expert loop, fp32 main parameters with fused AdamW) and measures the same
things the same way: peak allocated / reserved per phase from the caching allocator, device-synchronised
step time after warm-up. Every label is a torch.utils.checkpoint (non-reentrant) around the same region;
PyTorch has no output-discard checkpoint, so for layernorm / moe_act / mla_up_proj it replays the region
but the consumers still hold its output (that difference is part of what the comparison shows).

Usage: eager_stack.py [--device cuda] [--warmup N] [--iters N] RECIPE.json ...   (one JSON line per recipe)
       eager_stack.py --matmul-rate     (bf16 8192^3 matrix-multiply rate of this GPU, TFLOP/s)
"""
import argparse
import json
import math
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

FLOPS = {"forward": 0, "replay": 0}


def is_moe_layer(r, layer):
    experts = r.get("num_moe_experts")
    if not experts:
        return False
    freq = r.get("moe_layer_freq", 1)
    if isinstance(freq, int):
        return layer % freq == 0
    if len(freq) == 1:
        return layer % freq[0] == 0
    return bool(freq[layer])


def first_stage_layers(r):
    pp = r.get("pipeline_model_parallel_size", 1) or 1
    vpp = r.get("virtual_pipeline_model_parallel_size") or 1
    n = r["num_layers"]
    per_chunk = n // (pp * vpp)
    layers, chunks = [], []
    for v in range(vpp):
        for i in range(per_chunk):
            layers.append(v * (n // vpp) + i)
            chunks.append(v)
    return layers, chunks


class Stack:
    def __init__(self, r, device, seed):
        self.r = r
        self.dev = device
        self.dtype = torch.bfloat16 if r.get("bf16") else (torch.float16 if r.get("fp16") else torch.float32)
        h = r["hidden_size"]
        self.h = h
        self.heads = r["num_attention_heads"]
        self.groups = r.get("num_query_groups") or self.heads
        self.kv = r.get("kv_channels") or h // self.heads
        self.ffn = r.get("ffn_hidden_size") or 4 * h
        self.seq = r.get("seq_length", 4096)
        self.mbs = r.get("micro_batch_size", 1)
        self.vocab = r.get("vocab_size", 32000)
        self.rms = r.get("normalization", "LayerNorm") == "RMSNorm"
        self.gated = r.get("gated_linear_unit", False)
        self.silu = r.get("activation_func", "gelu") == "silu"
        self.backend = r.get("attention_backend", "fused")
        self.mla = r.get("multi_latent_attention", False)
        self.q_lora = r.get("q_lora_rank", 512) if "q_lora_rank" in r else 512
        self.q_lora = self.q_lora or 0
        self.kv_lora = r.get("kv_lora_rank", 512)
        self.dn, self.dr, self.dv = r.get("qk_head_dim", 128), r.get("qk_pos_emb_head_dim", 64), r.get("v_head_dim", 128)
        self.experts = r.get("num_moe_experts") or 0
        self.topk = r.get("moe_router_topk", 2)
        self.moe_ffn = r.get("moe_ffn_hidden_size") or self.ffn
        self.shared_ffn = r.get("moe_shared_expert_intermediate_size") or 0
        self.p_attn = r.get("attention_dropout", 0.1)
        self.p_hidden = r.get("hidden_dropout", 0.1)
        gran = r.get("recompute_granularity")
        modules = r.get("recompute_modules")
        self.modules = set(["core_attn"] if modules is None else modules) if gran == "selective" else set()
        self.layers_global, self.chunks = first_stage_layers(r)
        n = len(self.layers_global)
        self.units = []
        if gran == "full":
            method, k = r["recompute_method"], r["recompute_num_layers"]
            first = 0
            while first < n:
                end = first
                while end < n and self.chunks[end] == self.chunks[first]:
                    end += 1
                m = end - first
                if method == "uniform":
                    for idx in range(0, m, k):
                        self.units.append((first + idx, min(k, m - idx), True))
                else:
                    for idx in range(m):
                        self.units.append((first + idx, 1, idx < k))
                first = end
        else:
            self.units = [(i, 1, False) for i in range(n)]

        torch.manual_seed(seed)
        self.params = []
        P = self.param
        self.embedding = P((self.vocab, h))
        self.layers = []
        for g in self.layers_global:
            L = {"moe": is_moe_layer(r, g)}
            L["ln1_w"], L["ln2_w"] = P((h,), "one"), P((h,), "one")
            L["ln1_b"] = None if self.rms else P((h,), "zero")
            L["ln2_b"] = None if self.rms else P((h,), "zero")
            if self.mla:
                if self.q_lora:
                    L["q_down"] = P((self.q_lora, h))
                    L["q_ln_w"] = P((self.q_lora,), "one")
                    L["q_ln_b"] = None if self.rms else P((self.q_lora,), "zero")
                    L["q_up"] = P((self.heads * (self.dn + self.dr), self.q_lora))
                else:
                    L["q"] = P((self.heads * (self.dn + self.dr), h))
                L["kv_down"] = P((self.kv_lora + self.dr, h))
                L["kv_ln_w"] = P((self.kv_lora,), "one")
                L["kv_ln_b"] = None if self.rms else P((self.kv_lora,), "zero")
                L["kv_up"] = P((self.heads * (self.dn + self.dv), self.kv_lora))
                L["proj"] = P((h, self.heads * self.dv))
            else:
                L["qkv"] = P(((self.heads + 2 * self.groups) * self.kv, h))
                L["proj"] = P((h, self.heads * self.kv))
            if L["moe"]:
                L["router"] = P((self.experts, h))
                mult = 2 if self.gated else 1
                L["fc1"], L["fc2"] = [], []
                for _ in range(self.experts):  # interleaved, in the worker's order, so the draws match
                    L["fc1"].append(P((mult * self.moe_ffn, h)))
                    L["fc2"].append(P((h, self.moe_ffn)))
                if self.shared_ffn:
                    L["sfc1"] = P((mult * self.shared_ffn, h))
                    L["sfc2"] = P((h, self.shared_ffn))
            else:
                L["fc1"] = P(((2 if self.gated else 1) * self.ffn, h))
                L["fc2"] = P((h, self.ffn))
            self.layers.append(L)
        self.fn_w = P((h,), "one")
        self.fn_b = None if self.rms else P((h,), "zero")
        self.out_w = P((self.vocab, h))
        if self.backend == "unfused":
            self.mask = torch.ones(self.seq, self.seq, dtype=torch.bool, device=device).triu(1)
        if self.mla:
            d = self.dr
            inv = 1.0 / torch.pow(10000.0, torch.arange(0, d, 2, device=device, dtype=torch.float32) / d)
            ang = torch.outer(torch.arange(self.seq, device=device, dtype=torch.float32), inv)
            emb = torch.cat([ang, ang], -1).view(self.seq, 1, 1, d)
            self.cos, self.sin = emb.cos().to(self.dtype), emb.sin().to(self.dtype)

    def param(self, shape, init="normal"):
        t = torch.empty(shape, device=self.dev, dtype=self.dtype)
        with torch.no_grad():
            if init == "zero":
                t.zero_()
            elif init == "one":
                t.fill_(1.0)
            else:
                t.normal_(0.0, 0.02)
        t.requires_grad_(True)
        self.params.append(t)
        return t

    # --- the same ops as backend/engine/model.cpp ---
    def linear(self, x, w):
        FLOPS["forward"] += 2 * (x.numel() // x.shape[-1]) * w.shape[0] * w.shape[1]
        return F.linear(x, w)

    def norm(self, x, w, b):
        if not self.rms:
            return F.layer_norm(x, (x.shape[-1],), w, b, 1e-5)
        xf = x.float()
        y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5)
        return y.to(x.dtype) * w

    def dropout(self, x, p):
        return F.dropout(x, p, True) if p > 0 else x

    def act(self, x):
        a = F.silu if self.silu else F.gelu
        if not self.gated:
            return a(x)
        x1, x2 = x.chunk(2, -1)
        return a(x1) * x2

    def mlp(self, x, fc1, fc2):
        return self.linear(self.act(self.linear(x, fc1)), fc2)

    def rope(self, x):
        half = x.shape[-1] // 2
        rot = torch.cat([-x[..., half:], x[..., :half]], -1)
        return x * self.cos + rot * self.sin

    def maybe_ckpt(self, label, fn, *args):
        if label in self.modules:
            return checkpoint(fn, *args, use_reentrant=False)
        return fn(*args)

    def unfused(self, q, k, v):
        sq, b, np_, hn = q.shape
        sk, hv = k.shape[0], v.shape[3]
        query = q.reshape(sq, b * np_, hn).transpose(0, 1)
        key = k.reshape(sk, b * np_, hn).transpose(0, 1).transpose(1, 2)
        FLOPS["forward"] += 2 * b * np_ * sq * sk * hn
        scores = torch.baddbmm(torch.empty(b * np_, sq, sk, dtype=q.dtype, device=q.device), query, key,
                               beta=0.0, alpha=1.0 / math.sqrt(hn)).view(b, np_, sq, sk)
        low = q.dtype != torch.float32
        if low:
            scores = scores.float()
        scores.masked_fill_(self.mask[:sq, :sk], -10000.0)
        probs = torch.softmax(scores, -1)
        if low:
            probs = probs.to(q.dtype)
        probs = self.dropout(probs, self.p_attn)
        value = v.reshape(sk, b * np_, hv).transpose(0, 1)
        FLOPS["forward"] += 2 * b * np_ * sq * sk * hv
        ctx = torch.bmm(probs.view(b * np_, sq, sk), value)
        return ctx.view(b, np_, sq, hv).permute(2, 0, 1, 3).reshape(sq, b, np_ * hv)

    def core(self, q, k, v):
        if k.shape[2] != q.shape[2]:
            rep = q.shape[2] // k.shape[2]
            k = k.repeat_interleave(rep, 2)
            v = v.repeat_interleave(rep, 2)
        if self.backend == "unfused":
            return self.unfused(q, k, v)
        sq, b, np_, hn = q.shape
        FLOPS["forward"] += b * np_ * sq * k.shape[0] * (hn + v.shape[3])
        if hasattr(F, "scaled_dot_product_attention"):
            out = F.scaled_dot_product_attention(q.permute(1, 2, 0, 3), k.permute(1, 2, 0, 3),
                                                 v.permute(1, 2, 0, 3), dropout_p=self.p_attn, is_causal=True)
        else:  # LibTorch 1.13's Python (CPU checks of this script only): the private op, as the worker uses
            out = torch.ops.aten._scaled_dot_product_attention(q.permute(1, 2, 0, 3), k.permute(1, 2, 0, 3),
                                                      v.permute(1, 2, 0, 3), None, self.p_attn, False, True)[0]
        return out.permute(2, 0, 1, 3).reshape(sq, b, np_ * v.shape[3])

    def attention(self, L, x):
        s, b = x.shape[0], x.shape[1]
        if not self.mla:
            nq, nkv = self.heads * self.kv, self.groups * self.kv
            qkv = self.linear(x, L["qkv"])
            q = qkv[..., :nq].view(s, b, self.heads, self.kv)
            k = qkv[..., nq:nq + nkv].view(s, b, self.groups, self.kv)
            v = qkv[..., nq + nkv:].view(s, b, self.groups, self.kv)
            return self.linear(self.maybe_ckpt("core_attn", self.core, q, k, v), L["proj"])
        dn, dr, dv = self.dn, self.dr, self.dv
        q_in = self.norm(self.linear(x, L["q_down"]), L["q_ln_w"], L["q_ln_b"]) if self.q_lora else x
        kv_all = self.linear(x, L["kv_down"])
        kv_c = self.norm(kv_all[..., :self.kv_lora], L["kv_ln_w"], L["kv_ln_b"])
        k_pe = kv_all[..., self.kv_lora:]

        def up(q_in, kv_c, k_pe):
            q = self.linear(q_in, L["q_up"] if self.q_lora else L["q"]).view(s, b, self.heads, dn + dr)
            kv = self.linear(kv_c, L["kv_up"]).view(s, b, self.heads, dn + dv)
            q_pe = self.rope(q[..., dn:])
            kp = self.rope(k_pe.unsqueeze(2)).expand(s, b, self.heads, dr)
            return torch.cat([q[..., :dn], q_pe], -1), torch.cat([kv[..., :dn], kp], -1), kv[..., dn:].contiguous()

        query, key, value = self.maybe_ckpt("mla_up_proj", up, q_in, kv_c, k_pe)
        return self.linear(self.maybe_ckpt("core_attn", self.core, query, key, value), L["proj"])

    def moe_layer(self, L, x):
        h = x.shape[-1]
        tokens = x.reshape(-1, h)
        logits = self.linear(tokens, L["router"])
        topv, topi = logits.topk(self.topk, -1)
        probs = torch.softmax(topv.float(), -1).to(x.dtype)
        flat = topi.reshape(-1)
        order = torch.sort(flat, stable=True).indices
        token_of = order.div(self.topk, rounding_mode="floor")
        permuted = tokens.index_select(0, token_of)
        pprobs = probs.reshape(-1).index_select(0, order)
        counts = torch.bincount(flat, minlength=self.experts).tolist()
        parts, off = [], 0
        for e, n in enumerate(counts):
            if n:
                parts.append(self.linear(permuted[off:off + n], L["fc1"][e]))
            off += n
        fc1_out = torch.cat(parts, 0)
        act = self.maybe_ckpt("moe_act", lambda f, p: self.act(f) * p.unsqueeze(-1), fc1_out, pprobs)
        parts, off = [], 0
        for e, n in enumerate(counts):
            if n:
                parts.append(self.linear(act[off:off + n], L["fc2"][e]))
            off += n
        out = torch.zeros_like(tokens).index_add(0, token_of, torch.cat(parts, 0))
        if self.shared_ffn:
            out = out + self.maybe_ckpt("shared_experts", lambda t: self.mlp(t, L["sfc1"], L["sfc2"]), tokens)
        return out.view(x.shape)

    def layer(self, L, x):
        ln1 = self.maybe_ckpt("layernorm", self.norm, x, L["ln1_w"], L["ln1_b"])
        x = x + self.dropout(self.attention(L, ln1), self.p_hidden)
        ln2 = self.maybe_ckpt("layernorm", self.norm, x, L["ln2_w"], L["ln2_b"])
        if L["moe"]:
            out = self.maybe_ckpt("moe", lambda t: self.moe_layer(L, t), ln2)
        else:
            out = self.maybe_ckpt("mlp", lambda t: self.mlp(t, L["fc1"], L["fc2"]), ln2)
        return x + self.dropout(out, self.p_hidden)

    def loss(self, tokens, labels):
        x = self.dropout(F.embedding(tokens, self.embedding), self.p_hidden)
        for first, count, ckpt in self.units:
            def run(h, first=first, count=count):
                for i in range(first, first + count):
                    h = self.layer(self.layers[i], h)
                return h
            x = checkpoint(run, x, use_reentrant=False) if ckpt else run(x)
        x = self.norm(x, self.fn_w, self.fn_b)
        logits = self.linear(x, self.out_w)
        return F.cross_entropy(logits.float().view(-1, self.vocab), labels.reshape(-1))


class AdamW:
    """fp32 main parameters, moments allocated at the first step, one fused kernel (as the worker)."""

    def __init__(self, params):
        self.params = params
        self.main = [p if p.dtype == torch.float32 else p.detach().float() for p in params]
        extra = {"fused": True} if self.main[0].is_cuda else {}
        self.opt = torch.optim.AdamW(self.main, lr=3e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1, **extra)

    def step(self):
        with torch.no_grad():
            for p, m in zip(self.params, self.main):
                if m is not p:
                    m.grad = p.grad.float()
            self.opt.step()
            for p, m in zip(self.params, self.main):
                m.grad = None
                if m is not p:
                    p.copy_(m)
                p.grad = None


def run_recipe(path, device, warmup, iters, seed):
    r = json.load(open(path))
    cuda = device.startswith("cuda")
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    out = {"event": "eager_result", "recipe": path, "status": "pass"}
    stage = "build"
    try:
        stack = Stack(r, device, seed)
        opt = AdamW(stack.params)
        g = torch.Generator().manual_seed(seed + 1)
        tokens = torch.randint(stack.vocab, (stack.seq, stack.mbs), generator=g).to(device)
        labels = torch.randint(stack.vocab, (stack.seq, stack.mbs), generator=g).to(device)
        torch.manual_seed(seed + 2)
        peaks, times, losses = {}, [], []

        def note(phase):
            if cuda:
                a, rsv = torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved()
                old = peaks.get(phase, {"allocated": 0, "reserved": 0})
                peaks[phase] = {"allocated": max(old["allocated"], a), "reserved": max(old["reserved"], rsv)}
                torch.cuda.reset_peak_memory_stats()

        for it in range(1, warmup + iters + 1):
            sync()
            FLOPS["forward"] = 0
            t0 = time.perf_counter()
            if cuda:
                torch.cuda.reset_peak_memory_stats()
            stage = "forward"
            loss = stack.loss(tokens, labels)
            note("forward")
            stage = "backward"
            loss.backward()
            lv = loss.detach()
            del loss
            note("backward")
            stage = "optimizer-init" if it == 1 else "optimizer"
            opt.step()
            sync()
            note(stage)
            ms = (time.perf_counter() - t0) * 1e3
            losses.append(lv.item())
            if it > warmup:
                times.append(ms)
        out.update({
            "steady_step_ms": statistics.mean(times), "steady_step_ms_median": statistics.median(times),
            "phase_peaks": peaks,
            "peak_allocated": max(p["allocated"] for p in peaks.values()) if peaks else None,
            "peak_reserved": max(p["reserved"] for p in peaks.values()) if peaks else None,
            "loss_finite": all(math.isfinite(v) for v in losses), "first_loss": losses[0], "last_loss": losses[-1],
        })
    except torch.cuda.OutOfMemoryError as e:
        out.update({"status": "oom", "stage": stage, "message": str(e).splitlines()[0]})
    return out


def matmul_rate(device):
    n = 8192
    a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(20):
        start.record()
        a @ b
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    ms = statistics.median(times)
    return {"event": "matmul_rate", "n": n, "median_ms": ms, "tflops": 2 * n ** 3 / (ms / 1e3) / 1e12,
            "device": torch.cuda.get_device_name()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("recipes", nargs="*")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--matmul-rate", action="store_true")
    a = ap.parse_args()
    if a.matmul_rate:
        print(json.dumps(matmul_rate(a.device)), flush=True)
    for path in a.recipes:
        print(json.dumps(run_recipe(path, a.device, a.warmup, a.iters, a.seed)), flush=True)


if __name__ == "__main__":
    sys.exit(main())
