// SPDX-License-Identifier: Apache-2.0
#include "core/flops.h"

#include <algorithm>

namespace rs {

namespace {

// FC1 (h -> ffn, doubled when gated) and FC2 (ffn -> h) over `tokens`, `h` the width they read and write.
double mlpFlops(const Recipe& r, double tokens, double ffn, double h)
{
    return 2 * tokens * h * ffn * (r.gated_linear_unit ? 2 : 1) + 2 * tokens * ffn * h;
}

double attentionFlops(const Recipe& r, double tokens)
{
    const double h = r.hidden_size;
    const double nh = r.num_attention_heads;
    const double s = r.seq_length;
    const double b = r.micro_batch_size;
    if (r.multi_latent_attention) {
        const double dn = r.qk_head_dim, dr = r.qk_pos_emb_head_dim, dv = r.v_head_dim;
        double f = 0;
        if (r.q_lora_rank)
            f += 2 * tokens * h * *r.q_lora_rank + 2 * tokens * *r.q_lora_rank * nh * (dn + dr);
        else
            f += 2 * tokens * h * nh * (dn + dr);
        f += 2 * tokens * h * (r.kv_lora_rank + dr) + 2 * tokens * r.kv_lora_rank * nh * (dn + dv);
        f += 0.5 * (2 * b * nh * s * s * (dn + dr) + 2 * b * nh * s * s * dv); // causal half
        f += 2 * tokens * nh * dv * h;
        return f;
    }
    const double kv = r.kv_channels.value_or(r.hidden_size / std::max(1, r.num_attention_heads));
    const double ng = r.num_query_groups.value_or(r.num_attention_heads);
    double f = 2 * tokens * h * (nh + 2 * ng) * kv; // linear_qkv
    f += 0.5 * (4 * b * nh * s * s * kv); // QK^T and PV, causal half
    f += 2 * tokens * nh * kv * h; // linear_proj
    return f;
}

// A Mamba layer: in_proj, the scan, out_proj, as Megatron-LM counts it (megatron/training/training.py
// mamba_layer_flops at d98e8a64: 2 T h (2 d_inner + 2 groups state + heads), 7 T d_inner state,
// 2 T d_inner h; its d_inner is 2h, the mixer's default expand).
double mambaFlops(const ModelShape& m, double tokens)
{
    return 2 * tokens * double(m.hidden) * double(m.mamba_in_proj)
        + 7 * tokens * double(m.mamba_d_inner) * double(m.mamba_state)
        + 2 * tokens * double(m.mamba_d_inner) * double(m.hidden);
}

// A GatedDeltaNet layer (training.py gdn_layer_flops at d98e8a64): in_proj, the causal convolution, the
// delta rule's four products per value head, out_proj.
double gatedDeltaNetFlops(const Recipe& r, const ModelShape& m, double tokens)
{
    const double conv = r.linear_conv_kernel_dim;
    return 2 * tokens
        * (double(m.hidden) * double(m.gdn_in_proj) + conv * double(m.gdn_conv_dim)
            + double(m.gdn_value_heads) * double(m.gdn_value_dim) * double(m.gdn_value_dim) * 4
            + double(m.hidden) * double(m.gdn_v));
}

} // namespace

StepFlops modelFlops(const Recipe& r, const std::vector<int>& layers)
{
    const double tokens = static_cast<double>(r.seq_length) * r.micro_batch_size;
    const double h = r.hidden_size;
    const double ffn = r.ffn_hidden_size.value_or(4 * r.hidden_size);
    // Latent MoE: the routed experts at the latent width, and the two projections (Megatron's own count,
    // megatron/training/training.py:438-450 at 2a75ac12).
    const ModelShape shape = modelShape(r);
    const double latent = double(shape.moe_latent);
    StepFlops f;
    for (int layer : layers) {
        // A hybrid stack's layer is its mixer or its feed-forward part alone (layerKind).
        const LayerKind kind = layerKind(r, layer);
        if (isAttentionMixer(kind.mixer))
            f.forward += attentionFlops(r, tokens);
        else if (kind.mixer == LayerMixer::Mamba)
            f.forward += mambaFlops(shape, tokens);
        else if (kind.mixer == LayerMixer::GatedDeltaNet)
            f.forward += gatedDeltaNetFlops(r, shape, tokens);
        if (kind.ffn == LayerFfn::None)
            continue;
        if (kind.ffn == LayerFfn::Moe) {
            const double experts = *r.num_moe_experts;
            const double moe_ffn = r.moe_ffn_hidden_size.value_or(static_cast<int>(ffn));
            f.forward += 2 * tokens * h * experts; // router
            f.forward += mlpFlops(r, tokens * r.moe_router_topk, moe_ffn, latent > 0 ? latent : h);
            if (latent > 0)
                f.forward += 2 * 2 * tokens * h * latent;
            if (r.moe_shared_expert_intermediate_size)
                f.forward += mlpFlops(r, tokens, *r.moe_shared_expert_intermediate_size, h);
        } else {
            f.forward += mlpFlops(r, tokens, ffn, h);
        }
    }
    f.forward += 2 * tokens * h * r.vocab_size; // output layer
    f.per_step = 3 * f.forward;
    return f;
}

} // namespace rs
