// SPDX-License-Identifier: Apache-2.0
// The step-time model (step_time.h). Each region is a list of forward operations with their FLOPs or bytes
// and the kernels they launch; the backward and the replay are derived from them by fixed rules stated
// where they are applied, so a region is described once.
#include "core/step_time.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "core/attention_softmax.h"
#include "core/comparison.h"
#include "core/model_shape.h"
#include "core/recompute_labels.h"
#include "core/rules.h"

namespace rs {

namespace {

enum class Rate { Matmul, Grouped, Attention, Elementwise, UnfusedAttention, ScoreDropout, Fp8Matmul };

// One forward operation of a region on one rank, one micro-batch.
struct Op {
    Rate rate = Rate::Elementwise;
    double flops = 0; // Matmul, Grouped, Attention
    double bytes = 0; // Elementwise: bytes read and written
    double kernels = 1; // kernels it launches
    double lookup_flops = 0; // the size a product's rate is looked up at (one GEMM's FLOPs)
    double scores = 0; // UnfusedAttention, ScoreDropout: score elements b x heads x sq x sk
    double m = 0, n = 0, k = 0; // a product's sizes [m, k] x [k, n]
    // A product with a linear module's weight (model_shape.h LoraLinear, kLoraUnnamed for one no LoRA target
    // names): under PEFT its weight is frozen and its backward computes the input's gradient alone.
    uint32_t linear = 0;
    // Where it runs. Both: the forward's work (and a replay's), and the backward's derived from it. One
    // side only (Elementwise): `bytes` and `kernels` as they are there, nothing on the other side (the
    // forward side includes a replay).
    enum class Side { Both, ForwardOnly, BackwardOnly } side = Side::Both;
    bool oneSided() const { return side != Side::Both; }
    bool runsIn(bool backward) const
    {
        return side == Side::Both || (side == Side::BackwardOnly) == backward;
    }
};

struct RegionWork {
    std::string name; // the label table's region names where a label replays it (recompute_labels.h)
    std::vector<Op> ops;
    double out_bytes = 0; // the outputs an output-discard checkpoint copies back after its replay
    std::string source;
};

// A product [m, k] x [k, n].
Op gemm(double m, double n, double k, Rate rate = Rate::Matmul)
{
    Op o;
    o.rate = rate;
    o.flops = 2 * m * n * k;
    o.lookup_flops = o.flops;
    o.m = m;
    o.n = n;
    o.k = k;
    return o;
}

// A product with the weight of `linear`.
Op weight(Op o, uint32_t linear)
{
    o.linear = linear;
    return o;
}

Op elementwise(double bytes, double kernels = 1)
{
    Op o;
    o.rate = Rate::Elementwise;
    o.bytes = bytes;
    o.kernels = kernels;
    return o;
}

// The rank's shapes, from model_shape.h (the estimator's source) and the recipe's MLA widths.
struct Dims {
    double s = 0, b = 0, T = 0, Tsp = 0, h = 0, F = 0, np = 0, ng = 0, kv = 0, V = 0, act = 2;
    double tp = 1, etp = 1, ep = 1, cp = 1;
    bool sp = false, gated = false, mla = false, rope = false, unfused = false, grouped = false;
    double ql = 0, kvl = 0, dn = 0, dr = 0, dv = 0;
    double E = 0, topk = 0, Fm = 0, Fs = 0, R = 0;
    double L = 0, Hr = 0; // latent MoE: the latent width (0 off) and the routed experts' width (L, else h)
    double mIn = 0, mConv = 0, mDi = 0, mH = 0, mP = 0, mN = 0, mChunk = 128;
    double gIn = 0, gConv = 0, gV = 0, gHv = 0, gDk = 0, gDv = 0;
    double softmax_bytes = 4;
    bool attn_dropout = false;
    bool unfused_measured = false; // the record times the unfused chain itself (calibration.h)
    // Megatron's torch softmax path fills the causal mask in place into a view of the baddbmm output
    // (fused_softmax.py forward_torch_softmax, transformer/utils.py attention_mask_func): the local spec's
    // unfused attention without the fused masked-softmax kernel, on scores not first copied to fp32.
    bool mask_on_scores_view = false;
    // FP8 through Transformer Engine's linears (the TE spec with fp8), and whether the record has FP8 GEMM
    // rates to time them with.
    bool fp8 = false, fp8_rates = false;
    bool dropout_measured = false;
    // DSA (model_shape.h): the indexer's heads and head dim, the keys a query keeps, the keys a rank scores.
    double ih = 0, idim = 0, K = 0, S = 0;
    // PEFT (Bridge's LoRA): the adapted linears (LoraLinear bits) and the adapters' rank; peft off: none.
    bool peft = false;
    uint32_t lora = 0;
    double lora_dim = 0;
};

Dims dimsOf(const Recipe& r, const CalibrationRates& c)
{
    const ModelShape m = modelShape(r);
    const ParallelSizes p = parallelSizes(r);
    Dims d;
    d.tp = p.tp;
    d.etp = p.etp;
    d.ep = p.ep;
    d.cp = p.cp;
    d.sp = p.sp;
    d.s = double(r.seq_length) / p.cp;
    d.b = r.micro_batch_size;
    d.T = d.s * d.b;
    d.Tsp = d.sp ? d.T / d.tp : d.T;
    d.h = double(m.hidden);
    d.F = double(m.ffn);
    d.np = double(m.heads) / d.tp;
    d.ng = std::max(1.0, double(m.query_groups) / d.tp);
    d.kv = double(m.kv_channels);
    d.V = double(m.vocab);
    d.act = !r.bf16 && !r.fp16 ? 4 : 2;
    d.gated = r.gated_linear_unit;
    d.mla = r.multi_latent_attention;
    d.rope = r.position_embedding_type == "rope" || r.position_embedding_type == "mrope";
    // The local spec builds the unfused DotProductAttention whatever the backend says (estimator.cpp).
    const bool te = r.transformer_impl == "transformer_engine" || isHybrid(r);
    d.unfused = !te || r.attention_backend == "unfused";
    d.softmax_bytes = r.attention_softmax_in_fp32 || r.apply_query_key_layer_scaling ? 4 : d.act;
    d.attn_dropout = r.attention_dropout > 0;
    d.unfused_measured = c.unfused_attention_fwd_gscores > 0 && c.unfused_attention_bwd_gscores > 0;
    d.dropout_measured = c.score_dropout_fwd_gscores > 0 && c.score_dropout_bwd_gscores > 0;
    d.mask_on_scores_view = !te && d.unfused
        && !fusedMaskedSoftmaxApplies(r, r.micro_batch_size, int64_t(d.np), int64_t(d.s), int64_t(d.s * d.cp))
        && !(d.softmax_bytes == 4 && d.act < 4);
    d.grouped = r.moe_grouped_gemm;
    d.fp8 = te && r.fp8 && !r.fp8->empty();
    d.fp8_rates = d.fp8 && !c.fp8_matmul.empty();
    d.peft = isPeft(r);
    d.lora = loraTargets(r);
    d.lora_dim = r.peft_dim;
    d.ql = r.q_lora_rank.value_or(0);
    d.kvl = r.kv_lora_rank;
    d.dn = r.qk_head_dim;
    d.dr = r.qk_pos_emb_head_dim;
    d.dv = r.v_head_dim;
    d.E = double(m.experts);
    d.topk = r.moe_router_topk;
    d.Fm = double(m.moe_ffn);
    d.Fs = double(m.shared_ffn);
    d.L = double(m.moe_latent);
    d.Hr = double(m.routed_width);
    // Routed tokens per rank of one MoE layer: balanced over the EP ranks, gathered over expert-TP under SP,
    // capped by a capacity factor (the estimator's routedTokens).
    d.R = d.Tsp * d.topk * (d.sp ? d.etp : 1);
    if (r.moe_expert_capacity_factor)
        d.R *= std::min(1.0, *r.moe_expert_capacity_factor);
    d.mIn = double(m.mamba_in_proj);
    d.mConv = double(m.mamba_conv_dim);
    d.mDi = double(m.mamba_d_inner);
    d.mH = double(m.mamba_heads);
    d.mP = double(m.mamba_head_dim);
    d.mN = double(m.mamba_state);
    d.mChunk = std::max(1, r.mamba_chunk_size);
    d.gIn = double(m.gdn_in_proj);
    d.gConv = double(m.gdn_conv_dim);
    d.gV = double(m.gdn_v);
    d.gHv = double(m.gdn_value_heads);
    d.gDk = double(m.gdn_key_dim);
    d.gDv = double(m.gdn_value_dim);
    d.ih = double(m.dsa_index_heads);
    d.idim = double(m.dsa_index_head_dim);
    d.S = d.s * d.cp;
    d.K = std::min(double(m.dsa_topk), d.S);
    return d;
}

RegionWork norm(const char* name, const Dims& d)
{
    // RMSNorm / LayerNorm over the layer's residual stream (T / TP rows under SP): read and write.
    return { name, { elementwise(2 * d.Tsp * d.h * d.act) }, d.Tsp * d.h * d.act,
        "2 x rows x h x dtype bytes (read, write)" };
}

RegionWork residual(const Dims& d)
{
    // bias-dropout-add (fused): the branch's output and the residual read, the sum written.
    return { "residual", { elementwise(3 * d.Tsp * d.h * d.act) }, 0, "3 x rows x h x dtype bytes" };
}

std::vector<RegionWork> attentionRegions(const Dims& d)
{
    std::vector<RegionWork> out;
    if (d.mla) {
        RegionWork proj { "attention_projections", {}, 0,
            "MLA: linear_q_down_proj T x h x q_lora_rank, linear_kv_down_proj T x h x (kv_lora_rank + rope "
            "dim), their norms, linear_proj T x heads/TP x v_head_dim x h (multi_latent_attention.py)" };
        if (d.ql > 0)
            proj.ops.push_back(weight(gemm(d.T, d.ql, d.h), kLoraQDown));
        proj.ops.push_back(weight(gemm(d.T, d.kvl + d.dr, d.h), kLoraKvDown));
        proj.ops.push_back(elementwise(2 * d.T * (d.ql + d.kvl) * d.act, 2));
        proj.ops.push_back(weight(gemm(d.T, d.h, d.np * d.dv), kLoraProj));
        out.push_back(proj);
        RegionWork up { "mla_up_proj", {}, d.T * d.np * (2 * (d.dn + d.dr) + d.dv) * d.act,
            "linear_q_up_proj T x q_lora_rank x heads/TP x (qk + rope dims), linear_kv_up_proj T x "
            "kv_lora_rank x heads/TP x (qk + v dims), RoPE and the q / k / v copies "
            "(qkv_up_proj_and_rope_apply)" };
        up.ops.push_back(
            weight(gemm(d.T, d.np * (d.dn + d.dr), d.ql > 0 ? d.ql : d.h), d.ql > 0 ? kLoraQUp : kLoraQProj));
        up.ops.push_back(weight(gemm(d.T, d.np * (d.dn + d.dv), d.kvl), kLoraKvUp));
        up.ops.push_back(elementwise(2 * d.T * d.np * (2 * (d.dn + d.dr) + d.dv) * d.act, 8));
        out.push_back(up);
        RegionWork core { "core_attn", {}, 0,
            "causal half of QK^T (qk + rope dims) and PV (v dim): b x heads/TP x s^2 x (qk + rope + v), at "
            "the "
            "fused attention rate" };
        Op a;
        a.rate = Rate::Attention;
        a.flops = 0.5 * 2 * d.b * d.np * d.s * d.s * (d.dn + d.dr + d.dv);
        a.kernels = 2;
        core.ops.push_back(a);
        out.push_back(core);
        return out;
    }
    RegionWork proj { "attention_projections", {}, 0,
        "linear_qkv T x h x (heads + 2 groups)/TP x kv_channels, RoPE on q and k, linear_proj T x heads/TP x "
        "kv_channels x h (attention.py)" };
    proj.ops.push_back(weight(gemm(d.T, (d.np + 2 * d.ng) * d.kv, d.h), kLoraQkv));
    if (d.rope)
        proj.ops.push_back(elementwise(2 * d.T * (d.np + d.ng) * d.kv * d.act, 2));
    proj.ops.push_back(weight(gemm(d.T, d.h, d.np * d.kv), kLoraProj));
    out.push_back(proj);
    RegionWork core { "core_attn", {}, 0, "" };
    if (d.unfused && d.unfused_measured) {
        // The chain the calibration timed (baddbmm, the causal mask, the softmax, PV) per score element, and
        // dropout over the probabilities at its own measured rate.
        core.source = "unfused: b x heads/TP x s^2 scores at the calibrated unfused-attention chain's rate "
                      "(baddbmm, causal mask, softmax, PV: calibration.h), attention dropout at the "
                      "score-dropout rate (dot_product_attention.py)";
        const double scores = d.b * d.np * d.s * d.s;
        Op chain;
        chain.rate = Rate::UnfusedAttention;
        chain.scores = scores;
        chain.flops = 2 * 2 * scores * d.kv;
        chain.kernels = 4;
        core.ops.push_back(chain);
        if (d.attn_dropout) {
            Op drop;
            drop.rate = d.dropout_measured ? Rate::ScoreDropout : Rate::Elementwise;
            drop.scores = scores;
            drop.bytes = d.dropout_measured ? 0 : scores * 3 * d.act;
            drop.kernels = 2;
            core.ops.push_back(drop);
        }
    } else if (d.unfused) {
        // DotProductAttention: baddbmm QK^T over the whole square, the scaled masked softmax, dropout, PV.
        core.source
            = "unfused: 2 x b x heads/TP x s^2 x kv (QK^T) + the same (PV) at the matmul rate, softmax "
              "(and dropout) over b x heads/TP x s^2 scores (dot_product_attention.py); the record has no "
              "unfused-attention rate";
        const double scores = d.b * d.np * d.s * d.s;
        Op qk = gemm(d.s, d.s, d.kv);
        qk.flops *= d.b * d.np;
        qk.lookup_flops = qk.flops;
        core.ops.push_back(qk);
        core.ops.push_back(elementwise(scores * (d.act + d.softmax_bytes + d.act), 2));
        if (d.attn_dropout)
            core.ops.push_back(elementwise(scores * 3 * d.act, 2));
        core.ops.push_back(qk);
    } else {
        core.source = "causal half of 4 x b x heads/TP x s^2 x kv_channels (QK^T, PV) at the fused attention "
                      "rate";
        Op a;
        a.rate = Rate::Attention;
        a.flops = 0.5 * 4 * d.b * d.np * d.s * d.s * d.kv;
        a.kernels = 2;
        core.ops.push_back(a);
    }
    if (d.unfused && d.mask_on_scores_view) {
        // The in-place mask on a view of the scores costs the backward what the calibrated chain (mask filled
        // into the product itself) does not: autograd's AsStridedBackward (a zero fill of the scores and a
        // copy of their gradient into it) and CopySlices (torch/csrc/autograd/functions/tensor.cpp) around
        // the mask's backward, whose copies of the scores' gradient the real run's profile counts: four a
        // layer and micro-batch (bench/gpu/results/h100-2026-12-07-profile-ops, 62 ms of the 364 ms step).
        // 11 passes of the scores' bytes in all, at the elementwise rate.
        Op views = elementwise(11 * d.b * d.np * d.s * d.s * d.cp * d.act, 6);
        views.side = Op::Side::BackwardOnly;
        core.ops.push_back(views);
        core.source += "; backward: the causal mask filled in place into a view of the scores "
                       "(fused_softmax.py, transformer/utils.py attention_mask_func): autograd's "
                       "AsStridedBackward and CopySlices copy the scores' gradient, 11 passes of its bytes "
                       "(counted in the real run's profile)";
    }
    out.push_back(core);
    return out;
}

// A DSA layer (estimator.cpp megatronDsa; absorbed_mla.py, dsa.py, dsa_cudnn_kernels.py at bridge-pin): MLA's
// down projections and norms, the up-projection that absorbs the key's up-projection into the query (no kv up
// GEMM), then DSAttention: the indexer's projections and its scores over every earlier key (a computing
// layer), FlashMLA's sparse attention over the top-k latent keys, the sparse indexer loss's score
// recompute, and the latent-to-value einsum. The indexer's scores and the sparse kernels at the fused
// attention rate (the record has no DSA rate).
std::vector<RegionWork> dsaRegions(const Dims& d, bool indexer)
{
    const double kw = d.kvl + d.dr, qw = d.ql > 0 ? d.ql : d.h;
    RegionWork proj { "attention_projections", {}, 0,
        "absorbed MLA: linear_q_down_proj T x h x q_lora_rank, linear_kv_down_proj T x h x (kv_lora_rank + "
        "rope dim), their norms, linear_proj T x heads/TP x v_head_dim x h (absorbed_mla.py)" };
    if (d.ql > 0)
        proj.ops.push_back(gemm(d.T, d.ql, d.h));
    proj.ops.push_back(gemm(d.T, kw, d.h));
    proj.ops.push_back(elementwise(2 * d.T * (d.ql + d.kvl) * d.act, 2));
    proj.ops.push_back(gemm(d.T, d.h, d.np * d.dv));
    RegionWork up { "mla_up_proj", {}, d.T * (d.np + 1) * kw * d.act,
        "linear_q_up_proj T x q_lora_rank x heads/TP x (qk + rope dims), the key's up-projection absorbed "
        "into "
        "the query per head (T x qk dim x kv_lora_rank), RoPE and the concatenated query and key "
        "(absorbed_mla.py qkv_up_proj_and_rope_apply)" };
    up.ops.push_back(gemm(d.T, d.np * (d.dn + d.dr), qw));
    Op absorb = gemm(d.T, d.kvl, d.dn);
    absorb.flops *= d.np;
    up.ops.push_back(absorb);
    up.ops.push_back(elementwise(2 * d.T * d.np * (d.dn + d.dr + kw) * d.act, 6));
    RegionWork core { "core_attn", {}, 0,
        "DSAttention on the cuDNN / FlashMLA kernels: the indexer's projections and the causal half of its "
        "T x keys x indexer heads x head dim scores (a computing layer), FlashMLA over T x heads/TP x top-k "
        "latent keys (qk: kv_lora_rank + rope, v: kv_lora_rank), the sparse loss's score recompute, the "
        "latent-to-value einsum (dsa.py, dsa_cudnn_kernels.py), at the fused attention rate" };
    if (indexer) {
        core.ops.push_back(gemm(d.T, d.ih * d.idim, qw));
        core.ops.push_back(gemm(d.T, d.idim + d.ih, d.h));
        Op scores;
        scores.rate = Rate::Attention;
        scores.flops = 0.5 * 2 * d.T * d.S * d.ih * d.idim;
        scores.kernels = d.ih + 2; // head by head where chunked, then the top-k
        core.ops.push_back(scores);
        core.ops.push_back(elementwise(d.T * d.S * 4 * 2, 2)); // the fp32 scores written and scanned
    }
    Op sparse;
    sparse.rate = Rate::Attention;
    sparse.flops = 2 * d.T * d.np * d.K * (kw + d.kvl) + (indexer ? 2 * d.T * d.np * d.K * kw : 0);
    sparse.kernels = indexer ? 3 : 1;
    core.ops.push_back(sparse);
    Op value = gemm(d.T, d.dv, d.kvl);
    value.flops *= d.np;
    core.ops.push_back(value);
    return { proj, up, core };
}

RegionWork denseMlp(const char* name, const Dims& d, double ffn, double rows)
{
    const double g = d.gated ? 2 : 1;
    RegionWork w { name, {}, 0,
        "linear_fc1 T x h x ffn/TP (x2 gated), the activation over T x ffn/TP, linear_fc2 T x ffn/TP x h "
        "(mlp.py)" };
    w.ops.push_back(weight(gemm(rows, g * ffn / d.tp, d.h), kLoraFc1));
    w.ops.push_back(elementwise(rows * ffn / d.tp * (g + 1) * d.act));
    w.ops.push_back(weight(gemm(rows, d.h, ffn / d.tp), kLoraFc2));
    return w;
}

std::vector<RegionWork> moeRegions(const Dims& d)
{
    std::vector<RegionWork> out;
    const double g = d.gated ? 2 : 1;
    const double local = std::max(1.0, d.E / d.ep);
    RegionWork router { "router", {}, 0,
        "the gate T x h x experts, its score function, top-k and the load-balancing loss over T x experts "
        "in fp32 (moe/router.py)" };
    router.ops.push_back(gemm(d.Tsp, d.E, d.h));
    router.ops.push_back(elementwise(4 * d.Tsp * d.E * 4, 12));
    out.push_back(router);
    // Latent MoE: the tokens projected to the latent width before dispatch and back after the combine, on
    // the rank's local tokens with the whole (duplicated) weights (moe_layer.py:278-301, 488-490, 591-592
    // at 2a75ac12; Megatron's own count: training.py:446-449, 2 x 2 x tokens x h x latent a forward).
    if (d.L > 0)
        out.push_back({ "fc1_latent_proj", { weight(gemm(d.Tsp, d.L, d.h), kLoraUnnamed) }, 0,
            "fc1_latent_proj T x h x moe_latent_size (moe_layer.py)" });
    out.push_back({ "permute", { elementwise(2 * d.R * d.Hr * d.act + d.R * 8, 10) }, 0,
        "the routed tokens R = T x top-k (balanced over EP) gathered by expert: R x h (moe_latent_size under "
        "latent MoE) read and written, the sort of R indices (moe_utils.py permute)" });
    RegionWork experts { "moe_experts", {}, 0,
        std::string(d.grouped ? "one grouped GEMM" : "a product per local expert")
            + " for linear_fc1 R x h x moe_ffn/ETP (x2 gated) and linear_fc2 R x moe_ffn/ETP x h (h: "
              "moe_latent_size under latent MoE), at the grouped-GEMM rate (experts.py)" };
    Op fc1 = weight(gemm(d.R, g * d.Fm / d.etp, d.Hr, Rate::Grouped), kLoraFc1);
    Op fc2 = weight(gemm(d.R, d.Hr, d.Fm / d.etp, Rate::Grouped), kLoraFc2);
    fc1.kernels = fc2.kernels = d.grouped ? 1 : local;
    experts.ops = { fc1, fc2 };
    out.push_back(experts);
    out.push_back(
        { "moe_act", { elementwise(d.R * d.Fm / d.etp * (g + 1) * d.act) }, d.R * d.Fm / d.etp * d.act,
            "the experts' activation over R x moe_ffn/ETP (fused bias-SwiGLU: reads FC1's output, writes "
            "half)" });
    out.push_back({ "unpermute", { elementwise(3 * d.R * d.Hr * d.act, 4) }, 0,
        "the experts' output R x h weighted by the probabilities and scatter-added back to T x h (h: "
        "moe_latent_size under latent MoE) (moe_utils.py unpermute)" });
    if (d.L > 0)
        out.push_back({ "fc2_latent_proj", { weight(gemm(d.Tsp, d.h, d.L), kLoraUnnamed) }, 0,
            "fc2_latent_proj T x moe_latent_size x h (moe_layer.py)" });
    if (d.Fs > 0)
        out.push_back(denseMlp("shared_experts", d, d.Fs, d.T));
    return out;
}

RegionWork mambaRegion(const Dims& d)
{
    // in_proj, the causal conv, the chunked SSD scan (per token and head: 2 x chunk x (state + head dim)
    // within a chunk, 4 x state x head dim for the states), the gated norm, out_proj (mamba_mixer.py).
    RegionWork w { "mamba", {}, 0,
        "in_proj T x h x in_proj/TP, conv over T x conv channels/TP, SSD T x heads/TP x (2 chunk (state + "
        "head dim) + 4 state x head dim), gated norm, out_proj T x d_inner/TP x h (mamba_mixer.py)" };
    w.ops.push_back(weight(gemm(d.T, d.mIn / d.tp, d.h), kLoraInProj));
    w.ops.push_back(elementwise(3 * d.T * d.mConv / d.tp * d.act, 3));
    Op ssd = gemm(d.T, d.mH / d.tp, d.mChunk * (d.mN + d.mP) + 2 * d.mN * d.mP);
    ssd.kernels = 6;
    ssd.lookup_flops = 2 * d.mChunk * d.mChunk * std::max(1.0, d.mP); // one chunk's product: small
    w.ops.push_back(ssd);
    w.ops.push_back(elementwise(4 * d.T * d.mDi / d.tp * d.act, 4));
    w.ops.push_back(weight(gemm(d.T, d.h, d.mDi / d.tp), kLoraOutProj));
    return w;
}

std::vector<RegionWork> gdnRegions(const Dims& d)
{
    RegionWork w { "gdn", {}, 0,
        "in_proj T x h x in_proj/TP, conv over T x conv channels/TP, the chunked gated delta rule T x value "
        "heads/TP x (2 x 64 x (key + value dim) + 4 key x value dim) (gated_delta_net)" };
    w.ops.push_back(weight(gemm(d.T, d.gIn / d.tp, d.h), kLoraInProj));
    w.ops.push_back(elementwise(3 * d.T * d.gConv / d.tp * d.act, 3));
    Op rule = gemm(d.T, d.gHv / d.tp, kGdnChunk * (d.gDk + d.gDv) + 2 * d.gDk * d.gDv);
    rule.kernels = 8;
    rule.lookup_flops = 2 * kGdnChunk * kGdnChunk * std::max(1.0, d.gDv);
    w.ops.push_back(rule);
    RegionWork n { "gdn_norm_out", { elementwise(3 * d.T * d.gV / d.tp * d.act, 2) },
        d.T * d.gV / d.tp * d.act, "the gated RMSNorm over T x value width/TP" };
    RegionWork o { "gdn_out_proj", { weight(gemm(d.T, d.h, d.gV / d.tp), kLoraOutProj) }, 0,
        "out_proj T x value width/TP x h" };
    return { w, n, o };
}

// The regions of one layer of this kind, in the order they run.
std::vector<RegionWork> layerRegions(const Recipe& r, const Dims& d, const LayerKind& kind)
{
    std::vector<RegionWork> out;
    const bool moe = kind.ffn == LayerFfn::Moe;
    if (kind.mixer == LayerMixer::Attention) {
        out.push_back(norm("input_layernorm", d));
        for (auto& w : attentionRegions(d))
            out.push_back(std::move(w));
        out.push_back(residual(d));
    } else if (kind.mixer == LayerMixer::Mamba) {
        out.push_back(mambaRegion(d)); // its input norm fused into in_proj
        out.push_back(residual(d));
    } else if (kind.mixer == LayerMixer::GatedDeltaNet) {
        for (auto& w : gdnRegions(d))
            out.push_back(std::move(w));
        out.push_back(residual(d));
    } else if (isDsaMixer(kind.mixer)) {
        out.push_back(norm("input_layernorm", d));
        for (auto& w : dsaRegions(d, kind.mixer == LayerMixer::Dsa))
            out.push_back(std::move(w));
        out.push_back(residual(d));
    }
    if (kind.ffn != LayerFfn::None) {
        out.push_back(norm("pre_mlp_layernorm", d));
        if (moe)
            for (auto& w : moeRegions(d))
                out.push_back(std::move(w));
        else
            out.push_back(denseMlp("mlp", d, d.F, d.T));
        out.push_back(residual(d));
    }
    (void)r;
    // Bridge's LoRA adds two small products beside each adapted linear's, in its region: linear_in [m, k] x
    // [k, dim] and linear_out [m, dim] x [dim, n] (peft/utils.py ParallelLinearAdapter), trained.
    if (d.peft && d.lora_dim > 0)
        for (RegionWork& w : out) {
            std::vector<Op> adapters;
            for (const Op& o : w.ops)
                if (o.linear & d.lora & ~uint32_t(kLoraUnnamed)) {
                    adapters.push_back(gemm(o.m, d.lora_dim, o.k));
                    adapters.push_back(gemm(o.m, o.n, d.lora_dim));
                }
            w.ops.insert(w.ops.end(), adapters.begin(), adapters.end());
        }
    return out;
}

// Which regions of a layer the recipe's choice replays, and how many checkpoints that takes.
struct Replay {
    bool full = false; // the whole layer
    double full_checkpoints = 0; // full: checkpoints per layer (1 / recompute_num_layers under uniform)
    std::vector<std::string> regions; // selective: region names
    std::vector<bool> discard; // per region: an output-discard checkpoint
};

// FP8 through Transformer Engine's linears with a record that times FP8 GEMMs: each product with a layer
// linear's weight (dense, and the experts' grouped ones, TE's GroupedLinear running a GEMM per expert) at the
// record's FP8 rate, and TE's cast-transposes at the elementwise rate: the input's in the forward (read in
// the dtype, written row-wise and column-wise, 1 byte each: module/linear.py, the fused cast-transpose) and
// the output gradient's in the backward. The weights' own casts (once a step) are left out.
void timeLinearsInFp8(std::vector<RegionWork>& regions, const Dims& d)
{
    for (RegionWork& w : regions) {
        std::vector<Op> casts;
        for (Op& o : w.ops) {
            const bool linear = (o.rate == Rate::Matmul && o.linear != 0) || o.rate == Rate::Grouped;
            if (!linear)
                continue;
            if (o.rate == Rate::Grouped)
                o.lookup_flops = o.flops / std::max(1.0, d.E / d.ep); // one expert's GEMM
            o.rate = Rate::Fp8Matmul;
            Op in = elementwise(o.m * o.k * (d.act + 2));
            in.side = Op::Side::ForwardOnly;
            Op grad = elementwise(o.m * o.n * (d.act + 2));
            grad.side = Op::Side::BackwardOnly;
            casts.push_back(in);
            casts.push_back(grad);
        }
        if (casts.empty())
            continue;
        w.ops.insert(w.ops.end(), casts.begin(), casts.end());
        w.source
            += "; fp8: its linears' products at the record's FP8 GEMM rate, their inputs' and output "
               "gradients' cast-transposes at the elementwise rate (transformer_engine module/linear.py)";
    }
}

Replay selectiveReplay(const Recipe& r, const LayerKind& kind)
{
    Replay rep;
    const std::vector<std::string> active = effectiveRecomputeModules(r);
    const auto has = [&active](std::string_view l) {
        return std::find(active.begin(), active.end(), l) != active.end();
    };
    for (const std::string& label : active) {
        const RecomputeLabel* row = findRecomputeLabel(label);
        if (!row || !recomputeLabelEffect(r, label).has_effect)
            continue;
        if (!row->parent.empty() && has(row->parent))
            continue; // runs inside its parent's replay, which replays it anyway
        for (std::string_view region : row->replays) {
            if (region == "input_layernorm"
                && (!isAttentionMixer(kind.mixer) || !layernormIsModule(r, kind.ffn == LayerFfn::Moe, false)))
                continue;
            if (region == "pre_mlp_layernorm"
                && (kind.ffn == LayerFfn::None || !layernormIsModule(r, kind.ffn == LayerFfn::Moe, true)))
                continue;
            if (std::find(rep.regions.begin(), rep.regions.end(), region) != rep.regions.end())
                continue;
            rep.regions.emplace_back(region);
            rep.discard.push_back(row->kind == CheckpointKind::OutputDiscard);
        }
    }
    return rep;
}

// Backward products per forward product: the input's gradient and the weight's, or under PEFT the input's
// alone for a frozen weight (TE and Megatron skip the wgrad GEMM when the weight requires no gradient).
double backwardProducts(const Op& o, bool peft)
{
    return peft && o.linear != 0 ? 1 : 2;
}

struct Rates {
    const CalibrationRates& c;
    bool peft = false;
    double gpuMs(const Op& o, bool backward) const
    {
        if (o.oneSided())
            return o.runsIn(backward) ? o.bytes / (c.elementwise_gbps * 1e6) : 0;
        const double products = backward ? backwardProducts(o, peft) : 1;
        switch (o.rate) {
        case Rate::Matmul:
            return o.flops * products / (gemmRateAt(c.matmul, o.lookup_flops) * 1e9);
        case Rate::Grouped:
            return o.flops * products / (gemmRateAt(c.grouped_gemm, o.lookup_flops) * 1e9);
        case Rate::Fp8Matmul:
            return o.flops * products / (gemmRateAt(c.fp8_matmul, o.lookup_flops) * 1e9);
        case Rate::Attention:
            return backward ? o.flops * 2.5 / (c.attention_bwd_tflops * 1e9)
                            : o.flops / (c.attention_fwd_tflops * 1e9);
        case Rate::Elementwise:
            return o.bytes * (backward ? 1.5 : 1) / (c.elementwise_gbps * 1e6);
        case Rate::UnfusedAttention:
            return o.scores
                / ((backward ? c.unfused_attention_bwd_gscores : c.unfused_attention_fwd_gscores) * 1e6);
        case Rate::ScoreDropout:
            return o.scores / ((backward ? c.score_dropout_bwd_gscores : c.score_dropout_fwd_gscores) * 1e6);
        }
        return 0;
    }
    double kernels(const Op& o, bool backward) const
    {
        if (o.oneSided())
            return o.runsIn(backward) ? o.kernels : 0;
        const bool product = o.rate == Rate::Matmul || o.rate == Rate::Grouped || o.rate == Rate::Fp8Matmul;
        return o.kernels * (backward ? (product ? backwardProducts(o, peft) : 2) : 1);
    }
};

const char* kBackwardRule
    = "backward: a product's two gradient products (2x), flash attention's five products "
      "to two (2.5x), an elementwise op's three tensors to two (1.5x)";

// Accumulates terms by phase and name.
struct Terms {
    std::map<std::pair<std::string, std::string>, TimeTerm> by;
    std::vector<std::pair<std::string, std::string>> order;
    TimeTerm& at(const std::string& phase, const std::string& name, const std::string& source)
    {
        auto key = std::make_pair(phase, name);
        auto it = by.find(key);
        if (it == by.end()) {
            order.push_back(key);
            TimeTerm t;
            t.phase = phase;
            t.name = name;
            t.source = source;
            it = by.emplace(key, t).first;
        }
        return it->second;
    }
};

// One piece of a layer phase: a region's ops in one direction, scaled.
struct Piece {
    const RegionWork* w = nullptr;
    std::string phase; // forward | backward | replay
    bool backward = false;
    double copy_bytes = 0; // replay of an output-discard region: the copy back
    double checkpoints = 0; // replay: checkpoint machinery on the host
};

// A layer's forward, or its backward with its replay, runs as one stretch: the device's time or the host's,
// whichever is longer (the MoE dispatcher reads its token counts back every layer, so the queue drains at
// least that often). Each piece's time is its share of that stretch.
void runStretch(const std::vector<Piece>& pieces, const Rates& rates, double times, Terms& terms)
{
    double gpu = 0, host = 0;
    std::vector<double> g(pieces.size()), hst(pieces.size());
    for (size_t i = 0; i < pieces.size(); ++i) {
        const Piece& p = pieces[i];
        for (const Op& o : p.w->ops) {
            g[i] += rates.gpuMs(o, p.backward);
            hst[i] += rates.kernels(o, p.backward) * rates.c.kernel_launch_us / 1000;
        }
        if (p.copy_bytes > 0) {
            g[i] += 2 * p.copy_bytes / (rates.c.elementwise_gbps * 1e6);
            hst[i] += rates.c.kernel_launch_us / 1000;
        }
        hst[i] += p.checkpoints * rates.c.checkpoint_us / 1000;
        gpu += g[i];
        host += hst[i];
    }
    const bool host_bound = host > gpu;
    for (size_t i = 0; i < pieces.size(); ++i) {
        const Piece& p = pieces[i];
        TimeTerm& t = terms.at(p.phase, p.w->name, p.w->source);
        const double ms = (host_bound ? hst[i] : g[i]) * times;
        t.ms += ms;
        if (host_bound)
            t.host_bound_ms += ms;
        for (const Op& o : p.w->ops) {
            t.flops += o.flops
                * (p.backward ? (o.rate == Rate::Attention ? 2.5 : backwardProducts(o, rates.peft)) : 1)
                * times;
            const double bytes
                = o.oneSided() ? (o.runsIn(p.backward) ? o.bytes : 0) : o.bytes * (p.backward ? 1.5 : 1);
            t.bytes += bytes * times;
            t.kernels += rates.kernels(o, p.backward) * times;
        }
        t.bytes += 2 * p.copy_bytes * times;
    }
}

std::string fmt(double v, int prec = 1)
{
    std::ostringstream s;
    s.setf(std::ios::fixed);
    s.precision(prec);
    s << v;
    return s.str();
}

// An elementwise pass's term: its bytes at `gbps` (`rate`: the rate's name in the source), or its launches
// where the host is slower.
TimeTerm elementwisePass(const char* phase, std::string name, double bytes, double kernels, double gbps,
    const char* rate, const CalibrationRates& c, std::string source)
{
    TimeTerm t;
    t.phase = phase;
    t.name = std::move(name);
    t.bytes = bytes;
    t.kernels = kernels;
    const double device_ms = bytes / (gbps * 1e6);
    const double host_ms = kernels * c.kernel_launch_us / 1000;
    t.ms = std::max(device_ms, host_ms);
    t.host_bound_ms = host_ms > device_ms ? t.ms : 0;
    t.source = std::move(source) + "; at " + rate;
    return t;
}

// Without gradient_accumulation_fusion each weight's gradient is a tensor of its own, which DDP's hook adds
// into the parameter's main_grad in the buffer's dtype (distributed_data_parallel.py
// _make_backward_post_hook: main_grad.add_(grad)) at every micro-batch: the buffer read and written, the
// gradient read. With the fusion the wgrad GEMM accumulates into main_grad itself (its output in the buffer's
// dtype): not counted.
TimeTerm mainGradAccumulation(const Recipe& r, const RankEstimate& re, const CalibrationRates& c, double m)
{
    const PhaseEstimate* fwd = re.phase("forward");
    if (r.gradient_accumulation_fusion || !fwd || re.parameters <= 0)
        return {};
    // Under PEFT only the adapters have a gradient to accumulate.
    const double trained = re.trained_parameters;
    if (trained <= 0)
        return {};
    const double buffer = double(fwd->category("gradients")) / trained; // bytes a parameter
    const double grad = r.bf16 || r.fp16 ? 2 : 4;
    const double bytes = m * trained * (2 * buffer + grad);
    // Mixed dtypes (an fp32 buffer, a 16-bit gradient) at the measured rate of that very op, where the
    // record has it.
    const bool mixed = c.accumulate_gbps > 0 && buffer != grad;
    return elementwisePass("backward", "main_grad accumulation", bytes, m * re.trained_parameter_tensors,
        mixed ? c.accumulate_gbps : c.elementwise_gbps,
        mixed ? "the measured rate of an fp32 buffer added to from a 16-bit tensor" : "the elementwise rate",
        c,
        "gradient_accumulation_fusion off: every micro-batch, main_grad.add_(grad) over the stage's "
        "parameters "
        "(the buffer read and written, the gradient read; DDP's backward hook)");
}

// The optimizer step of one rank, pass by pass over the parameters it updates (P, its shard), each pass
// at the elementwise rate: what Megatron's train_step and its mixed-precision optimizer run between two
// backward passes (megatron/training/training.py train_step, megatron/core/optimizer/optimizer.py step).
// The gradient norm and clipping are counted at Megatron's default clip_grad 1.0 with a norm above it
// (every logged step of this project's real runs; below it the scale pass is skipped).
std::vector<TimeTerm> optimizerStep(const Recipe& r, const RankEstimate& re, const CalibrationRates& c)
{
    const PhaseEstimate* opt = re.phase("optimizer");
    const PhaseEstimate* fwd = re.phase("forward");
    const double P = re.optimizer_params;
    if (!opt || !fwd || P <= 0)
        return {};
    const bool torch_adam = r.adam_implementation == "torch";
    const bool aware = precisionAwareOptimizer(r);
    // The gradient the step reads: fp32 main gradients (made from a 16-bit buffer by
    // _copy_model_grads_to_main_grads, counted in the memory estimate's optimizer phase), or the 16-bit
    // buffer itself under the precision-aware optimizer.
    const double grad = aware ? 2 : 4;
    const double state = double(opt->category("main_parameters") + opt->category("optimizer_states"));
    const double param_bytes = r.bf16 || r.fp16 ? 2 : 4;
    struct Pass {
        const char* name;
        double bytes;
        double kernels;
        std::string source;
    };
    std::vector<Pass> passes;
    passes.push_back({ "zero the gradient buffer", double(fwd->category("gradients")), 1,
        "the DDP buffer written once at the step's start (zero_grad_buffer, training.py train_step)" });
    passes.push_back({ "gradient norm", P * grad, torch_adam ? 2.0 : 1.0,
        "every gradient of the shard read once (clip_grads.py get_grad_norm_fp32)" });
    passes.push_back({ "gradient clipping", (torch_adam ? 4 : 2) * P * grad, torch_adam ? 2.0 : 1.0,
        torch_adam
            ? "src * scale then a copy back, 4 passes (megatron/core/utils.py local_multi_tensor_scale, "
              "Megatron's fallback without Transformer Engine and Apex)"
            : "one scaling pass in place, read and write (clip_grads.py clip_grad_by_total_norm_fp32)" });
    if (torch_adam)
        // torch/optim/adam.py _multi_tensor_adam, decoupled weight decay, op by op over fp32 tensors of P:
        // decay (2 passes), exp_avg mul and add (2 + 3), exp_avg_sq mul and addcmul (2 + 4), sqrt, div and
        // add of the denominator (2 + 2 + 2), addcdiv into the parameter (4): 23.
        passes.push_back({ "AdamW (torch multi-tensor)", 23 * P * 4, 9,
            "23 fp32 passes of the shard: torch.optim.AdamW foreach=True op by op (torch/optim/adam.py "
            "_multi_tensor_adam), Megatron's fallback (megatron/core/optimizer/__init__.py)" });
    else
        passes.push_back({ "AdamW (fused)", 2 * state + P * grad + (aware ? P * param_bytes : 0), 2,
            "main parameters and moments read and written once, the gradient read (Transformer Engine's or "
            "Apex's FusedAdam)" });
    if (opt->category("main_parameters") > 0 && !aware)
        passes.push_back({ "main to model parameters", P * (4 + param_bytes), 1,
            "fp32 read, 16-bit written (optimizer.py _copy_main_params_to_model_params)" });
    std::vector<TimeTerm> out;
    for (const Pass& pass : passes)
        out.push_back(elementwisePass("optimizer", pass.name, pass.bytes, pass.kernels, c.elementwise_gbps,
            "the elementwise rate", c, pass.source));
    return out;
}

} // namespace

StepTimeEstimate estimateStepTime(const Recipe& r, const CalibrationRates& c, const MemoryEstimate* memory)
{
    StepTimeEstimate e;
    e.choice = choiceSpelling(recipeChoice(r));
    e.provisional = c.provisional;
    e.rates_source
        = c.device + ", " + c.dtype + (c.provisional ? ", PROVISIONAL (not measured): " : ": ") + c.source;
    MemoryEstimate own;
    if (!memory) {
        own = estimateMemory(r, Layout::Megatron);
        memory = &own;
    }
    if (!memory->not_estimated.empty() || memory->ranks.empty()) {
        e.not_estimated = memory->not_estimated.empty() ? "no rank estimated" : memory->not_estimated;
        return e;
    }
    const Dims d = dimsOf(r, c);
    const ParallelSizes p = parallelSizes(r);
    const Rates rates { c, d.peft };
    const std::vector<LayerKind> kinds = layerKinds(r);

    // The regions of each layer kind and what the choice replays there, built once per kind.
    std::vector<std::vector<RegionWork>> regions(kLayerKindIds);
    std::vector<Replay> replays(kLayerKindIds);
    std::vector<bool> built(kLayerKindIds, false);
    const bool full = r.recompute_granularity.value_or("") == "full";
    const bool selective = r.recompute_granularity.value_or("") == "selective";
    const int full_n = std::max(1, r.recompute_num_layers.value_or(1));
    const bool block = r.recompute_method.value_or("uniform") == "block";
    // The MTP depths' layers (model_shape.h mtpShape), of the decoder's kinds.
    const MtpShape mtp = mtpShape(r);
    std::vector<LayerKind> all_kinds = kinds;
    all_kinds.insert(all_kinds.end(), mtp.layers.begin(), mtp.layers.end());
    for (const LayerKind& k : all_kinds) {
        if (built[size_t(k.id())])
            continue;
        built[size_t(k.id())] = true;
        regions[size_t(k.id())] = layerRegions(r, d, k);
        if (d.fp8_rates)
            timeLinearsInFp8(regions[size_t(k.id())], d);
        if (selective)
            replays[size_t(k.id())] = selectiveReplay(r, k);
    }

    RegionWork embedding { "embedding", { elementwise(2 * d.Tsp * d.h * d.act, 2) }, 0,
        "the word embedding's lookup of T x h (and its scatter in backward)" };
    RegionWork head { "loss_head", {}, 0,
        "final norm, the output layer T x h x vocab/TP, the vocabulary cross-entropy over T x vocab/TP in "
        "fp32 "
        "(read the logits, write the softmax and its gradient)" };
    head.ops.push_back(elementwise(2 * d.Tsp * d.h * d.act));
    head.ops.push_back(weight(gemm(d.T, d.V / d.tp, d.h), kLoraUnnamed));
    head.ops.push_back(elementwise(d.T * d.V / d.tp * (d.act + 3 * 4), 6));
    // An MTP depth's own work around its layers (multi_token_prediction.py _get_embeddings,
    // _concat_embeddings, _postprocess): the rolled tokens' embedding, enorm and hnorm, the concatenation,
    // eh_proj T x 2h x h/TP and its gather; the final layernorm. Its loss is the head's again.
    RegionWork mtp_input { "mtp_input", {}, 0,
        "MTP: the embedding of the rolled tokens, enorm and hnorm over T x h, the concatenation T x 2h, "
        "eh_proj T x 2h x h/TP (multi_token_prediction.py _concat_embeddings)" };
    mtp_input.ops.push_back(elementwise(2 * d.Tsp * d.h * d.act, 2));
    mtp_input.ops.push_back(elementwise(2 * 2 * d.Tsp * d.h * d.act, 2));
    mtp_input.ops.push_back(elementwise(2 * 2 * d.Tsp * d.h * d.act));
    mtp_input.ops.push_back(weight(gemm(d.T, d.h / d.tp, 2 * d.h), kLoraUnnamed));
    const RegionWork mtp_output = norm("mtp_final_layernorm", d);
    RegionWork mtp_head { "mtp_loss_head", { head.ops.begin() + 1, head.ops.end() }, 0,
        "MTP: the head's output layer and cross-entropy on each depth's output (process_mtp_loss; its "
        "norm is the depth's final layernorm)" };

    const double m = p.micro_batches;
    const double v = std::max(1, p.vpp);
    double slowest_mb = 0; // the slowest stage's compute per micro-batch: the pipeline's pace
    for (const RankEstimate& re : memory->ranks) {
        RankStepTime rt;
        rt.stage = re.stage;
        rt.scope = re.scope;
        const PipelineStage st = pipelineStage(r, re.stage);
        Terms terms;
        if (st.first) {
            runStretch({ { &embedding, "forward", false } }, rates, m, terms);
            runStretch({ { &embedding, "backward", true } }, rates, m, terms);
        }
        // One layer's (or one MTP depth's) forward and backward stretches: its regions' forward, their replay
        // (the whole layer's under full recompute, with the checkpoints it takes; the selective labels'),
        // their backward.
        const auto runLayer = [&](const std::vector<const RegionWork*>& regs, const Replay* rep,
                                  bool replay_layer, double layer_checkpoints) {
            std::vector<Piece> fwd, bwd;
            for (const RegionWork* w : regs)
                fwd.push_back({ w, "forward", false });
            for (const RegionWork* w : regs) {
                if (replay_layer) {
                    bwd.push_back({ w, "replay", false, 0, layer_checkpoints });
                    layer_checkpoints = 0; // counted once per layer
                    continue;
                }
                if (!rep)
                    continue;
                for (size_t j = 0; j < rep->regions.size(); ++j)
                    if (rep->regions[j] == w->name)
                        bwd.push_back({ w, "replay", false, rep->discard[j] ? w->out_bytes : 0, 1 });
            }
            for (const RegionWork* w : regs)
                bwd.push_back({ w, "backward", true });
            runStretch(fwd, rates, m, terms);
            runStretch(bwd, rates, m, terms);
        };
        // Full recompute: which of the stage's layers replay (every one under uniform; the first
        // recompute_num_layers of each chunk under block), one checkpoint per group of N (uniform) or per
        // layer (block) (transformer_block.py _checkpointed_forward).
        std::map<int, int> seen_in_chunk;
        for (size_t i = 0; i < st.layers.size(); ++i) {
            const LayerKind& k = kinds[size_t(st.layers[i])];
            std::vector<const RegionWork*> regs;
            for (const RegionWork& w : regions[size_t(k.id())])
                regs.push_back(&w);
            bool replay_layer = false;
            double layer_checkpoints = 0;
            if (full) {
                const int pos = seen_in_chunk[st.chunk[i]]++;
                replay_layer = !block || pos < full_n;
                layer_checkpoints = block ? 1 : 1.0 / full_n;
            }
            runLayer(regs, selective ? &replays[size_t(k.id())] : nullptr, replay_layer, layer_checkpoints);
        }
        // The stage's MTP depths, after its decoder layers: full uniform recompute checkpoints a depth whole
        // (one checkpoint, MultiTokenPredictionLayer._checkpointed_forward), block leaves it (RT9); the
        // selective labels act in its layers as in the decoder's.
        for (int depth = 0; depth < st.mtp_layers && !mtp.layers.empty(); ++depth) {
            bool first = true;
            for (const LayerKind& k : mtp.layers) {
                std::vector<const RegionWork*> regs;
                if (first)
                    regs.push_back(&mtp_input);
                for (const RegionWork& w : regions[size_t(k.id())])
                    regs.push_back(&w);
                if (&k == &mtp.layers.back())
                    regs.push_back(&mtp_output);
                runLayer(regs, selective ? &replays[size_t(k.id())] : nullptr, full && !block, first ? 1 : 0);
                first = false;
            }
        }
        if (st.last) {
            runStretch({ { &head, "forward", false } }, rates, m, terms);
            runStretch({ { &head, "backward", true } }, rates, m, terms);
            if (mtp.depths > 0) {
                runStretch({ { &mtp_head, "forward", false } }, rates, m * mtp.depths, terms);
                runStretch({ { &mtp_head, "backward", true } }, rates, m * mtp.depths, terms);
            }
        }
        for (const auto& key : terms.order) {
            TimeTerm t = terms.by.at(key);
            if (t.phase == "backward")
                t.source = t.source + "; " + kBackwardRule;
            if (t.phase == "replay")
                t.source += "; replay: the region's forward again, an output-discard checkpoint's outputs "
                            "copied back (CheckpointWithoutOutput._recompute), the checkpoint's host cost";
            rt.compute_ms += t.ms;
            if (t.phase == "replay")
                rt.replay_ms += t.ms;
            rt.terms.push_back(std::move(t));
        }
        if (TimeTerm t = mainGradAccumulation(r, re, c, m); t.ms > 0) {
            rt.compute_ms += t.ms;
            rt.terms.push_back(std::move(t));
        }
        for (TimeTerm& t : optimizerStep(r, re, c)) {
            rt.optimizer_ms += t.ms;
            rt.terms.push_back(std::move(t));
        }
        slowest_mb = std::max(slowest_mb, rt.compute_ms / m);
        e.ranks.push_back(std::move(rt));
    }
    // The pipeline's bubble: (p - 1) / (m x v) of the ideal time, at the slowest stage's pace (Narayanan et
    // al. 2021, section 2.2: 1F1B and the interleaved schedule).
    const double bubble_fraction = p.pp > 1 ? double(p.pp - 1) / (m * v) : 0;
    for (RankStepTime& rt : e.ranks) {
        rt.bubble_ms = bubble_fraction * slowest_mb * m;
        if (p.pp > 1) {
            TimeTerm bt;
            bt.phase = "schedule";
            bt.name = "pipeline bubble";
            bt.ms = rt.bubble_ms;
            bt.source = "(pp - 1) / (micro-batches x vpp) = " + fmt(bubble_fraction, 3)
                + " of the slowest stage's compute (Narayanan et al. 2021, 2.2)";
            rt.terms.push_back(bt);
        }
        // The pipeline waits for its slowest stage: a faster stage idles the difference.
        const double wait = (slowest_mb * m) - rt.compute_ms;
        if (wait > 0) {
            TimeTerm wt;
            wt.phase = "schedule";
            wt.name = "waiting for the slowest stage";
            wt.ms = wait;
            wt.source = "the slowest stage's compute less this stage's";
            rt.terms.push_back(wt);
        }
        rt.step_ms = 0;
        for (const TimeTerm& t : rt.terms)
            rt.step_ms += t.ms;
    }
    for (size_t i = 0; i < e.ranks.size(); ++i)
        if (e.ranks[i].step_ms > e.ranks[size_t(e.slowest)].step_ms)
            e.slowest = int(i);
    e.step_ms = e.ranks[size_t(e.slowest)].step_ms;
    e.replay_ms = e.ranks[size_t(e.slowest)].replay_ms;
    e.assumptions = {
        "rates: " + e.rates_source,
        "communication is not modelled (TP / SP / CP / EP collectives, the gradient reduce, the parameter "
        "gather): the step of one rank on one GPU",
        "balanced routing: every EP rank receives T x top-k / EP x EP tokens",
        "a layer's forward, and its backward with its replays, each take the device's time or the host's "
        "(kernels x kernel_launch_us, checkpoints x checkpoint_us), whichever is longer",
    };
    if (r.fp8 && !r.fp8->empty())
        e.assumptions.push_back(c.fp8_matmul.empty() ? kFp8NotTimed : kFp8Timed);
    return e;
}

nlohmann::json stepTimeToJson(const StepTimeEstimate& e)
{
    nlohmann::json ranks = nlohmann::json::array();
    for (const auto& r : e.ranks) {
        nlohmann::json terms = nlohmann::json::array();
        for (const auto& t : r.terms)
            terms.push_back({ { "phase", t.phase }, { "name", t.name }, { "ms", t.ms }, { "flops", t.flops },
                { "bytes", t.bytes }, { "kernels", t.kernels }, { "host_bound_ms", t.host_bound_ms },
                { "source", t.source } });
        ranks.push_back({ { "stage", r.stage }, { "scope", r.scope }, { "step_ms", r.step_ms },
            { "compute_ms", r.compute_ms }, { "replay_ms", r.replay_ms }, { "bubble_ms", r.bubble_ms },
            { "optimizer_ms", r.optimizer_ms }, { "terms", terms } });
    }
    return { { "choice", e.choice }, { "step_ms", e.step_ms },
        { "slowest_stage", e.ranks.empty() ? 0 : e.ranks[size_t(e.slowest)].stage },
        { "replay_ms", e.replay_ms }, { "rates", e.rates_source }, { "provisional", e.provisional },
        { "ranks", ranks }, { "assumptions", e.assumptions } };
}

} // namespace rs
