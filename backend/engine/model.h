// SPDX-License-Identifier: Apache-2.0
// The transformer layer stack the worker trains, built from a resolved recipe with Megatron Core's module
// boundaries, and the recompute plan that says where each checkpoint goes (docs/engine.md maps every
// label to its checkpoint).
#pragma once

#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "core/model_shape.h"
#include "core/recipe.h"
#include "engine/fp8.h"
#include "engine/layout_rank.h"

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

// Shapes and settings of the stack this process runs: one rank of the recipe's layout (layout_rank.h),
// its pipeline stage's layers, its shares under TP / SP / CP / EP.
struct ModelConfig {
    std::vector<int> global_layers; // global index of each local layer
    std::vector<int> chunk; // virtual-pipeline chunk of each local layer (full recompute is per chunk)
    std::vector<bool> moe; // whether each local layer's MLP is MoE
    // Each local layer's mixer and MLP (core/model_shape.h layerKinds): attention + MLP / MoE in a GPT model,
    // one of Mamba, GatedDeltaNet, attention, MLP, MoE in a hybrid stack.
    std::vector<LayerKind> kinds;
    std::string stage_scope;

    int hidden = 0, ffn = 0, heads = 0, query_groups = 0, kv_channels = 0;
    int seq = 0, micro_batch = 0;
    int vocab = 0; // the output layer's rows: the tokenizer's vocabulary padded as Megatron-LM pads it
    int tokenizer_vocab = 0; // token ids are drawn below this
    bool bias_linear = false, qkv_bias = false; // add_bias_linear, add_qkv_bias
    std::string position_embedding = "none"; // learned_absolute | rope | none
    int max_position_embeddings = 0;
    int rotary_dim = 0; // kv_channels x rotary_percent (rope)
    int rotary_base = 10000;
    bool tied_embeddings = true; // !untie_embeddings_and_output_weights
    bool softmax_in_fp32 = true; // attention_softmax_in_fp32 (unfused attention)
    bool query_key_layer_scaling = false;
    // Megatron's fused ScaledUpperTriangMaskedSoftmax runs instead of the torch softmax (unfused attention):
    // core/attention_softmax.h fusedMaskedSoftmaxApplies for this rank's scores.
    bool fused_softmax = false;
    double moe_aux_loss_coeff = 0; // > 0 with load balancing aux_loss / seq_aux_loss
    bool moe_expert_bias = false; // linear biases in the experts (add_bias_linear without grouped GEMM)
    bool rmsnorm = false, gated = false, silu = false;
    bool squared_relu = false; // activation_func squared_relu
    bool weighted_squared_relu = false; // use_fused_weighted_squared_relu: the experts' one-node activation
    // Mamba (core/model_shape.h): heads, head dim, groups, state, the scan's chunk, the conv's width.
    int mamba_heads = 0, mamba_head_dim = 0, mamba_groups = 0, mamba_state = 0, mamba_chunk = 128;
    int mamba_conv = 4;
    // GatedDeltaNet: key / value heads and dims, the conv's width.
    int gdn_key_heads = 0, gdn_value_heads = 0, gdn_key_dim = 0, gdn_value_dim = 0, gdn_conv = 4;
    bool bias_activation_fusion = false; // one autograd node keeping FC1's output only (model.cpp)
    std::string attention_backend = "fused";
    // transformer_impl transformer_engine: the TE spec fuses a dense layer's norms into the next linear
    // (IdentityOp), so the layernorm label applies only to MLA's input norm and MoE's pre-MLP norm (RT1).
    bool te_spec = false;
    fp8::Settings fp8; // fp8 / fp8_recipe through TE's linears (te_spec only; engine/fp8.h)
    bool mla = false;
    int q_lora_rank = 0; // 0: no Q compression
    int kv_lora_rank = 0, qk_head_dim = 0, qk_pos_emb_head_dim = 0, v_head_dim = 0;
    int experts = 0, topk = 0, moe_ffn = 0, shared_ffn = 0;
    // Latent MoE (moe_latent_size; 0 off): the routed experts and the dispatch at this width, between
    // fc1_latent_proj and fc2_latent_proj, whole on every TP rank (core/model_shape.h moe_latent).
    int moe_latent = 0;
    double attention_dropout = 0, hidden_dropout = 0;
    torch::Dtype dtype = torch::kFloat32;

    // The rank of the layout (layout_rank.h). Sizes above are the whole model's; the Model divides them:
    // heads, query groups, FFN, shared experts and vocabulary by TP, the sequence by CP (and the layers'
    // residual stream, norms and dropout by TP again under SP), routed experts by EP, their FFN by
    // expert-TP.
    int tp = 1, cp = 1, ep = 1, etp = 1;
    bool sp = false;
    bool has_embedding = true, has_head = true; // first / last pipeline stage
    bool grouped_gemm = false; // moe_grouped_gemm: one [local experts, out, in] weight per FC
    LayoutRank layout;
};

// The rank of the recipe's layout that `rank_of_layout` names (default: the estimator's hottest).
ModelConfig modelConfig(const Recipe& resolved, std::optional<int> rank_of_layout = std::nullopt);

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
// The recompute labels the engine builds a checkpoint for (the label table's rows without a not_built
// reason; tests/engine checks the two agree).
const std::set<std::string>& builtRecomputeLabels();
RecomputePlan recomputePlan(const Recipe& resolved, const ModelConfig& config);

class Model {
public:
    Model(ModelConfig config, RecomputePlan plan, const torch::Device& device, uint64_t seed);
    ~Model();
    Model(const Model&) = delete;
    Model& operator=(const Model&) = delete;

    // Random token ids and labels of shape [seq, micro_batch], drawn from `seed`.
    std::pair<torch::Tensor, torch::Tensor> batch(uint64_t seed) const;
    // Forward pass of the whole stage to the mean cross-entropy loss (fp32). A stage without the loss head
    // ends in sum(output x g) with a fixed g (the gradient it would receive); one without the embedding
    // starts from a received activation.
    torch::Tensor loss(const torch::Tensor& tokens, const torch::Tensor& labels);

    // One model chunk (virtual pipeline) of one micro-batch, as the pipeline schedule runs it: from the
    // tokens (chunk 0 of the first stage) or from `received` (the activation the previous stage sends,
    // a leaf with requires_grad), to the loss (the last chunk of the last stage) or to the activation it
    // sends. `aux` holds the MoE load-balancing losses of the chunk (undefined when none).
    struct ChunkOutput {
        torch::Tensor out, aux;
        bool is_loss = false;
    };
    ChunkOutput chunkForward(
        int chunk, const torch::Tensor& tokens, const torch::Tensor& labels, const torch::Tensor& received);
    bool chunkStartsFromTokens(int chunk) const { return chunk == 0 && config_.has_embedding; }
    // The activation a stage receives, [s / CP (/ TP under SP), b, h], random, requires_grad.
    torch::Tensor receivedActivation() const;
    int chunks() const;

    const std::vector<std::pair<std::string, torch::Tensor>>& parameters() const { return params_; }
    const ModelConfig& config() const { return config_; }
    const RecomputePlan& plan() const { return plan_; }
    // A training step begins: under FP8 the TE linears quantize their weights anew at their first use.
    void beginStep() { fp8_weights_.beginStep(); }
    int64_t fp8WeightBytes() const { return fp8_weights_.bytes(); }

    struct Layer; // defined in model.cpp

private:
    torch::Tensor param(
        const std::string& name, std::vector<int64_t> shape, bool ones = false, bool uninitialized = false);
    torch::Tensor biasParam(bool present, const std::string& name, int64_t size);
    torch::Tensor layerForward(const Layer& layer, torch::Tensor x);
    torch::Tensor norm(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) const;
    torch::Tensor linear(
        const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias = {}) const;
    // residual + dropout(out + bias), Megatron's bias-dropout-add after a row-parallel linear.
    torch::Tensor biasDropoutAdd(
        const torch::Tensor& out, const torch::Tensor& bias, const torch::Tensor& residual) const;
    torch::Tensor dropout(const torch::Tensor& x, double p) const;
    torch::Tensor attention(const Layer& layer, const torch::Tensor& x);
    torch::Tensor coreAttention(
        const Layer& layer, const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v);
    // Unfused attention up to the dropped probabilities and V ([b*np, sq, sk], [b*np, sk, hv]); the tail
    // multiplies them and lays the context out as [sq, b, np*hv].
    std::vector<torch::Tensor> unfusedAttentionHead(
        const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, int layer_number);
    struct Tail unfusedAttentionTail(int64_t b, int64_t np) const;
    torch::Tensor repeatGroups(const torch::Tensor& t, int64_t heads) const;
    // A dense layer up to its MLP activation: {residual stream before the MLP, activation}. Only for
    // full-recompute units with no hidden dropout, where the layer ends with x + fc2(act).
    std::vector<torch::Tensor> denseLayerHead(const Layer& layer, torch::Tensor x);
    // Rotary embedding of the first cos.size(-1) channels of x [s, b, n, d] (rotate-half layout).
    torch::Tensor rope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) const;
    torch::Tensor mlp(const torch::Tensor& x, const torch::Tensor& fc1, const torch::Tensor& fc1_b,
        const torch::Tensor& fc2) const;
    // The MLP activation of FC1's output, times the routed tokens' probabilities [R] when given (moe_act).
    // bias_activation_fusion: Megatron's fused function, which keeps FC1's output only.
    torch::Tensor activation(const torch::Tensor& fc1_out, const torch::Tensor& probs = {}) const;
    torch::Tensor moe(const Layer& layer, const torch::Tensor& x);
    // A hybrid layer's mixers (engine/ssm.h): the Mamba mixer and GatedDeltaNet, each from the layer input
    // to its output projection (the input norm fused into in_proj, as the hybrid spec builds them).
    torch::Tensor mambaMixer(const Layer& layer, const torch::Tensor& x);
    torch::Tensor gdnMixer(const Layer& layer, const torch::Tensor& x);
    // The layer up to the residual after its mixer, and from there through its MLP (layerForward).
    torch::Tensor mixerPart(const Layer& layer, torch::Tensor x);
    torch::Tensor ffnPart(const Layer& layer, torch::Tensor x);
    torch::Tensor moeLayer(const Layer& layer, const torch::Tensor& x);
    // The experts' FC over tokens sorted by local expert: per-expert linears (SequentialMLP) or one grouped
    // GEMM over the [E, out, in] weight with the per-expert counts on the device (GroupedMLP).
    torch::Tensor expertLinear(const Layer& layer, bool fc1, const torch::Tensor& sorted,
        const torch::Tensor& counts_on_device, const int64_t* counts_on_host,
        fp8::SavedCodes* saved = nullptr) const;
    torch::Tensor embed(const torch::Tensor& tokens);
    torch::Tensor runLayers(int chunk, torch::Tensor x); // chunk -1: every layer
    torch::Tensor head(torch::Tensor x, const torch::Tensor& labels);
    // Column-parallel linear under SP: all-gather the sequence, then the linear; keeps the local input
    // only (Megatron's LinearWithGradAccumulationAndAsyncCommunication gathers again in backward).
    torch::Tensor columnLinear(
        const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias = {}) const;
    // Row-parallel linear's reduce-scatter under SP ([s, ...] -> [s / TP, ...]); identity otherwise.
    torch::Tensor rowReduce(const torch::Tensor& x) const;
    // A Transformer Engine linear of the layer (linear_qkv, linear_proj, linear_fc1 / fc2, the shared and
    // latent projections): under FP8 engine/fp8.h's, else columnLinear (column) or linear.
    torch::Tensor teLinear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
        bool column, bool save_original_input = false) const;

    ModelConfig config_;
    RecomputePlan plan_;
    mutable fp8::WeightCache fp8_weights_; // TE's quantized weight copies (FP8 only)
    torch::Device device_;
    torch::TensorOptions options_;
    std::vector<std::pair<std::string, torch::Tensor>> params_;
    std::vector<Layer> layers_;
    torch::Tensor embedding_, position_embedding_, final_norm_w_, final_norm_b_;
    torch::Tensor output_; // the embedding itself when tied
    torch::Tensor causal_mask_; // unfused attention: true above the diagonal
    torch::Tensor scores_input_buffer_; // unfused attention: Megatron's global memory buffer (baddbmm input)
    torch::Tensor rope_cos_, rope_sin_; // MLA: [seq, 1, 1, qk_pos_emb_head_dim]
    torch::Tensor rotary_cos_, rotary_sin_; // standard attention with rope: [seq, 1, 1, rotary_dim]
    std::vector<torch::Tensor> aux_losses_; // MoE load-balancing losses of the current forward pass
    torch::Tensor sent_grad_; // a stage without the loss head: the gradient its output receives
    // Per-rank sizes.
    int64_t np_ = 0, ng_ = 0, ffn_ = 0, moe_ffn_ = 0, shared_ffn_ = 0, vocab_ = 0, local_experts_ = 0;
    int64_t seq_ = 0; // the rank's sequence (s / CP)
    int64_t layer_seq_ = 0; // the layers' residual stream: s / CP / TP under SP
};

} // namespace rs::engine
