// SPDX-License-Identifier: Apache-2.0
// The transformer layer stack the worker trains, built from a resolved recipe with Megatron Core's module
// boundaries, and the recompute plan that says where each checkpoint goes (docs/engine.md maps every
// label to its checkpoint).
#pragma once

#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "core/recipe.h"

namespace rs::engine {

// A recipe the engine cannot run as asked (a label it does not model, fp8 ...): refused, never ignored.
struct EngineError : std::runtime_error {
    EngineError(std::string field_, const std::string& message)
        : std::runtime_error(field_ + ": " + message)
        , field(std::move(field_))
    {
    }
    std::string field;
};

// Shapes and settings of the stack this process runs (the first pipeline stage when PP > 1).
struct ModelConfig {
    std::vector<int> global_layers; // global index of each local layer
    std::vector<int> chunk; // virtual-pipeline chunk of each local layer (full recompute is per chunk)
    std::vector<bool> moe; // whether each local layer's MLP is MoE
    std::string stage_scope;

    int hidden = 0, ffn = 0, heads = 0, query_groups = 0, kv_channels = 0;
    int seq = 0, micro_batch = 0, vocab = 0;
    bool rmsnorm = false, gated = false, silu = false;
    std::string attention_backend = "fused";
    bool mla = false;
    int q_lora_rank = 0; // 0: no Q compression
    int kv_lora_rank = 0, qk_head_dim = 0, qk_pos_emb_head_dim = 0, v_head_dim = 0;
    int experts = 0, topk = 0, moe_ffn = 0, shared_ffn = 0;
    double attention_dropout = 0, hidden_dropout = 0;
    torch::Dtype dtype = torch::kFloat32;
};

ModelConfig modelConfig(const Recipe& resolved);

// Where the checkpoints go. Selective: the labels in effect. Full: units of consecutive local layers,
// each checkpointed as one region or run plainly (megatron-rules.md (d)).
struct RecomputePlan {
    std::set<std::string> modules;
    std::string method; // "" (selective or none), "uniform" or "block"
    int num_layers = 0;
    struct Unit {
        int first = 0, count = 0;
        bool checkpointed = false;
    };
    std::vector<Unit> units;
    bool has(const std::string& label) const { return modules.count(label) > 0; }
};

// Throws EngineError for labels the engine cannot model and for settings it does not run.
RecomputePlan recomputePlan(const Recipe& resolved, const ModelConfig& config);

class Model {
public:
    Model(ModelConfig config, RecomputePlan plan, const torch::Device& device, uint64_t seed);
    ~Model();
    Model(const Model&) = delete;
    Model& operator=(const Model&) = delete;

    // Random token ids and labels of shape [seq, micro_batch], drawn from `seed`.
    std::pair<torch::Tensor, torch::Tensor> batch(uint64_t seed) const;
    // Forward pass to the mean cross-entropy loss (fp32).
    torch::Tensor loss(const torch::Tensor& tokens, const torch::Tensor& labels);

    const std::vector<std::pair<std::string, torch::Tensor>>& parameters() const { return params_; }
    const ModelConfig& config() const { return config_; }
    const RecomputePlan& plan() const { return plan_; }

    struct Layer; // defined in model.cpp

private:
    torch::Tensor param(const std::string& name, std::vector<int64_t> shape, bool ones = false);
    torch::Tensor layerForward(const Layer& layer, torch::Tensor x);
    torch::Tensor norm(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) const;
    torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight) const;
    torch::Tensor dropout(const torch::Tensor& x, double p) const;
    torch::Tensor attention(const Layer& layer, const torch::Tensor& x);
    torch::Tensor coreAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v);
    // Unfused attention up to the dropped probabilities and V ([b*np, sq, sk], [b*np, sk, hv]); the tail
    // multiplies them and lays the context out as [sq, b, np*hv].
    std::vector<torch::Tensor> unfusedAttentionHead(
        const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v);
    struct Tail unfusedAttentionTail(int64_t b, int64_t np) const;
    torch::Tensor repeatGroups(const torch::Tensor& t, int64_t heads) const;
    // A dense layer up to its MLP activation: {residual stream before the MLP, activation}. Only for
    // full-recompute units with no hidden dropout, where the layer ends with x + fc2(act).
    std::vector<torch::Tensor> denseLayerHead(const Layer& layer, torch::Tensor x);
    torch::Tensor rope(const torch::Tensor& x) const;
    torch::Tensor mlp(const torch::Tensor& x, const torch::Tensor& fc1, const torch::Tensor& fc2) const;
    torch::Tensor activation(const torch::Tensor& fc1_out) const;
    torch::Tensor moe(const Layer& layer, const torch::Tensor& x);
    torch::Tensor moeLayer(const Layer& layer, const torch::Tensor& x);

    ModelConfig config_;
    RecomputePlan plan_;
    torch::Device device_;
    torch::TensorOptions options_;
    std::vector<std::pair<std::string, torch::Tensor>> params_;
    std::vector<Layer> layers_;
    torch::Tensor embedding_, final_norm_w_, final_norm_b_, output_;
    torch::Tensor causal_mask_; // unfused attention: true above the diagonal
    torch::Tensor rope_cos_, rope_sin_; // MLA: [seq, 1, 1, qk_pos_emb_head_dim]
};

} // namespace rs::engine
