// SPDX-License-Identifier: Apache-2.0
// THE recompute label table (recompute_labels.h). The facts are the reference's label catalogue (c) and
// docs/rules.md: the kind of checkpoint, the region, the rules that gate each label; the boundary widths
// order the labels by how much of a layer they replay.
#include "core/recompute_labels.h"

#include <algorithm>

#include "core/estimator.h"
#include "core/model_shape.h"
#include "core/profiles.h"
#include "core/rules.h"
#include "core/rules_detail.h"

namespace rs {

namespace {

LabelEffect effect(bool acts, std::string reason)
{
    LabelEffect e;
    e.exists = true;
    e.has_effect = acts;
    e.reason = std::move(reason);
    return e;
}

rules_detail::Ctx contextOf(const Recipe& r)
{
    rules_detail::Ctx c;
    c.r = r;
    return c;
}

// How many layers have this mixer (model_shape.h layerKinds).
int layersWith(const Recipe& r, LayerMixer mixer)
{
    int n = 0;
    for (const LayerKind& k : layerKinds(r))
        n += k.mixer == mixer ? 1 : 0;
    return n;
}

LabelEffect coreAttnEffect(const Recipe& r)
{
    if (isHybrid(r) && layersWith(r, LayerMixer::Attention) == 0)
        return effect(false, "the hybrid pattern has no attention ('*') layer");
    if (r.attention_backend == "unfused")
        return effect(true, "unfused attention materializes score/probability tensors");
    return effect(true, "fused/flash attention already rematerializes its internals: compare with [] (RS06)");
}

LabelEffect mlaUpProjEffect(const Recipe& r)
{
    return r.multi_latent_attention ? effect(true, "MLA Q/KV up-projection + RoPE")
                                    : effect(false, "no multi-latent attention (R13)");
}

LabelEffect layernormEffect(const Recipe& r)
{
    if (r.transformer_impl != "transformer_engine" && !isHybrid(r)) // a hybrid stack is TE's spec always
        return effect(true, "the local layer spec has real norm modules");
    if (r.multi_latent_attention)
        return effect(true, "MLA's input_layernorm is not fused");
    if (contextOf(r).moeLayers() > 0)
        return effect(true, "the MoE layers' pre_mlp_layernorm is a real module; the others are fused (RT1)");
    return effect(false, "both norms are fused into the next linear (IdentityOp) under the TE spec (RT1)");
}

} // namespace

bool layernormIsModule(const Recipe& r, bool moe_layer, bool pre_mlp)
{
    if (r.transformer_impl != "transformer_engine" && !isHybrid(r))
        return true;
    return pre_mlp ? moe_layer : r.multi_latent_attention;
}

namespace {

LabelEffect moeActEffect(const Recipe& r)
{
    if (!contextOf(r).isMoE())
        return effect(false, "no MoE layers");
    return r.moe_grouped_gemm ? effect(true, "grouped-GEMM expert activation")
                              : effect(false, "needs moe_grouped_gemm (R12)");
}

LabelEffect mlpEffect(const Recipe& r)
{
    const rules_detail::Ctx c = contextOf(r);
    if (isHybrid(r))
        return c.denseLayers() > 0 ? effect(true, "the hybrid pattern's MLP ('-') layers")
                                   : effect(false, "the hybrid pattern has no MLP ('-') layer (RT4)");
    const bool moe = c.isMoE();
    if (!moe || c.denseLayers() > 0)
        return effect(true, moe ? "acts on the dense layers only (RT4)" : "the dense MLP");
    return effect(false, "every layer's MLP is MoE (RT4)");
}

LabelEffect moeEffect(const Recipe& r)
{
    return contextOf(r).isMoE() ? effect(true, "the whole MoE layer") : effect(false, "no MoE layers");
}

LabelEffect sharedExpertsEffect(const Recipe& r)
{
    if (!contextOf(r).isMoE() || !r.moe_shared_expert_intermediate_size)
        return effect(false, "no shared expert (RT6)");
    return r.moe_shared_expert_overlap ? effect(false, "the shared expert is overlapped (R16, RT6)")
                                       : effect(true, "the non-overlapped shared-expert MLP");
}

LabelEffect gdnNormOutEffect(const Recipe& r)
{
    const auto& accepted = profileInfo(r.profile).gdn_variants;
    const bool ok = std::find(accepted.begin(), accepted.end(), r.experimental_attention_variant.value_or(""))
        != accepted.end();
    if (!ok)
        return effect(false, "no gated-delta-net variant (R14)");
    return layersWith(r, LayerMixer::GatedDeltaNet) > 0
        ? effect(true, "GatedDeltaNet gated norm")
        : effect(
            false, "no GatedDeltaNet layer (linear_attention_freq in a GPT model, 'G' in a hybrid pattern)");
}

LabelEffect gdnEffect(const Recipe& r)
{
    if (r.experimental_attention_variant.value_or("") != "gated_delta_net")
        return effect(false, "no gated_delta_net variant (dev)");
    return layersWith(r, LayerMixer::GatedDeltaNet) > 0
        ? effect(true, "the whole GatedDeltaNet module")
        : effect(
            false, "no GatedDeltaNet layer (linear_attention_freq in a GPT model, 'G' in a hybrid pattern)");
}

LabelEffect gatedDeltaProductEffect(const Recipe&)
{
    // No config check ties gdp_in_proj / gdp_qkv to a GatedDeltaProduct variant (the reference, (c)).
    return effect(true, "not checked: needs a GatedDeltaProduct mixer");
}

LabelEffect mhcEffect(const Recipe& r)
{
    const std::string& flag = profileInfo(r.profile).hyper_connections_flag;
    const bool on = flag == "enable_hyper_connections" ? r.enable_hyper_connections
        : flag == "enable_mhc_connections"             ? r.enable_mhc_connections
                                                       : false;
    return on ? effect(true, "hyper-connection activations")
              : effect(false, "hyper-connections are off (R20)");
}

constexpr std::string_view kNoGatedDeltaProduct
    = "the GatedDeltaProduct mixer (ssm/gated_delta_product.py, its ops/gdp kernels) is not built: only "
      "Mamba-2 and GatedDeltaNet are";
constexpr std::string_view kNoHyperConnections = "no hyper-connections are modelled";

} // namespace

const std::vector<RecomputeLabel>& recomputeLabels()
{
    using K = CheckpointKind;
    static const std::vector<RecomputeLabel> table = {
        { "core_attn", K::Normal, "core attention (DotProductAttention: softmax(QK^T)V)", "", { "core_attn" },
            2, { "R10", "R11", "R15", "RS06" }, coreAttnEffect, "", "", { "core_attn" } },
        { "mla_up_proj", K::OutputDiscard, "MLA Q/KV up-projection + RoPE (qkv_up_proj_and_rope_apply)", "",
            { "mla_up_proj" }, 2, { "R11", "R13" }, mlaUpProjEffect, "", "", { "mla_up_proj" } },
        { "layernorm", K::OutputDiscard, "input_layernorm and pre_mlp_layernorm", "",
            { "input_layernorm", "pre_mlp_layernorm" }, 1, { "R11", "RT1" }, layernormEffect, "", "",
            { "input_layernorm", "pre_mlp_layernorm" } },
        { "moe_act", K::OutputDiscard, "the grouped experts' activation between FC1 and FC2", "moe",
            { "moe_act" }, 1, { "R11", "R12" }, moeActEffect, "", "", { "moe_act" } },
        { "mlp", K::Normal, "the whole dense MLP", "", { "mlp" }, 4, { "R11", "RT4" }, mlpEffect, "", "",
            { "mlp" } },
        { "moe", K::Normal, "the whole MoELayer (router, dispatch, experts, combine, shared experts)", "",
            { "moe" }, 5, { "R11", "R36" }, moeEffect, "", "",
            { "router", "fc1_latent_proj", "permute", "moe_experts", "moe_act", "unpermute",
                "fc2_latent_proj", "shared_experts" } },
        { "shared_experts", K::Normal, "the shared-expert MLP (not overlapped)", "moe", { "shared_experts" },
            3, { "R11", "R16", "RT6" }, sharedExpertsEffect, "", "", { "shared_experts" } },
        { "gdn_norm_out", K::OutputDiscard, "GatedDeltaNet gated RMSNorm + all-to-all (_gated_norm_and_a2a)",
            "gdn", { "gdn_norm_out" }, 2, { "R11", "R14" }, gdnNormOutEffect, "", "", { "gdn_norm_out" } },
        { "gdp_in_proj", K::OutputDiscard, "GatedDeltaProduct input projection (_in_proj_preprocess)", "", {},
            3, { "R11", "R24" }, gatedDeltaProductEffect, kNoGatedDeltaProduct, kNoGatedDeltaProduct },
        { "gdp_qkv", K::OutputDiscard, "GatedDeltaProduct causal conv + QKV preparation (_prepare_qkv)", "",
            {}, 3, { "R11" }, gatedDeltaProductEffect, kNoGatedDeltaProduct, kNoGatedDeltaProduct },
        { "mhc", K::OutputDiscard, "hyper-connection activations, one recompute per mhc_recompute_layer_num",
            "", {}, 3, { "R11", "R20", "R21", "R22" }, mhcEffect, kNoHyperConnections, kNoHyperConnections },
        { "gdn", K::Normal, "the whole GatedDeltaNet module (dev)", "", { "gdn" }, 3, { "R11", "G1", "G2" },
            gdnEffect, "", "", { "gdn", "gdn_norm_out" } },
    };
    return table;
}

const RecomputeLabel* findRecomputeLabel(std::string_view name)
{
    for (const auto& row : recomputeLabels())
        if (row.name == name)
            return &row;
    return nullptr;
}

std::vector<Profile> profilesKnowing(std::string_view label)
{
    std::vector<Profile> out;
    for (const auto& p : profileTable())
        if (std::find(p.recompute_labels.begin(), p.recompute_labels.end(), label)
            != p.recompute_labels.end())
            out.push_back(p.id);
    return out;
}

std::vector<std::string> effectiveRecomputeModules(const Recipe& r)
{
    return r.recompute_modules.value_or(std::vector<std::string> { std::string(kDefaultRecomputeLabel) });
}

std::string recomputeLabelOfRegion(std::string_view region)
{
    for (const auto& row : recomputeLabels())
        for (const auto& w : row.worker_regions)
            if (w == region)
                return std::string(row.name);
    return {};
}

std::vector<std::string> recomputeLabelCoverage(
    const std::vector<RecomputeLabel>& table, const std::vector<std::string>& labels)
{
    std::vector<std::string> problems;
    const auto rowOf = [&table](std::string_view name) -> const RecomputeLabel* {
        for (const auto& row : table)
            if (row.name == name)
                return &row;
        return nullptr;
    };
    for (const auto& label : labels) {
        const RecomputeLabel* row = rowOf(label);
        if (!row) {
            problems.push_back(label + ": no row in the label table");
            continue;
        }
        const std::string name(row->name);
        if (row->what.empty())
            problems.push_back(name + ": the row does not say what it checkpoints");
        if (!row->effect)
            problems.push_back(name + ": nothing decides whether it acts on a recipe (effect)");
        if (std::find(row->rules.begin(), row->rules.end(), "R11") == row->rules.end())
            problems.push_back(name + ": R11 (the allowed set) is not among its rules");
        for (const auto& id : row->rules)
            if (!findRule(std::string(id)))
                problems.push_back(name + ": rule " + std::string(id) + " is not in the rule table");
        if (row->boundary_width <= 0)
            problems.push_back(name + ": no boundary width (how much of a layer it replays)");
        if (!row->parent.empty() && !rowOf(row->parent))
            problems.push_back(name + ": its parent " + std::string(row->parent) + " has no row");
        const bool estimated = estimatorModelsLabel(name);
        if (!estimated && row->not_estimated.empty())
            problems.push_back(name + ": the estimator has no region for it and the row gives no reason");
        if (estimated && !row->not_estimated.empty())
            problems.push_back(name + ": the estimator models it, yet the row says it does not");
        if (estimated && row->replays.empty())
            problems.push_back(name + ": the step-time model has no region it replays (replays)");
        if (row->not_built.empty() && row->worker_regions.empty())
            problems.push_back(name + ": the worker builds it, yet the row names no region it recomputes");
    }
    return problems;
}

std::vector<std::string> recomputeLabelCoverage()
{
    std::vector<std::string> labels;
    for (const auto& p : profileTable())
        for (const auto& l : p.recompute_labels)
            if (std::find(labels.begin(), labels.end(), l) == labels.end())
                labels.push_back(l);
    return recomputeLabelCoverage(recomputeLabels(), labels);
}

} // namespace rs
