// SPDX-License-Identifier: Apache-2.0
// Tiny recipes and one-step runs shared by the engine tests. Torch and Qt in one file: Qt's keywords are off
// in these targets (see CMakeLists.txt).
#pragma once

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <QString>
#include <QStringList>

#include <torch/torch.h>

#include "core/recipe.h"
#include "engine/checkpoint.h"
#include "engine/memory_probe.h"
#include "engine/model.h"
#include "engine/runner.h"

namespace rs::enginetest {

enum class Arch {
    DenseUnfused, // LayerNorm, GeLU, MHA, unfused attention
    DenseFusedGqa, // RMSNorm, SwiGLU, GQA, scaled_dot_product_attention
    MlaMoe, // MLA with Q compression, first layer dense, then MoE with shared experts (Moonlight-like)
    MlaNoQLoraUnfused, // MLA without Q compression, unfused attention, dense SwiGLU
    DenseUnfusedNoHiddenDropout, // as DenseUnfused with hidden_dropout 0 and no linear biases: full units
                                 // end in x + fc2(act)
    HybridMambaMoe, // Nemotron-H-like: Mamba, attention, MLP and MoE layers, squared ReLU, shared expert
    HybridGdn, // a hybrid stack with GatedDeltaNet, attention and MLP layers (SwiGLU)
    GptGdnMoe, // Qwen3-Next-like: GatedDeltaNet and attention layers by linear_attention_freq, MoE MLPs
};

inline Recipe tinyRecipe(Arch arch)
{
    Recipe r;
    r.name = "tiny";
    r.num_layers = 3;
    r.hidden_size = 32;
    r.num_attention_heads = 4;
    r.seq_length = 16;
    r.micro_batch_size = 2;
    r.vocab_size = 64;
    r.ffn_hidden_size = 48;
    r.attention_dropout = 0.1;
    r.hidden_dropout = 0.1;
    r.transformer_impl = "local";
    switch (arch) {
    case Arch::DenseUnfused:
        r.attention_backend = "unfused";
        break;
    case Arch::DenseUnfusedNoHiddenDropout:
        r.attention_backend = "unfused";
        r.hidden_dropout = 0;
        r.add_bias_linear = false;
        break;
    case Arch::DenseFusedGqa:
        r.attention_backend = "fused";
        r.normalization = "RMSNorm";
        r.gated_linear_unit = true;
        r.activation_func = "silu";
        r.num_query_groups = 2;
        break;
    case Arch::MlaMoe:
        r.attention_backend = "fused";
        r.normalization = "RMSNorm";
        r.gated_linear_unit = true;
        r.activation_func = "silu";
        r.multi_latent_attention = true;
        r.q_lora_rank = 24;
        r.kv_lora_rank = 16;
        r.qk_head_dim = 8;
        r.qk_pos_emb_head_dim = 4;
        r.v_head_dim = 8;
        r.num_moe_experts = 4;
        r.moe_router_topk = 2;
        r.moe_ffn_hidden_size = 16;
        r.moe_shared_expert_intermediate_size = 16;
        r.moe_grouped_gemm = true;
        r.moe_layer_freq = { 0, 1, 1 };
        break;
    case Arch::HybridMambaMoe:
        r.hybrid_layer_pattern = "M*EM-E";
        r.num_layers = 6;
        r.attention_backend = "fused";
        r.normalization = "RMSNorm";
        r.add_bias_linear = false;
        r.num_query_groups = 2;
        r.activation_func = "squared_relu";
        r.mamba_num_heads = 4;
        r.mamba_head_dim = 8;
        r.mamba_state_dim = 8;
        r.mamba_num_groups = 2;
        r.mamba_chunk_size = 8;
        r.num_moe_experts = 4;
        r.moe_router_topk = 2;
        r.moe_ffn_hidden_size = 16;
        r.moe_shared_expert_intermediate_size = 16;
        r.moe_grouped_gemm = true;
        r.use_fused_weighted_squared_relu = true;
        break;
    case Arch::HybridGdn:
        r.hybrid_layer_pattern = "G*G-";
        r.num_layers = 4;
        r.attention_backend = "fused";
        r.normalization = "RMSNorm";
        r.add_bias_linear = false;
        r.gated_linear_unit = true;
        r.activation_func = "silu";
        r.experimental_attention_variant = "gated_delta_net";
        r.linear_num_key_heads = 2;
        r.linear_num_value_heads = 4;
        r.linear_key_head_dim = 8;
        r.linear_value_head_dim = 8;
        break;
    case Arch::GptGdnMoe:
        r.attention_backend = "fused";
        r.normalization = "RMSNorm";
        r.add_bias_linear = false;
        r.gated_linear_unit = true;
        r.activation_func = "silu";
        r.experimental_attention_variant = "gated_delta_net";
        r.linear_attention_freq = { 1, 0, 1 };
        r.linear_num_key_heads = 2;
        r.linear_num_value_heads = 2;
        r.linear_key_head_dim = 8;
        r.linear_value_head_dim = 8;
        r.num_moe_experts = 4;
        r.moe_router_topk = 2;
        r.moe_ffn_hidden_size = 16;
        r.moe_grouped_gemm = true;
        break;
    case Arch::MlaNoQLoraUnfused:
        r.attention_backend = "unfused";
        r.normalization = "RMSNorm";
        r.gated_linear_unit = true;
        r.activation_func = "silu";
        r.multi_latent_attention = true;
        r.q_lora_rank = std::nullopt;
        r.kv_lora_rank = 16;
        r.qk_head_dim = 8;
        r.qk_pos_emb_head_dim = 4;
        r.v_head_dim = 8;
        break;
    }
    return r;
}

inline Recipe selective(Recipe r, std::vector<std::string> modules)
{
    r.recompute_granularity = "selective";
    r.recompute_modules = std::move(modules);
    return r;
}

inline Recipe full(Recipe r, const std::string& method, int k)
{
    r.recompute_granularity = "full";
    r.recompute_method = method;
    r.recompute_num_layers = k;
    return r;
}

// One MLP activation on the recipe of `arch`, eager (bias_activation_fusion off) and fused (on), for the
// tests that hold the fused bias activation against the eager path: activation swiglu | geglu | gelu;
// grouped: moe_grouped_gemm; modules: selective recompute of those (none: no recompute).
struct ActivationPair {
    Recipe eager;
    Recipe fused;
};

inline ActivationPair activationPair(
    Arch arch, const QString& activation, bool grouped, const QStringList& modules, bool bf16 = false)
{
    Recipe eager = tinyRecipe(arch);
    eager.gated_linear_unit = activation != QLatin1String("gelu");
    eager.activation_func = activation == QLatin1String("swiglu") ? "silu" : "gelu";
    eager.moe_grouped_gemm = grouped;
    eager.bf16 = bf16;
    if (!modules.isEmpty()) {
        std::vector<std::string> labels;
        for (const auto& m : modules)
            labels.push_back(m.toStdString());
        eager = selective(eager, labels);
    }
    Recipe fused = eager;
    fused.bias_activation_fusion = true;
    return { eager, fused };
}

// The worker's stream, one JSON value a line (a line that is not JSON throws: the stream is JSON lines).
inline std::vector<nlohmann::json> streamLines(const std::string& text)
{
    std::vector<nlohmann::json> lines;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line))
        lines.push_back(nlohmann::json::parse(line));
    return lines;
}

// The worker's step loop (engine::runRecipe) on a recipe, in process: its stream and its exit code.
inline std::vector<nlohmann::json> runStream(const Recipe& r, const engine::RunOptions& options, int* code)
{
    std::ostringstream out;
    *code = engine::runRecipe(r, InputFormat::Json, options, out);
    return streamLines(out.str());
}

struct StepResult {
    double loss = 0;
    std::map<std::string, torch::Tensor> grads;
    engine::FlopCount flops;
    int64_t retained = 0; // bytes allocated by the forward pass and still held when backward starts
    int64_t forward_peak = 0; // bytes above the pre-forward level at the forward peak
};

// One forward + backward of the recipe's stack on CPU in fp32, from fixed seeds: parameters from `seed`,
// batch from seed + 1, dropout from seed + 2 (as the worker does).
inline StepResult runStep(const Recipe& r, uint64_t seed = 1234, int rank_of_layout = 0)
{
    auto probe = engine::MemoryProbe::create(torch::Device(torch::kCPU));
    const auto config = engine::modelConfig(r, rank_of_layout);
    engine::Model model(config, engine::recomputePlan(r, config), torch::Device(torch::kCPU), seed);
    const auto [tokens, labels] = model.batch(seed + 1);
    torch::manual_seed(seed + 2);
    engine::resetFlopCount();
    StepResult out;
    const int64_t before = probe->read().allocated;
    probe->resetPeak();
    auto loss = model.loss(tokens, labels);
    const auto after = probe->read();
    out.retained = after.allocated - before;
    out.forward_peak = after.peak_allocated - before;
    loss.backward();
    out.loss = loss.item<double>();
    out.flops = engine::flopCount();
    for (const auto& [name, p] : model.parameters())
        out.grads[name] = p.grad().defined() ? p.grad().clone() : torch::Tensor();
    return out;
}

} // namespace rs::enginetest
