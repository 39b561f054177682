// SPDX-License-Identifier: Apache-2.0
#include "engine/model.h"

#include <cmath>

#include <ATen/CPUGeneratorImpl.h>

#include "core/attention_softmax.h"
#include "core/flops.h"
#include "core/model_shape.h"
#include "core/recompute_labels.h"
#include "engine/checkpoint.h"
#include "engine/cross_entropy.h"
#include "engine/memory_probe.h"
#include "engine/ssm.h"
#include "engine/torch_compat.h"

namespace rs::engine {

using torch::Tensor;
using Tensors = std::vector<Tensor>;

namespace {

constexpr double kNormEps = 1e-5;

// ---------------------------------------------------------------------------------------------------------
// The collectives of one rank as local operations with the same shapes (one device; their values are not
// the real job's, their sizes and what autograd keeps are). Dimension 0 is the sequence ([s, b, ...]) or
// the tokens ([T, ...]).

// All-gather along dimension 0 over n ranks (gather_from_sequence_parallel_region): n copies of the local
// tensor; backward: reduce-scatter (the sum of the n slices).
class GatherSeq : public torch::autograd::Function<GatherSeq> {
public:
    static Tensor forward(torch::autograd::AutogradContext* ctx, const Tensor& x, int64_t n)
    {
        ctx->saved_data["n"] = n;
        std::vector<int64_t> reps(static_cast<size_t>(x.dim()), 1);
        reps[0] = n;
        return x.repeat(reps);
    }
    static torch::autograd::variable_list backward(
        torch::autograd::AutogradContext* ctx, torch::autograd::variable_list grads)
    {
        const int64_t n = ctx->saved_data["n"].toInt();
        const Tensor& g = grads[0];
        std::vector<int64_t> shape = g.sizes().vec();
        shape[0] /= n;
        shape.insert(shape.begin(), n);
        return { g.reshape(shape).sum(0), Tensor() };
    }
};

// Reduce-scatter along dimension 0 over n ranks (reduce_scatter_to_sequence_parallel_region): this rank's
// slice, a tensor of its own; backward: all-gather of the gradient.
class ScatterSeq : public torch::autograd::Function<ScatterSeq> {
public:
    static Tensor forward(torch::autograd::AutogradContext* ctx, const Tensor& x, int64_t n)
    {
        ctx->saved_data["n"] = n;
        return x.narrow(0, 0, x.size(0) / n).clone();
    }
    static torch::autograd::variable_list backward(
        torch::autograd::AutogradContext* ctx, torch::autograd::variable_list grads)
    {
        const int64_t n = ctx->saved_data["n"].toInt();
        std::vector<int64_t> reps(static_cast<size_t>(grads[0].dim()), 1);
        reps[0] = n;
        return { grads[0].repeat(reps), Tensor() };
    }
};

// Column-parallel linear under sequence parallelism: all-gather the input's sequence, multiply; keeps
// only the local input and gathers it again in backward, whose input gradient is reduce-scattered.
class GatherLinear : public torch::autograd::Function<GatherLinear> {
public:
    static Tensor forward(torch::autograd::AutogradContext* ctx, const Tensor& x, const Tensor& weight,
        const Tensor& bias, int64_t n)
    {
        ctx->saved_data["n"] = n;
        ctx->saved_data["bias"] = bias.numel() > 0; // an empty tensor: no bias
        ctx->save_for_backward({ x, weight });
        std::vector<int64_t> reps(static_cast<size_t>(x.dim()), 1);
        reps[0] = n;
        const Tensor full = x.repeat(reps);
        return bias.numel() > 0 ? at::linear(full, weight, bias) : at::linear(full, weight);
    }
    static torch::autograd::variable_list backward(
        torch::autograd::AutogradContext* ctx, torch::autograd::variable_list grads)
    {
        const int64_t n = ctx->saved_data["n"].toInt();
        const bool has_bias = ctx->saved_data["bias"].toBool();
        const auto saved = ctx->get_saved_variables();
        const Tensor& x = saved[0];
        const Tensor& weight = saved[1];
        const Tensor& g = grads[0];
        std::vector<int64_t> reps(static_cast<size_t>(x.dim()), 1);
        reps[0] = n;
        const int64_t out = weight.size(0), in = weight.size(1);
        const Tensor g2 = g.reshape({ -1, out });
        Tensor grad_w;
        {
            const Tensor full = x.repeat(reps);
            grad_w = g2.t().mm(full.reshape({ -1, in }));
        }
        Tensor grad_full = g.matmul(weight);
        std::vector<int64_t> shape = grad_full.sizes().vec();
        shape[0] /= n;
        shape.insert(shape.begin(), n);
        Tensor grad_x = grad_full.reshape(shape).sum(0);
        grad_full = Tensor();
        return { grad_x, grad_w, has_bias ? g2.sum(0) : Tensor(), Tensor() };
    }
};

// The grouped GEMM's fallback (no torch::_grouped_mm: LibTorch before 2.9, CPU, fp32): the tokens sorted by
// expert are padded into [E, C, in] (C: the most tokens any expert got), one batched matmul with the
// [E, out, in] weight, and the rows taken back; keeps only the unpadded input (as _grouped_mm does), the
// padded buffers live inside forward and backward.
class PaddedGroupedLinear : public torch::autograd::Function<PaddedGroupedLinear> {
public:
    // rows: [R] the padded row (e x C + position) of each sorted token.
    static Tensor forward(torch::autograd::AutogradContext* ctx, const Tensor& x, const Tensor& weight,
        const Tensor& rows, int64_t capacity)
    {
        ctx->saved_data["capacity"] = capacity;
        ctx->save_for_backward({ x, weight, rows });
        const int64_t e = weight.size(0), in = weight.size(2);
        Tensor padded = torch::zeros({ e * capacity, in }, x.options()).index_copy_(0, rows, x);
        Tensor y = at::bmm(padded.view({ e, capacity, in }), weight.transpose(1, 2));
        padded = Tensor();
        return y.view({ e * capacity, -1 }).index_select(0, rows);
    }
    static torch::autograd::variable_list backward(
        torch::autograd::AutogradContext* ctx, torch::autograd::variable_list grads)
    {
        const int64_t capacity = ctx->saved_data["capacity"].toInt();
        const auto saved = ctx->get_saved_variables();
        const Tensor& x = saved[0];
        const Tensor& weight = saved[1];
        const Tensor& rows = saved[2];
        const int64_t e = weight.size(0), out = weight.size(1), in = weight.size(2);
        const Tensor g = torch::zeros({ e * capacity, out }, grads[0].options())
                             .index_copy_(0, rows, grads[0].contiguous())
                             .view({ e, capacity, out });
        Tensor grad_w;
        {
            const Tensor padded = torch::zeros({ e * capacity, in }, x.options())
                                      .index_copy_(0, rows, x)
                                      .view({ e, capacity, in });
            grad_w = at::bmm(g.transpose(1, 2), padded);
        }
        Tensor grad_x = at::bmm(g, weight).view({ e * capacity, in }).index_select(0, rows);
        return { grad_x, grad_w, Tensor(), Tensor() };
    }
};

// Megatron's fused bias activations (bias_activation_fusion; megatron/core/fusions/fused_bias_swiglu.py,
// fused_bias_geglu.py, fused_bias_gelu.py): one autograd node that keeps only its input (FC1's output, the
// bias already added by the worker's FC1) and recomputes the activation in backward, where the eager
// path's silu(a) * b also keeps silu(a). The same ATen ops as the eager path, forward and backward, so the
// values are the eager path's.
// The activations the worker builds: GeLU, SiLU (SwiGLU with gated_linear_unit) and squared ReLU
// (megatron/core/activations.py squared_relu: relu(x)^2).
enum Act : int64_t { kGelu = 0, kSilu = 1, kSquaredRelu = 2 };
Tensor actOf(const Tensor& a, int64_t act)
{
    if (act == kSquaredRelu)
        return at::relu(a).pow(2);
    return act == kSilu ? at::silu(a) : at::gelu(a);
}
Tensor actBackward(const Tensor& grad, const Tensor& a, int64_t act)
{
    if (act == kSquaredRelu)
        return grad * at::relu(a) * 2;
    return act == kSilu ? at::silu_backward(grad, a) : at::gelu_backward(grad, a);
}
Tensor fusedForward(const Tensor& x, int64_t act, bool gated)
{
    if (!gated)
        return actOf(x, act);
    const auto halves = x.chunk(2, -1);
    return actOf(halves[0], act) * halves[1];
}
// The input's gradient from the output's. Gated: both halves written into the one [.., 2F] gradient (no
// concatenation of two [.., F] pieces), one [.., F] temporary at a time.
Tensor fusedBackward(const Tensor& grad, const Tensor& x, int64_t act, bool gated)
{
    if (!gated)
        return actBackward(grad, x, act);
    const auto halves = x.chunk(2, -1);
    Tensor grad_x = at::empty_like(x);
    const int64_t f = halves[0].size(-1);
    Tensor grad_a = grad_x.narrow(-1, 0, f), grad_b = grad_x.narrow(-1, f, f);
    at::mul_out(grad_b, grad, actOf(halves[0], act));
    const Tensor grad_act = grad * halves[1];
    if (act == kSilu)
        at::silu_backward_out(grad_a, grad_act, halves[0]);
    else if (act == kGelu)
        at::gelu_backward_out(grad_a, grad_act, halves[0]);
    else
        grad_a.copy_(actBackward(grad_act, halves[0], act));
    return grad_x;
}

// act(x) (SwiGLU, GeGLU: act(a) * b), as BiasSwiGLUFunction / GeGLUFunction / GeLUFunction.
class FusedActivation : public torch::autograd::Function<FusedActivation> {
public:
    static Tensor forward(torch::autograd::AutogradContext* ctx, const Tensor& x, int64_t act, bool gated)
    {
        ctx->saved_data["act"] = act;
        ctx->saved_data["gated"] = gated;
        ctx->save_for_backward({ x });
        return fusedForward(x, act, gated);
    }
    static torch::autograd::variable_list backward(
        torch::autograd::AutogradContext* ctx, torch::autograd::variable_list grads)
    {
        const Tensor x = ctx->get_saved_variables()[0];
        return { fusedBackward(
                     grads[0], x, ctx->saved_data["act"].toInt(), ctx->saved_data["gated"].toBool()),
            Tensor(), Tensor() };
    }
};

// act(x) x probs per routed token [R] (weighted_bias_swiglu_impl, weighted_squared_relu_impl: the experts'
// activation with the routing probabilities inside the function): keeps the input and the probabilities.
class WeightedFusedActivation : public torch::autograd::Function<WeightedFusedActivation> {
public:
    static Tensor forward(
        torch::autograd::AutogradContext* ctx, const Tensor& x, const Tensor& probs, int64_t act, bool gated)
    {
        ctx->saved_data["act"] = act;
        ctx->saved_data["gated"] = gated;
        ctx->save_for_backward({ x, probs });
        return fusedForward(x, act, gated) * probs.unsqueeze(-1);
    }
    static torch::autograd::variable_list backward(
        torch::autograd::AutogradContext* ctx, torch::autograd::variable_list grads)
    {
        const auto saved = ctx->get_saved_variables();
        const Tensor& x = saved[0];
        const Tensor& probs = saved[1];
        const int64_t act = ctx->saved_data["act"].toInt();
        const bool gated = ctx->saved_data["gated"].toBool();
        const Tensor& g = grads[0];
        Tensor grad_probs = (g * fusedForward(x, act, gated)).sum(-1);
        Tensor grad_x = fusedBackward(g * probs.unsqueeze(-1), x, act, gated);
        return { grad_x, grad_probs, Tensor(), Tensor() };
    }
};

// Tokens per expert, on the device and without a host synchronisation (CUDA's bincount reads the input's
// maximum on the host to size its output).
Tensor countsOnDevice(const Tensor& ids, int64_t n)
{
    return torch::zeros({ n }, ids.options()).index_add_(0, ids, torch::ones_like(ids));
}

} // namespace

const std::set<std::string>& builtRecomputeLabels()
{
    // Each has its checkpoint in Model below (plan_.has(label)); the label table says why the others have
    // none.
    static const std::set<std::string> labels = { "core_attn", "mla_up_proj", "layernorm", "moe_act", "mlp",
        "moe", "shared_experts", "gdn_norm_out", "gdn" };
    return labels;
}

struct Model::Layer {
    int global = 0;
    bool moe = false;
    LayerKind kind;
    // Mamba mixer (mamba_mixer.py): in_proj [z x B C dt], conv1d weight [C, W] and bias, dt_bias, A_log, D
    // per head, the gated norm's weight, out_proj.
    Tensor m_in, m_conv_w, m_conv_b, m_dt_bias, m_A_log, m_D, m_norm_w, m_out;
    // GatedDeltaNet (gated_delta_net/common.py): in_proj [q k v z beta alpha], conv1d weight [C, W] (no
    // bias), dt_bias, A_log per value head, out_norm's weight [value head dim], out_proj.
    Tensor g_in, g_conv_w, g_dt_bias, g_A_log, g_norm_w, g_out;
    Tensor ln1_w, ln1_b, ln2_w, ln2_b;
    Tensor qkv, qkv_b, proj, proj_b; // standard attention (proj also for MLA); biases may be undefined
    Tensor q, q_down, q_ln_w, q_ln_b, q_up, kv_down, kv_ln_w, kv_ln_b, kv_up; // MLA
    Tensor fc1, fc1_b, fc2, fc2_b; // dense MLP
    Tensor router, shared_fc1, shared_fc2; // MoE
    // Latent MoE: fc1_latent_proj [L, h] and fc2_latent_proj [h, L] (biases may be undefined); undefined
    // without it.
    Tensor fc1_latent, fc1_latent_b, fc2_latent, fc2_latent_b;
    std::vector<Tensor> expert_fc1, expert_fc1_b, expert_fc2, expert_fc2_b; // SequentialMLP
    Tensor grouped_fc1, grouped_fc2; // GroupedMLP: [local experts, out, in]
};

ModelConfig modelConfig(const Recipe& r, std::optional<int> rank_of_layout)
{
    ModelConfig c;
    c.layout = layoutRank(r, rank_of_layout);
    c.global_layers = c.layout.layers;
    c.chunk = c.layout.chunk;
    c.stage_scope = c.layout.scope;
    const std::vector<LayerKind> kinds = layerKinds(r);
    for (int g : c.layout.layers) {
        c.moe.push_back(isMoeLayer(r, g));
        c.kinds.push_back(
            g >= 0 && static_cast<size_t>(g) < kinds.size() ? kinds[static_cast<size_t>(g)] : LayerKind {});
    }
    c.tp = c.layout.tp;
    c.cp = c.layout.cp;
    c.ep = c.layout.ep;
    c.etp = c.layout.etp;
    c.sp = c.layout.sp;
    c.has_embedding = c.layout.first_stage;
    c.has_head = c.layout.last_stage;
    c.grouped_gemm = r.moe_grouped_gemm;
    // The widths the estimator reads too (core/model_shape.h).
    const ModelShape shape = modelShape(r);
    c.hidden = static_cast<int>(shape.hidden);
    c.ffn = static_cast<int>(shape.ffn);
    c.heads = static_cast<int>(shape.heads);
    c.query_groups = static_cast<int>(shape.query_groups);
    c.kv_channels = static_cast<int>(shape.kv_channels);
    c.seq = r.seq_length;
    c.micro_batch = r.micro_batch_size;
    c.vocab = static_cast<int>(shape.vocab);
    c.tokenizer_vocab = r.vocab_size;
    c.bias_linear = r.add_bias_linear;
    c.qkv_bias = r.add_bias_linear || r.add_qkv_bias;
    c.position_embedding = r.position_embedding_type;
    c.max_position_embeddings = r.max_position_embeddings.value_or(r.seq_length);
    c.rotary_base = r.rotary_base;
    c.tied_embeddings = !r.untie_embeddings_and_output_weights;
    // TransformerConfig: apply_query_key_layer_scaling turns attention_softmax_in_fp32 on.
    c.query_key_layer_scaling = r.apply_query_key_layer_scaling;
    c.softmax_in_fp32 = r.attention_softmax_in_fp32 || r.apply_query_key_layer_scaling;
    {
        const int64_t s = c.seq / std::max(1, c.cp);
        c.fused_softmax = fusedMaskedSoftmaxApplies(r, c.micro_batch, c.heads / std::max(1, c.tp), s, s);
    }
    if (r.moe_router_load_balancing_type == "aux_loss" || r.moe_router_load_balancing_type == "seq_aux_loss")
        c.moe_aux_loss_coeff = r.moe_aux_loss_coeff;
    c.moe_expert_bias = r.add_bias_linear && !r.moe_grouped_gemm;
    c.rmsnorm = r.normalization == "RMSNorm";
    c.gated = r.gated_linear_unit;
    c.silu = r.activation_func == "silu";
    c.squared_relu = r.activation_func == "squared_relu";
    c.weighted_squared_relu = c.squared_relu && r.use_fused_weighted_squared_relu;
    c.mamba_heads = static_cast<int>(shape.mamba_heads);
    c.mamba_head_dim = static_cast<int>(shape.mamba_head_dim);
    c.mamba_groups = static_cast<int>(shape.mamba_groups);
    c.mamba_state = static_cast<int>(shape.mamba_state);
    c.mamba_chunk = std::max(1, r.mamba_chunk_size);
    c.mamba_conv = kMambaConvWidth;
    c.gdn_key_heads = static_cast<int>(shape.gdn_key_heads);
    c.gdn_value_heads = static_cast<int>(shape.gdn_value_heads);
    c.gdn_key_dim = static_cast<int>(shape.gdn_key_dim);
    c.gdn_value_dim = static_cast<int>(shape.gdn_value_dim);
    c.gdn_conv = r.linear_conv_kernel_dim;
    c.bias_activation_fusion = r.bias_activation_fusion;
    c.attention_backend = r.attention_backend;
    // A hybrid stack is always Megatron's hybrid_stack_spec, Transformer Engine's modules (estimator.cpp).
    c.te_spec = r.transformer_impl == "transformer_engine" || isHybrid(r);
    c.mla = r.multi_latent_attention;
    c.q_lora_rank = r.q_lora_rank.value_or(0);
    c.kv_lora_rank = r.kv_lora_rank;
    c.qk_head_dim = r.qk_head_dim;
    c.qk_pos_emb_head_dim = r.qk_pos_emb_head_dim;
    c.v_head_dim = r.v_head_dim;
    // Rotary channels: a whole even number of them (RotaryEmbedding: kv_channels x rotary_percent).
    c.rotary_dim = static_cast<int>(c.kv_channels * r.rotary_percent) / 2 * 2;
    c.experts = static_cast<int>(shape.experts);
    c.topk = r.moe_router_topk;
    c.moe_ffn = static_cast<int>(shape.moe_ffn);
    c.shared_ffn = static_cast<int>(shape.shared_ffn);
    c.moe_latent = static_cast<int>(shape.moe_latent);
    c.attention_dropout = r.attention_dropout;
    c.hidden_dropout = r.hidden_dropout;
    c.dtype = r.bf16 ? torch::kBFloat16 : (r.fp16 ? torch::kHalf : torch::kFloat32);
    c.fp8.enabled = r.fp8 && !r.fp8->empty();
    c.fp8.delayed = r.fp8_recipe == "delayed";
    c.fp8.e5m2_grads = r.fp8.value_or("") == "hybrid";
    return c;
}

RecomputePlan recomputePlan(const Recipe& r, const ModelConfig& c)
{
    // What the engine does not build is refused here, before anything is allocated.
    const std::string instead = ". For this recipe's memory and time on one GPU run the real job as one rank "
                                "of its layout (recompute sweep --job ... --one-rank), or read the estimate "
                                "(recompute estimate), which models it";
    if (r.fp4)
        throw EngineError("fp4",
            "the worker runs bf16, fp16, fp32 and FP8 through Transformer Engine's linears (allowed: fp4 "
            "unset)"
                + instead);
    if (c.fp8.enabled) {
        // FP8 as Transformer Engine's linears keep it (engine/fp8.h), on the stacks measured against real
        // Megatron-LM + TE (tests/fixtures/logs/megatron-lm-fp8): dense and MoE GPT layers, TP without SP.
        if (!c.te_spec)
            throw EngineError("transformer_impl",
                "fp8 runs through Transformer Engine's modules (allowed: transformer_engine with fp8)"
                    + instead);
        if (*r.fp8 != "hybrid" && *r.fp8 != "e4m3")
            throw EngineError("fp8", "the worker's FP8 formats are hybrid and e4m3, not '" + *r.fp8 + "'");
        if (r.fp8_recipe != "tensorwise" && r.fp8_recipe != "delayed")
            throw EngineError("fp8_recipe",
                "the worker quantizes per tensor: tensorwise (current scaling) and delayed, not '"
                    + r.fp8_recipe + "' (its scales are laid out by block)" + instead);
        if (r.fp8_param_gather)
            throw EngineError("fp8_param_gather",
                "the worker keeps 16-bit parameters and their quantized copies (allowed: false)" + instead);
        if (c.mla)
            throw EngineError("multi_latent_attention",
                "the worker's FP8 path builds standard attention (allowed: false under fp8)" + instead);
        if (c.sp)
            throw EngineError("sequence_parallel",
                "under FP8 TE gathers the sequence quantized, which the worker does not (allowed: false "
                "under "
                "fp8)"
                    + instead);
        for (const LayerKind& k : c.kinds)
            if (k.mixer == LayerMixer::Mamba || k.mixer == LayerMixer::GatedDeltaNet)
                throw EngineError("hybrid_layer_pattern",
                    "the worker's FP8 path builds attention, MLP and MoE layers, not " + layerKindName(k)
                        + instead);
    }
    // Bridge's LoRA freezes the model and trains adapters; the worker builds neither.
    if (r.peft)
        throw EngineError("peft.scheme",
            "the worker trains every parameter and builds no LoRA adapter (allowed: peft unset). For this "
            "LoRA job's memory on one GPU run the real job as one rank of its layout (recompute sweep --job "
            "... --one-rank), or read the estimate (recompute estimate), which models Bridge's LoRA; "
            "peft=null measures the job trained in full");
    // qk_layernorm's norms on the query and key heads: the worker's attention has none.
    if (modelShape(r).qk_head_norms)
        throw EngineError("qk_layernorm",
            "the worker builds no norm on the query and key heads (allowed: qk_layernorm false). For this "
            "job's memory on one GPU run the real job as one rank of its layout (recompute sweep --job ... "
            "--one-rank), or read the estimate (recompute estimate), which counts the norms; "
            "qk_layernorm=false measures the same job without them");
    // GatedDeltaNet layers come from linear_attention_freq (a GPT model) or 'G' (a hybrid stack); the
    // variant names them. gdn2's gates and kernel differ (gated_delta_net/gdn2.py): not built.
    const std::string variant = r.experimental_attention_variant.value_or("");
    if (!variant.empty() && variant != "gdn" && variant != "gated_delta_net")
        throw EngineError("experimental_attention_variant",
            "the engine builds standard attention, MLA and GatedDeltaNet (gdn, gated_delta_net), not '"
                + variant + "'");
    for (size_t i = 0; i < c.kinds.size(); ++i)
        if (c.kinds[i].mixer == LayerMixer::Unmodelled)
            throw EngineError("hybrid_layer_pattern",
                "layer " + std::to_string(c.global_layers[i]) + " is " + layerKindName(c.kinds[i])
                    + ": the engine builds M, G, *, - and E layers (RS38)");
    if (r.hybrid_layer_pattern && parseHybridPattern(*r.hybrid_layer_pattern).mtp_depths > 0)
        throw EngineError("hybrid_layer_pattern",
            "the engine builds no multi-token-prediction layers ('/' in the pattern)");
    for (const LayerKind& k : c.kinds)
        if (k.mixer == LayerMixer::GatedDeltaNet && !c.silu)
            throw EngineError("activation_func",
                "GatedDeltaNet's conv takes activation_func, which must be silu (RT21), not '"
                    + r.activation_func + "'");
    if (r.enable_mhc_connections || r.enable_hyper_connections)
        throw EngineError("enable_mhc_connections", "the engine builds no hyper-connections");
    if (r.mtp_num_layers && *r.mtp_num_layers > 0)
        throw EngineError("mtp_num_layers", "the engine builds no multi-token-prediction layers");
    if (r.cpu_offloading)
        throw EngineError("cpu_offloading", "the engine does not offload activations");
    if (c.global_layers.empty())
        throw EngineError("num_layers", "the pipeline stage holds no layers");
    if (c.position_embedding != "learned_absolute" && c.position_embedding != "rope"
        && c.position_embedding != "none")
        throw EngineError("position_embedding_type",
            "the engine builds learned_absolute, rope and none, not '" + c.position_embedding + "'");
    if (c.position_embedding == "learned_absolute" && c.max_position_embeddings < c.seq)
        throw EngineError("max_position_embeddings",
            "learned absolute position embeddings need max_position_embeddings >= seq_length ("
                + std::to_string(c.max_position_embeddings) + " < " + std::to_string(c.seq) + ")");
    if (c.position_embedding == "rope" && !c.mla && c.rotary_dim <= 0)
        throw EngineError("rotary_percent", "rope needs at least two rotary channels");
    if (c.mla && c.q_lora_rank == 0 && r.q_lora_rank)
        throw EngineError("q_lora_rank", "must be positive or null");

    RecomputePlan plan;
    const int n = static_cast<int>(c.global_layers.size());
    const std::string granularity = r.recompute_granularity.value_or("");
    if (granularity == "selective") {
        for (const auto& label : effectiveRecomputeModules(r)) {
            if (!builtRecomputeLabels().count(label)) {
                const RecomputeLabel* row = findRecomputeLabel(label);
                std::string built;
                for (const auto& known : recomputeLabels())
                    if (builtRecomputeLabels().count(std::string(known.name)))
                        built += (built.empty() ? "" : ", ") + std::string(known.name);
                throw EngineError("recompute_modules",
                    "the engine cannot model the label '" + label
                        + "': " + (row ? std::string(row->not_built) : "it is not a label the engine knows")
                        + "; it models " + built);
            }
            plan.modules.insert(label);
        }
    }
    if (granularity == "full") {
        plan.method = r.recompute_method.value_or("");
        plan.num_layers = r.recompute_num_layers.value_or(0);
        if (plan.method != "uniform" && plan.method != "block")
            throw EngineError(
                "recompute_method", "full recompute needs uniform or block (got '" + plan.method + "')");
        if (plan.method == "uniform" && plan.num_layers <= 0)
            throw EngineError("recompute_num_layers",
                "uniform needs recompute_num_layers >= 1 (Megatron's loop would never advance)");
        // recompute_num_layers applies per model chunk (megatron-rules.md (d)).
        int first = 0;
        while (first < n) {
            int end = first;
            while (end < n && c.chunk[end] == c.chunk[first])
                ++end;
            const int chunk_layers = end - first;
            if (plan.method == "uniform") {
                for (int idx = 0; idx < chunk_layers; idx += plan.num_layers)
                    plan.units.push_back(
                        { first + idx, std::min(plan.num_layers, chunk_layers - idx), true });
            } else {
                for (int idx = 0; idx < chunk_layers; ++idx)
                    plan.units.push_back({ first + idx, 1, idx < plan.num_layers });
            }
            first = end;
        }
    } else {
        for (int i = 0; i < n; ++i)
            plan.units.push_back({ i, 1, false });
    }
    return plan;
}

Model::Model(ModelConfig config, RecomputePlan plan, const torch::Device& device, uint64_t seed)
    : config_(std::move(config))
    , plan_(std::move(plan))
    , device_(device)
    , options_(torch::TensorOptions().device(device).dtype(config_.dtype))
{
    torch::manual_seed(seed);
    const auto& c = config_;
    const int64_t h = c.hidden;
    const int64_t tp = std::max(1, c.tp);
    // This rank's shares (Megatron's ColumnParallelLinear / RowParallelLinear splits, the vocabulary split
    // of VocabParallelEmbedding, the local experts of MoELayer).
    np_ = c.heads / tp;
    ng_ = std::max<int64_t>(1, c.query_groups / tp);
    ffn_ = c.ffn / tp;
    moe_ffn_ = c.moe_ffn / std::max(1, c.etp);
    shared_ffn_ = c.shared_ffn / tp;
    vocab_ = c.vocab / tp;
    local_experts_ = c.experts / std::max(1, c.ep);
    seq_ = c.seq / std::max(1, c.cp);
    layer_seq_ = c.sp ? seq_ / tp : seq_;
    MemoryRegion region(MemoryCategory::Other);
    if (c.has_embedding) {
        embedding_ = param("embedding.word_embeddings.weight", { vocab_, h });
        if (c.position_embedding == "learned_absolute")
            position_embedding_
                = param("embedding.position_embeddings.weight", { c.max_position_embeddings, h });
    }
    const int64_t glu = c.gated ? 2 : 1;
    for (size_t i = 0; i < c.global_layers.size(); ++i) {
        Layer L;
        L.global = c.global_layers[i];
        L.moe = c.moe[i];
        L.kind = i < c.kinds.size()
            ? c.kinds[i]
            : LayerKind { LayerMixer::Attention, L.moe ? LayerFfn::Moe : LayerFfn::Dense, 0 };
        L.moe = L.kind.ffn == LayerFfn::Moe;
        const bool has_mixer = L.kind.mixer != LayerMixer::None, has_ffn = L.kind.ffn != LayerFfn::None;
        const std::string p = "decoder.layers." + std::to_string(L.global) + ".";
        if (has_mixer)
            L.ln1_w = param(p + "input_layernorm.weight", { h }, true);
        if (has_ffn)
            L.ln2_w = param(p + "pre_mlp_layernorm.weight", { h }, true);
        if (!c.rmsnorm) {
            if (has_mixer)
                L.ln1_b = param(p + "input_layernorm.bias", { h }, true);
            if (has_ffn)
                L.ln2_b = param(p + "pre_mlp_layernorm.bias", { h }, true);
        }
        const std::string a = p + "self_attention.";
        if (L.kind.mixer == LayerMixer::Mamba) {
            // MambaMixer's shares of one TP rank: heads and groups / TP (mamba_mixer.py __init__).
            const int64_t H = c.mamba_heads / tp, di = H * c.mamba_head_dim;
            const int64_t gn = (c.mamba_groups / tp) * c.mamba_state, conv = di + 2 * gn;
            const std::string m = p + "mixer.";
            L.m_in = param(m + "in_proj.weight", { 2 * di + 2 * gn + H, h });
            L.m_conv_w = param(m + "conv1d.weight", { conv, c.mamba_conv });
            L.m_conv_b = param(m + "conv1d.bias", { conv });
            L.m_dt_bias = param(m + "dt_bias", { H }, false, true);
            L.m_A_log = param(m + "A_log", { H }, false, true);
            L.m_D = param(m + "D", { H }, true);
            L.m_norm_w = param(m + "norm.weight", { di }, true);
            L.m_out = param(m + "out_proj.weight", { h, di });
            torch::NoGradGuard no_grad;
            // dt_bias: softplus^-1 of dt log-uniform in [0.001, 0.1]; A_log: log of A uniform in [1, 16].
            const Tensor dt
                = torch::exp(torch::rand({ H }) * (std::log(0.1) - std::log(0.001)) + std::log(0.001));
            L.m_dt_bias.copy_(dt + torch::log(-torch::expm1(-dt)));
            L.m_A_log.copy_(torch::log(torch::rand({ H }) * 15 + 1));
        } else if (L.kind.mixer == LayerMixer::GatedDeltaNet) {
            const int64_t hk = c.gdn_key_heads / tp, hv = c.gdn_value_heads / tp;
            const int64_t qk = hk * c.gdn_key_dim, v = hv * c.gdn_value_dim;
            L.g_in = param(a + "in_proj.weight", { 2 * qk + 2 * v + 2 * hv, h });
            L.g_conv_w = param(a + "conv1d.weight", { 2 * qk + v, c.gdn_conv });
            L.g_dt_bias = param(a + "dt_bias", { hv }, true);
            L.g_A_log = param(a + "A_log", { hv }, false, true);
            L.g_norm_w = param(a + "out_norm.weight", { c.gdn_value_dim }, true);
            L.g_out = param(a + "out_proj.weight", { h, v });
            torch::NoGradGuard no_grad;
            L.g_A_log.copy_(torch::log(torch::rand({ hv }) * 15 + 1));
        }
        if (L.kind.mixer != LayerMixer::Attention) {
            // No attention: the layer's MLP (or MoE) only, or a Mamba / GatedDeltaNet mixer before it.
        } else if (c.mla) {
            const int64_t dn = c.qk_head_dim, dr = c.qk_pos_emb_head_dim, dv = c.v_head_dim;
            if (c.q_lora_rank > 0) {
                L.q_down = param(a + "linear_q_down_proj.weight", { c.q_lora_rank, h });
                L.q_ln_w = param(a + "q_layernorm.weight", { c.q_lora_rank }, true);
                if (!c.rmsnorm)
                    L.q_ln_b = param(a + "q_layernorm.bias", { c.q_lora_rank }, true);
                L.q_up = param(a + "linear_q_up_proj.weight", { np_ * (dn + dr), c.q_lora_rank });
            } else {
                L.q = param(a + "linear_q_proj.weight", { np_ * (dn + dr), h });
            }
            L.kv_down = param(a + "linear_kv_down_proj.weight", { c.kv_lora_rank + dr, h });
            L.kv_ln_w = param(a + "kv_layernorm.weight", { c.kv_lora_rank }, true);
            if (!c.rmsnorm)
                L.kv_ln_b = param(a + "kv_layernorm.bias", { c.kv_lora_rank }, true);
            L.kv_up = param(a + "linear_kv_up_proj.weight", { np_ * (dn + dv), c.kv_lora_rank });
            L.proj = param(a + "linear_proj.weight", { h, np_ * dv });
        } else {
            const int64_t kv = c.kv_channels;
            L.qkv = param(a + "linear_qkv.weight", { (np_ + 2 * ng_) * kv, h });
            L.qkv_b = biasParam(c.qkv_bias, a + "linear_qkv.bias", (np_ + 2 * ng_) * kv);
            L.proj = param(a + "linear_proj.weight", { h, np_ * kv });
        }
        if (L.kind.mixer == LayerMixer::Attention)
            L.proj_b = biasParam(c.bias_linear, a + "linear_proj.bias", h);
        const std::string m = p + "mlp.";
        if (!has_ffn) {
            // A hybrid stack's mixer-only layer.
        } else if (L.moe) {
            L.router = param(m + "router.weight", { c.experts, h });
            // Latent MoE: MoELayer builds fc1_latent_proj (h -> L) and fc2_latent_proj (L -> h) after the
            // router, before the experts, parallel_mode "duplicated" (whole on every TP rank), with the
            // linear biases add_bias_linear gives; the experts then read and write L (moe_layer.py:264-301,
            // experts.py:216-242 at 2a75ac12).
            const int64_t hr = c.moe_latent > 0 ? c.moe_latent : h;
            if (c.moe_latent > 0) {
                L.fc1_latent = param(m + "fc1_latent_proj.weight", { hr, h });
                L.fc1_latent_b = biasParam(c.bias_linear, m + "fc1_latent_proj.bias", hr);
                L.fc2_latent = param(m + "fc2_latent_proj.weight", { h, hr });
                L.fc2_latent_b = biasParam(c.bias_linear, m + "fc2_latent_proj.bias", h);
            }
            const int64_t fc1_out = glu * moe_ffn_;
            if (c.grouped_gemm) {
                // GroupedMLP: one weight per FC for the local experts, drawn expert by expert in the
                // order SequentialMLP draws its own (the same values: tested).
                L.grouped_fc1
                    = param(m + "experts.linear_fc1.weight", { local_experts_, fc1_out, hr }, false, true);
                L.grouped_fc2
                    = param(m + "experts.linear_fc2.weight", { local_experts_, hr, moe_ffn_ }, false, true);
                torch::NoGradGuard no_grad;
                for (int64_t e = 0; e < local_experts_; ++e) {
                    L.grouped_fc1[e].normal_(0.0, 0.02);
                    L.grouped_fc2[e].normal_(0.0, 0.02);
                }
            } else {
                for (int64_t e = 0; e < local_experts_; ++e) {
                    L.expert_fc1.push_back(
                        param(m + "experts.linear_fc1.weight" + std::to_string(e), { fc1_out, hr }));
                    L.expert_fc2.push_back(
                        param(m + "experts.linear_fc2.weight" + std::to_string(e), { hr, moe_ffn_ }));
                    L.expert_fc1_b.push_back(biasParam(
                        c.moe_expert_bias, m + "experts.linear_fc1.bias" + std::to_string(e), fc1_out));
                    L.expert_fc2_b.push_back(
                        biasParam(c.moe_expert_bias, m + "experts.linear_fc2.bias" + std::to_string(e), hr));
                }
            }
            if (c.shared_ffn > 0) {
                L.shared_fc1 = param(m + "shared_experts.linear_fc1.weight", { glu * shared_ffn_, h });
                L.shared_fc2 = param(m + "shared_experts.linear_fc2.weight", { h, shared_ffn_ });
            }
        } else {
            L.fc1 = param(m + "linear_fc1.weight", { glu * ffn_, h });
            L.fc1_b = biasParam(c.bias_linear, m + "linear_fc1.bias", glu * ffn_);
            L.fc2 = param(m + "linear_fc2.weight", { h, ffn_ });
            L.fc2_b = biasParam(c.bias_linear, m + "linear_fc2.bias", h);
        }
        layers_.push_back(std::move(L));
    }
    if (c.has_head) {
        final_norm_w_ = param("decoder.final_layernorm.weight", { h }, true);
        if (!c.rmsnorm)
            final_norm_b_ = param("decoder.final_layernorm.bias", { h }, true);
        // Tied: the output layer multiplies by the word embedding itself (one parameter, two uses); a
        // last stage without the embedding holds its own copy (setup_embeddings_and_output_layer).
        output_
            = c.tied_embeddings && c.has_embedding ? embedding_ : param("output_layer.weight", { vocab_, h });
    } else {
        // The gradient the stage's output receives from the next stage (a fixed tensor: its values do
        // not matter, its shape does).
        sent_grad_ = torch::full(
            { layer_seq_, c.micro_batch, h }, 1.0 / double(layer_seq_ * c.micro_batch * h), options_);
    }

    if (c.attention_backend == "unfused")
        causal_mask_
            = torch::ones({ c.seq, c.seq }, torch::TensorOptions().device(device).dtype(torch::kBool))
                  .triu(1);
    if (c.mla) {
        // Rotary tables for the qk_pos_emb_head_dim part (base 10000), rotate-half layout.
        const int64_t d = c.qk_pos_emb_head_dim;
        auto fopts = torch::TensorOptions().device(device).dtype(torch::kFloat32);
        auto inv_freq = 1.0 / torch::pow(10000.0, torch::arange(0, d, 2, fopts) / static_cast<double>(d));
        auto angles = torch::outer(torch::arange(c.seq, fopts), inv_freq);
        auto emb = torch::cat({ angles, angles }, -1).view({ c.seq, 1, 1, d });
        rope_cos_ = emb.cos().to(c.dtype);
        rope_sin_ = emb.sin().to(c.dtype);
    }
    if (!c.mla && c.position_embedding == "rope") {
        // RotaryEmbedding: inv_freq over rotary_dim channels with rotary_base, rotate-half layout.
        const int64_t d = c.rotary_dim;
        auto fopts = torch::TensorOptions().device(device).dtype(torch::kFloat32);
        auto inv_freq = 1.0
            / torch::pow(
                static_cast<double>(c.rotary_base), torch::arange(0, d, 2, fopts) / static_cast<double>(d));
        auto angles = torch::outer(torch::arange(c.seq, fopts), inv_freq);
        auto emb = torch::cat({ angles, angles }, -1).view({ c.seq, 1, 1, d });
        rotary_cos_ = emb.cos().to(c.dtype);
        rotary_sin_ = emb.sin().to(c.dtype);
    }
}

Model::~Model() = default;

Tensor Model::param(const std::string& name, std::vector<int64_t> shape, bool ones, bool uninitialized)
{
    // Norm biases start at zero, norm weights at one, matrices at N(0, 0.02) (Megatron's init_method_std).
    const bool bias = name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0;
    MemoryRegion region(MemoryCategory::Parameters);
    Tensor t = torch::empty(shape, options_);
    {
        torch::NoGradGuard no_grad;
        if (uninitialized)
            t.zero_(); // the caller fills it (no draw from the generator here)
        else if (bias)
            t.zero_();
        else if (ones)
            t.fill_(1.0);
        else
            t.normal_(0.0, 0.02);
    }
    t.requires_grad_(true);
    params_.emplace_back(name, t);
    return t;
}

Tensor Model::biasParam(bool present, const std::string& name, int64_t size)
{
    return present ? param(name, { size }) : Tensor();
}

std::pair<Tensor, Tensor> Model::batch(uint64_t seed) const
{
    auto gen = at::detail::createCPUGenerator(seed);
    auto opts = torch::TensorOptions().dtype(torch::kLong);
    // The rank's sequence chunk (s / CP). Under TP the embedding and the cross-entropy see the rank's
    // vocabulary shard: ids are taken modulo its rows (vocab-parallel lookups of tokens outside the shard
    // are masked to zero in Megatron; the shapes are the same).
    const int64_t below = std::min<int64_t>(config_.tokenizer_vocab, vocab_);
    auto tokens = torch::randint(below, { seq_, config_.micro_batch }, gen, opts);
    auto labels = torch::randint(below, { seq_, config_.micro_batch }, gen, opts);
    return { tokens.to(device_), labels.to(device_) };
}

Tensor Model::columnLinear(const Tensor& x, const Tensor& weight, const Tensor& bias) const
{
    if (!config_.sp)
        return linear(x, weight, bias);
    countFlops(
        2 * (x.numel() / std::max<int64_t>(1, x.size(-1))) * config_.tp * weight.size(0) * weight.size(1));
    // Function::apply takes defined tensors only: no bias travels as an empty one.
    return GatherLinear::apply(
        x, weight, bias.defined() ? bias : torch::empty({ 0 }, x.options()), int64_t(config_.tp));
}

Tensor Model::teLinear(
    const Tensor& x, const Tensor& weight, const Tensor& bias, bool column, bool save_original_input) const
{
    if (!config_.fp8.enabled)
        return column ? columnLinear(x, weight, bias) : linear(x, weight, bias);
    countFlops(2 * (x.numel() / std::max<int64_t>(1, x.size(-1))) * weight.size(0) * weight.size(1));
    return fp8::linear(x, weight, bias, fp8_weights_, config_.fp8, save_original_input);
}

Tensor Model::rowReduce(const Tensor& x) const
{
    return config_.sp ? ScatterSeq::apply(x, int64_t(config_.tp)) : x;
}

Tensor Model::receivedActivation() const
{
    return torch::randn({ layer_seq_, config_.micro_batch, config_.hidden }, options_).requires_grad_(true);
}

int Model::chunks() const
{
    return config_.chunk.empty() ? 1 : config_.chunk.back() + 1;
}

Tensor Model::linear(const Tensor& x, const Tensor& weight, const Tensor& bias) const
{
    countFlops(2 * (x.numel() / std::max<int64_t>(1, x.size(-1))) * weight.size(0) * weight.size(1));
    return bias.defined() ? at::linear(x, weight, bias) : at::linear(x, weight);
}

Tensor Model::biasDropoutAdd(const Tensor& out, const Tensor& bias, const Tensor& residual) const
{
    return residual + dropout(bias.defined() ? out + bias : out, config_.hidden_dropout);
}

Tensor Model::norm(const Tensor& x, const Tensor& weight, const Tensor& bias) const
{
    if (!config_.rmsnorm)
        return at::layer_norm(x, { x.size(-1) }, weight, bias, kNormEps);
#if RS_TORCH_AT_LEAST(2, 4)
    // torch.nn.RMSNorm, which Megatron's local spec builds (torch_norm.py WrappedTorchNorm): on CUDA a
    // fused kernel that keeps only its input and the reciprocal RMS for backward.
    return at::rms_norm(x, { x.size(-1) }, weight, kNormEps);
#endif
    auto xf = x.to(torch::kFloat32);
    auto y = xf * torch::rsqrt(xf.pow(2).mean(-1, true) + kNormEps);
    return y.to(x.scalar_type()) * weight;
}

Tensor Model::dropout(const Tensor& x, double p) const
{
    return p > 0 ? at::dropout(x, p, true) : x;
}

Tensor Model::activation(const Tensor& fc1_out, const Tensor& probs) const
{
    const int64_t kind = config_.squared_relu ? kSquaredRelu : config_.silu ? kSilu : kGelu;
    // The experts' fused weighted squared ReLU (use_fused_weighted_squared_relu) is one such function too.
    if (config_.bias_activation_fusion || (probs.defined() && config_.weighted_squared_relu)) {
        return probs.defined() ? WeightedFusedActivation::apply(fc1_out, probs, kind, config_.gated)
                               : FusedActivation::apply(fc1_out, kind, config_.gated);
    }
    auto act = [kind](const Tensor& t) { return actOf(t, kind); };
    Tensor out;
    if (!config_.gated) {
        out = act(fc1_out);
    } else {
        auto halves = fc1_out.chunk(2, -1);
        out = act(halves[0]) * halves[1];
    }
    return probs.defined() ? out * probs.unsqueeze(-1) : out;
}

Tensor Model::mlp(const Tensor& x, const Tensor& fc1, const Tensor& fc1_b, const Tensor& fc2) const
{
    return teLinear(activation(teLinear(x, fc1, fc1_b, true)), fc2, {}, false);
}

Tensor Model::rope(const Tensor& x, const Tensor& cos, const Tensor& sin) const
{
    // x: [s, b, n, d]; the first cos.size(-1) channels rotate, the rest pass (rotary_percent < 1).
    const int64_t d = cos.size(-1), half = d / 2;
    const auto t = d == x.size(-1) ? x : x.narrow(-1, 0, d);
    auto rotated = torch::cat({ -t.narrow(-1, half, half), t.narrow(-1, 0, half) }, -1);
    auto out = t * cos.narrow(0, 0, x.size(0)) + rotated * sin.narrow(0, 0, x.size(0));
    return d == x.size(-1) ? out : torch::cat({ out, x.narrow(-1, d, x.size(-1) - d) }, -1);
}

Tensor Model::repeatGroups(const Tensor& t, int64_t heads) const
{
    // GQA: each key/value group serves heads / groups queries.
    return t.size(2) == heads ? t : t.repeat_interleave(heads / t.size(2), 2);
}

namespace {

// The fp32 working set of one step of the softmax below (elements): the kernel keeps its rows in
// registers; we go through [b * np, sq, sk] a slice at a time so that what is alive beside the 16-bit
// probabilities stays small (16 KiB of fp32 on CPU, where the tests' scores are a few hundred KiB; 64 MiB
// on a GPU, where launches cost more).
int64_t softmaxChunkElements(const Tensor& t)
{
    return t.is_cuda() ? int64_t(1) << 24 : int64_t(1) << 12;
}

// f(head0, heads, row0, rows) over [n, sq, sk]: whole heads at a time when one fits, else rows of one head.
template <typename F> void forEachSoftmaxChunk(int64_t n, int64_t sq, int64_t sk, int64_t elements, F&& f)
{
    const int64_t rows = std::max<int64_t>(1, std::min<int64_t>(sq, elements / std::max<int64_t>(1, sk)));
    if (rows == sq) {
        const int64_t heads = std::max<int64_t>(1, elements / std::max<int64_t>(1, sq * sk));
        for (int64_t h0 = 0; h0 < n; h0 += heads)
            f(h0, std::min(heads, n - h0), int64_t(0), sq);
        return;
    }
    for (int64_t h0 = 0; h0 < n; ++h0)
        for (int64_t r0 = 0; r0 < sq; r0 += rows)
            f(h0, int64_t(1), r0, std::min(rows, sq - r0));
}

// Megatron's ScaledUpperTriangMaskedSoftmax (fusions/fused_softmax.py; the CUDA kernel of Apex / Transformer
// Engine, scaled_upper_triang_masked_softmax): 16-bit scores [b * np, sq, sk] in, scaled by `scale`, the
// causal mask applied (true above the diagonal), softmax in fp32, 16-bit probabilities out. Only the
// probabilities are saved for backward, which the kernel computes in place over the incoming gradient:
// grad_in = scale * p * (g - sum(g * p)), in fp32, cast to the input dtype.
class ScaledUpperTriangMaskedSoftmax : public torch::autograd::Function<ScaledUpperTriangMaskedSoftmax> {
public:
    static Tensor forward(
        torch::autograd::AutogradContext* ctx, const Tensor& input, const Tensor& mask, double scale)
    {
        const Tensor in = input.contiguous();
        const int64_t n = in.size(0), sq = in.size(1), sk = in.size(2);
        Tensor probs = at::empty_like(in, at::MemoryFormat::Contiguous);
        forEachSoftmaxChunk(
            n, sq, sk, softmaxChunkElements(in), [&](int64_t h0, int64_t hs, int64_t r0, int64_t rs) {
                Tensor x = in.narrow(0, h0, hs).narrow(1, r0, rs).to(torch::kFloat32);
                if (scale != 1.0)
                    x.mul_(scale);
                x.masked_fill_(mask.narrow(0, r0, rs), -10000.0);
                probs.narrow(0, h0, hs).narrow(1, r0, rs).copy_(at::softmax(x, -1));
            });
        ctx->save_for_backward({ probs });
        ctx->saved_data["scale"] = scale;
        return probs;
    }

    static torch::autograd::variable_list backward(
        torch::autograd::AutogradContext* ctx, torch::autograd::variable_list grads)
    {
        if (!grads[0].defined())
            return { Tensor(), Tensor(), Tensor() };
        const Tensor probs = ctx->get_saved_variables()[0];
        const double scale = ctx->saved_data["scale"].toDouble();
        Tensor g = grads[0].contiguous(); // the input's gradient is written over it, as the kernel does
        const int64_t n = g.size(0), sq = g.size(1), sk = g.size(2);
        forEachSoftmaxChunk(
            n, sq, sk, softmaxChunkElements(g), [&](int64_t h0, int64_t hs, int64_t r0, int64_t rs) {
                Tensor gc = g.narrow(0, h0, hs).narrow(1, r0, rs);
                Tensor p = probs.narrow(0, h0, hs).narrow(1, r0, rs).to(torch::kFloat32);
                Tensor gp = gc.to(torch::kFloat32).mul_(p);
                const Tensor sum = gp.sum(-1, true);
                gp.sub_(p.mul_(sum));
                if (scale != 1.0)
                    gp.mul_(scale);
                gc.copy_(gp);
            });
        return { g, Tensor(), Tensor() };
    }
};

} // namespace

Tensors Model::unfusedAttentionHead(const Tensor& q, const Tensor& k, const Tensor& v, int layer_number)
{
    // Megatron Core's local DotProductAttention with the unfused path of FusedScaleMaskSoftmax:
    // [s, b, np, hn] -> scores [b*np, sq, sk] by baddbmm (scaled by 1 / (sqrt(hn) x coeff)), then in fp32
    // when attention_softmax_in_fp32 (a copy; else in the activation dtype) the scores times coeff (the
    // layer number under apply_query_key_layer_scaling), the causal mask filled in place, softmax, back
    // to the activation dtype, attention dropout; the tail multiplies by V.
    const int64_t sq = q.size(0), b = q.size(1), np = q.size(2), hn = q.size(3);
    const int64_t sk = k.size(0), hv = v.size(3);
    auto query = q.reshape({ sq, b * np, hn }).transpose(0, 1);
    auto key = k.reshape({ sk, b * np, hn }).transpose(0, 1).transpose(1, 2);
    countFlops(2 * b * np * sq * sk * hn);
    const double coeff = config_.query_key_layer_scaling ? std::max(1, layer_number) : 1.0;
    // baddbmm's input with beta 0 is Megatron's global memory buffer (get_global_memory_buffer): allocated
    // at the first forward, kept for the whole run, never written (baddbmm returns a new tensor).
    if (!scores_input_buffer_.defined() || scores_input_buffer_.numel() < b * np * sq * sk
        || scores_input_buffer_.scalar_type() != q.scalar_type()) {
        MemoryRegion region(MemoryCategory::Other);
        scores_input_buffer_ = at::empty({ b * np * sq * sk }, q.options());
    }
    auto scores = at::baddbmm(scores_input_buffer_.narrow(0, 0, b * np * sq * sk).view({ b * np, sq, sk }),
        query, key, 0.0, 1.0 / (std::sqrt(double(hn)) * coeff))
                      .view({ b, np, sq, sk });
    if (config_.fused_softmax && q.scalar_type() != torch::kFloat32) {
        // FusedScaleMaskSoftmax.forward_fused_softmax: the kernel takes the 16-bit scores, scale = coeff.
        auto probs = ScaledUpperTriangMaskedSoftmax::apply(
            scores.view({ b * np, sq, sk }), causal_mask_.narrow(0, 0, sq).narrow(1, 0, sk), coeff);
        probs = dropout(probs, config_.attention_dropout);
        return { probs, v.reshape({ sk, b * np, hv }).transpose(0, 1) };
    }
    const bool low_precision = q.scalar_type() != torch::kFloat32 && config_.softmax_in_fp32;
    if (low_precision)
        scores = scores.to(torch::kFloat32);
    if (config_.query_key_layer_scaling)
        scores = scores * coeff;
    scores.masked_fill_(causal_mask_.narrow(0, 0, sq).narrow(1, 0, sk), -10000.0);
    auto probs = at::softmax(scores, -1);
    if (low_precision)
        probs = probs.to(q.scalar_type());
    probs = dropout(probs, config_.attention_dropout);
    return { probs.view({ b * np, sq, sk }), v.reshape({ sk, b * np, hv }).transpose(0, 1) };
}

Tail Model::unfusedAttentionTail(int64_t b, int64_t np) const
{
    Tail t;
    t.forward = [b, np](const Tensors& mids) -> Tensors {
        const auto& probs = mids[0];
        const auto& value = mids[1];
        const int64_t sq = probs.size(1), sk = probs.size(2), hv = value.size(2);
        countFlops(2 * b * np * sq * sk * hv);
        auto context = at::bmm(probs, value);
        return { context.view({ b, np, sq, hv }).permute({ 2, 0, 1, 3 }).reshape({ sq, b, np * hv }) };
    };
    t.backward = [b, np](const Tensors& mids, const Tensors& grads) -> Tensors {
        if (!grads[0].defined())
            return { Tensor(), Tensor() };
        const auto& probs = mids[0];
        const auto& value = mids[1];
        const int64_t sq = probs.size(1), hv = value.size(2);
        // bmm's own backward: d(probs) = g V^T, d(V) = probs^T g.
        auto g = grads[0].view({ sq, b, np, hv }).permute({ 1, 2, 0, 3 }).reshape({ b * np, sq, hv });
        return { g.bmm(value.transpose(1, 2)), probs.transpose(1, 2).bmm(g) };
    };
    return t;
}

Tensor Model::coreAttention(const Layer& L, const Tensor& q, const Tensor& k, const Tensor& v)
{
    const int64_t heads = q.size(2);
    const int layer = L.global;
    if (config_.attention_backend == "unfused") {
        Region head = [this, heads, layer](const Tensors& in) -> Tensors {
            MemoryRegion region(MemoryCategory::Activations, layer, "core_attn");
            return unfusedAttentionHead(
                in[0], repeatGroups(in[1], heads), repeatGroups(in[2], heads), layer + 1);
        };
        const Tail tail = unfusedAttentionTail(q.size(1), heads);
        if (plan_.has("core_attn"))
            return checkpoint(head, tail, { q, k, v })[0];
        const auto mids = head({ q, k, v });
        MemoryRegion region(MemoryCategory::Activations, layer, "core_attn");
        return tail.forward(mids)[0];
    }
    Region region = [this, heads, layer](const Tensors& in) -> Tensors {
        MemoryRegion guard(MemoryCategory::Activations, layer, "core_attn");
        // Transformer Engine's fused attention takes GQA's key and value groups as they are and keeps
        // contiguous q, k, v (a view of linear_qkv's output is copied, so that output is not kept alive);
        // on a GPU with LibTorch >= 2.5 so does this (SDPA's enable_gqa). LibTorch 1.13 (the CPU tests)
        // repeats the groups to every head first.
        const bool native_gqa = compat::kSdpaGqa && in[0].is_cuda();
        const Tensor query = native_gqa ? in[0].contiguous() : in[0];
        const Tensor key = native_gqa ? in[1].contiguous() : repeatGroups(in[1], heads);
        const Tensor value = native_gqa ? in[2].contiguous() : repeatGroups(in[2], heads);
        const int64_t sq = query.size(0), b = query.size(1), np = query.size(2);
        const int64_t sk = key.size(0), hn = query.size(3), hv = value.size(3);
        countFlops(b * np * sq * sk * (hn + hv)); // causal: the kernels skip the masked half
        auto out = compat::scaledDotProductAttention(query.permute({ 1, 2, 0, 3 }),
            key.permute({ 1, 2, 0, 3 }), value.permute({ 1, 2, 0, 3 }), config_.attention_dropout, true,
            native_gqa && key.size(2) != np);
        return { out.permute({ 2, 0, 1, 3 }).reshape({ sq, b, np * hv }) };
    };
    if (plan_.has("core_attn"))
        return checkpoint(region, { q, k, v })[0];
    return region({ q, k, v })[0];
}

Tensor Model::attention(const Layer& L, const Tensor& x)
{
    const auto& c = config_;
    // Under SP x holds s / TP positions; the column-parallel projections gather the rank's whole chunk.
    const int64_t s = x.size(0) * (c.sp ? c.tp : 1), b = x.size(1);
    if (!c.mla) {
        const int64_t kv = c.kv_channels, nq = np_ * kv, nkv = ng_ * kv;
        auto qkv = teLinear(x, L.qkv, L.qkv_b, true);
        auto q = qkv.narrow(-1, 0, nq).view({ s, b, np_, kv });
        auto k = qkv.narrow(-1, nq, nkv).view({ s, b, ng_, kv });
        auto v = qkv.narrow(-1, nq + nkv, nkv).view({ s, b, ng_, kv });
        if (c.position_embedding == "rope") {
            q = rope(q, rotary_cos_, rotary_sin_);
            k = rope(k, rotary_cos_, rotary_sin_);
        }
        if (c.cp > 1) {
            // Context parallelism: the rank's queries attend to the keys and values of the whole
            // sequence, gathered over the CP ranks (backward: their gradients reduce-scattered).
            k = GatherSeq::apply(k, int64_t(c.cp));
            v = GatherSeq::apply(v, int64_t(c.cp));
        }
        auto core = coreAttention(L, q, k, v);
        // Under FP8 linear_proj saves the context itself (core attention keeps it) unless scaling is
        // delayed (attention.py set_save_original_input).
        return teLinear(core, L.proj, {}, false, !c.fp8.delayed);
    }
    // MLA: down-projections and their norms stay outside mla_up_proj, as in MLASelfAttention.
    const int64_t dn = c.qk_head_dim, dr = c.qk_pos_emb_head_dim, dv = c.v_head_dim;
    Tensor q_in = x;
    if (c.q_lora_rank > 0)
        q_in = norm(linear(x, L.q_down), L.q_ln_w, L.q_ln_b);
    auto kv_all = linear(x, L.kv_down);
    auto kv_c = norm(kv_all.narrow(-1, 0, c.kv_lora_rank), L.kv_ln_w, L.kv_ln_b);
    auto k_pe = kv_all.narrow(-1, c.kv_lora_rank, dr);
    if (c.sp) // multi_latent_attention.py: k_pos_emb gathered over the sequence (duplicated down-proj)
        k_pe = GatherSeq::apply(k_pe, int64_t(c.tp));
    const int64_t np = np_;
    Region up = [this, &L, s, b, np, dn, dr, dv](const Tensors& in) -> Tensors {
        MemoryRegion region(MemoryCategory::Activations, L.global, "mla_up_proj");
        const auto& c = config_;
        auto q = columnLinear(in[0], c.q_lora_rank > 0 ? L.q_up : L.q).view({ s, b, np, dn + dr });
        auto kv = columnLinear(in[1], L.kv_up).view({ s, b, np, dn + dv });
        auto q_pe = rope(q.narrow(-1, dn, dr), rope_cos_, rope_sin_);
        auto k_pe = rope(in[2].unsqueeze(2), rope_cos_, rope_sin_).expand({ s, b, np, dr });
        auto query = torch::cat({ q.narrow(-1, 0, dn), q_pe }, -1);
        auto key = torch::cat({ kv.narrow(-1, 0, dn), k_pe }, -1);
        auto value = kv.narrow(-1, dn, dv).contiguous();
        return { query, key, value };
    };
    OutputDiscardCheckpoint up_ckpt;
    const bool discard = plan_.has("mla_up_proj");
    Tensors qkv = discard ? up_ckpt.run(up, { q_in, kv_c, k_pe }) : up({ q_in, kv_c, k_pe });
    Tensor key = qkv[1], value = qkv[2];
    if (c.cp > 1) {
        key = GatherSeq::apply(key, int64_t(c.cp));
        value = GatherSeq::apply(value, int64_t(c.cp));
    }
    auto core = coreAttention(L, qkv[0], key, value);
    if (discard)
        up_ckpt.discardOutputAndRegisterRecompute(core);
    return linear(core, L.proj);
}

Tensor Model::expertLinear(const Layer& L, bool fc1, const Tensor& sorted, const Tensor& counts_on_device,
    const int64_t* counts_on_host, fp8::SavedCodes* saved) const
{
    if (!config_.grouped_gemm) {
        // SequentialMLP: one linear per local expert on its slice of the sorted tokens.
        Tensors parts;
        int64_t offset = 0;
        for (int64_t e = 0; e < local_experts_; ++e) {
            const int64_t n = counts_on_host[e];
            if (n > 0) {
                const auto& w
                    = fc1 ? L.expert_fc1[static_cast<size_t>(e)] : L.expert_fc2[static_cast<size_t>(e)];
                const auto& bias
                    = fc1 ? L.expert_fc1_b[static_cast<size_t>(e)] : L.expert_fc2_b[static_cast<size_t>(e)];
                parts.push_back(teLinear(sorted.narrow(0, offset, n), w, bias, false));
            }
            offset += n;
        }
        return torch::cat(parts, 0);
    }
    const Tensor& w = fc1 ? L.grouped_fc1 : L.grouped_fc2; // [E, out, in]
    countFlops(2 * sorted.size(0) * w.size(1) * w.size(2));
    if (config_.fp8.enabled) // TE's GroupedLinear takes the split sizes on the host (m_splits)
        return fp8::groupedLinear(sorted, w, counts_on_device, fp8_weights_, config_.fp8, saved);
    if (compat::groupedMmAvailable(sorted)) {
        // One grouped GEMM; the group ends are a device tensor: nothing goes to the host.
        const Tensor offs = counts_on_device.cumsum(0).to(torch::kInt);
        return compat::groupedMm(sorted, w.transpose(1, 2), offs);
    }
    // Fallback: a batched matmul over the tokens padded to the fullest expert. Its capacity is read on the
    // host (one synchronisation on a GPU; none on CPU).
    int64_t capacity = 0;
    for (int64_t e = 0; e < local_experts_; ++e)
        capacity = std::max(capacity, counts_on_host[e]);
    capacity = std::max<int64_t>(capacity, 1);
    const auto long_opts = counts_on_device.options().dtype(torch::kLong);
    const Tensor starts = counts_on_device.cumsum(0) - counts_on_device;
    const Tensor expert_of = at::repeat_interleave(torch::arange(local_experts_, long_opts), counts_on_device,
        /*dim=*/0, /*output_size=*/sorted.size(0));
    const Tensor rows
        = expert_of * capacity + torch::arange(sorted.size(0), long_opts) - starts.index_select(0, expert_of);
    return PaddedGroupedLinear::apply(sorted, w, rows, capacity);
}

Tensor Model::moeLayer(const Layer& L, const Tensor& x)
{
    // Router (top-k over logits, softmax over the chosen k) on the rank's tokens, the dispatcher's
    // permutation to this rank's local experts, the experts FC1 -> activation x probs (the moe_act region)
    // -> FC2, the combine, the shared experts. One rank of an EP layout: every routed slot goes to the
    // local expert (its expert id modulo the local experts), which under uniform routing is as many tokens
    // as the all-to-all delivers from every EP rank to these experts; under SP with expert-TP the tokens of
    // the TP ranks are gathered first (the alltoall dispatcher's gather over the TP group) and the
    // experts' output reduce-scattered back.
    const auto& c = config_;
    const int64_t h = x.size(-1);
    auto tokens = x.reshape({ -1, h });
    const int64_t T = tokens.size(0);
    auto logits = linear(tokens, L.router);
    auto top = logits.topk(c.topk, -1);
    Tensor aux_scores; // the load-balancing loss's softmax over every expert, fp32
    if (c.moe_aux_loss_coeff > 0 && torch::GradMode::is_enabled() && !replaying())
        aux_scores = at::softmax(logits.to(torch::kFloat32), -1);
    auto probs = at::softmax(std::get<0>(top).to(torch::kFloat32), -1).to(x.scalar_type());
    auto flat_expert = std::get<1>(top).reshape({ -1 });
    if (aux_scores.defined()) {
        // Switch load balancing: E x coeff / (T^2 k) x sum_e (sum of the scores of e) x (tokens routed to e).
        const auto routed = countsOnDevice(flat_expert, c.experts);
        const double t = static_cast<double>(T);
        aux_losses_.push_back((aux_scores.sum(0) * routed.to(torch::kFloat32)).sum()
            * (c.experts * c.moe_aux_loss_coeff / (t * t * c.topk)));
    }
    auto local_expert = local_experts_ == c.experts ? flat_expert : flat_expert.remainder(local_experts_);
    auto flat_probs = probs.reshape({ -1 });
    const int64_t gather = (c.sp && c.etp > 1) ? c.etp : 1;
    // Latent MoE: the router has read the hidden-wide tokens; fc1_latent_proj takes them to L before the
    // dispatch (MoELayer.preprocess), so everything routed is L wide.
    Tensor source = L.fc1_latent.defined() ? teLinear(tokens, L.fc1_latent, L.fc1_latent_b, false)
                                           : tokens; // the tokens the experts' slots index
    Tensor slot_token = torch::arange(T * c.topk, flat_expert.options()).div(c.topk, "floor");
    if (gather > 1) {
        source = GatherSeq::apply(source, gather);
        flat_probs = GatherSeq::apply(flat_probs, gather);
        local_expert = local_expert.repeat({ gather });
        // Copy g of the gathered tokens starts at g x T.
        slot_token
            = (slot_token.view({ 1, -1 }) + torch::arange(gather, slot_token.options()).view({ -1, 1 }) * T)
                  .reshape({ -1 });
    }
    auto order = std::get<1>(at::sort(local_expert, true, 0, false));
    auto token_of = slot_token.index_select(0, order);
    auto permuted = source.index_select(0, token_of);
    auto permuted_probs = flat_probs.index_select(0, order);
    auto counts_on_device = countsOnDevice(local_expert, local_experts_);
    // The per-expert loop (and the grouped fallback's capacity) needs the counts on the host; the grouped
    // GEMM does not.
    Tensor counts;
    const int64_t* count = nullptr;
    if (!c.grouped_gemm || !compat::groupedMmAvailable(permuted) || c.fp8.enabled) {
        counts = counts_on_device.to(torch::kCPU);
        count = counts.data_ptr<int64_t>();
    }

    auto fc1_out = expertLinear(L, true, permuted, counts_on_device, count);
    const int layer = L.global;
    Region act_region = [this, layer](const Tensors& in) -> Tensors {
        MemoryRegion region(MemoryCategory::Activations, layer, "moe_act");
        return { activation(in[0], in[1]) };
    };
    OutputDiscardCheckpoint act_ckpt;
    const bool discard = plan_.has("moe_act");
    auto act = (discard ? act_ckpt.run(act_region, { fc1_out, permuted_probs })
                        : act_region({ fc1_out, permuted_probs }))[0];
    // Under FP8 Megatron's activation hands FC2 its quantized output, so moe_act discards FC2's saved codes;
    // here FC2 quantizes, and the checkpoint frees and rebuilds its codes with the output (grouped experts).
    fp8::SavedCodes fc2_codes;
    auto expert_out = expertLinear(
        L, false, act, counts_on_device, count, discard && c.fp8.enabled ? &fc2_codes : nullptr);
    if (discard) {
        if (fc2_codes.codes.defined())
            act_ckpt.alsoDiscard(fc2_codes.codes, [fc2_codes](const Tensors& outputs) mutable {
                fc2_codes.rebuild(outputs[0], fc2_codes.codes);
            });
        act_ckpt.discardOutputAndRegisterRecompute(expert_out);
    }
    // The combine as Megatron's unpermute (moe_utils.py): scatter_add_ with the token index expanded over
    // the hidden size, whose backward gathers the gradient and keeps only the index (a view of [R]);
    // index_add would keep the experts' output [R, h] for its backward.
    auto out = torch::zeros_like(source).scatter_add(
        0, token_of.unsqueeze(1).expand({ -1, source.size(1) }), expert_out);
    if (gather > 1)
        out = ScatterSeq::apply(out, gather);
    // Latent MoE: fc2_latent_proj takes the combined tokens back to h (MoELayer.postprocess), before the
    // shared experts' output, which was computed on the hidden-wide tokens, is added.
    if (L.fc2_latent.defined())
        out = teLinear(out, L.fc2_latent, L.fc2_latent_b, false);
    if (c.shared_ffn > 0) {
        MemoryRegion region(MemoryCategory::Activations, layer, "shared_experts");
        if (plan_.has("shared_experts")) {
            Region head = [this, &L](const Tensors& in) -> Tensors {
                MemoryRegion region(MemoryCategory::Activations, L.global, "shared_experts");
                return { activation(teLinear(in[0], L.shared_fc1, {}, true)) };
            };
            out = out + rowReduce(checkpoint(head, linearTail(L.shared_fc2), { tokens })[0]);
        } else {
            out = out
                + rowReduce(
                    teLinear(activation(teLinear(tokens, L.shared_fc1, {}, true)), L.shared_fc2, {}, false));
        }
    }
    return out.view(x.sizes());
}

Tensor Model::moe(const Layer& L, const Tensor& x)
{
    Region whole = [this, &L](const Tensors& in) -> Tensors {
        MemoryRegion region(MemoryCategory::Activations, L.global, "moe");
        return { moeLayer(L, in[0]) };
    };
    return (plan_.has("moe") ? checkpoint(whole, { x }) : whole({ x }))[0];
}

Tensor Model::mambaMixer(const Layer& L, const Tensor& x)
{
    // MambaLayer + MambaMixer._ssm_training (mem-eff path): the norm fused into in_proj, zxbcdt laid out
    // [b, l, d] (a copy unless b is 1), the fused conv + scan + gate, back to [l, b, d], the gated RMSNorm
    // (z=None, groups per TP rank), out_proj. A = -exp(A_log) and dt_bias in fp32, as the mixer passes them.
    const auto& c = config_;
    const int64_t tp = std::max(1, c.tp);
    MemoryRegion region(MemoryCategory::Activations, L.global, "mamba");
    const Tensor zxbcdt = columnLinear(norm(x, L.ln1_w, L.ln1_b), L.m_in).transpose(0, 1).contiguous();
    const ssm::MambaDims dims { c.mamba_heads / tp, c.mamba_head_dim, c.mamba_groups / tp, c.mamba_state,
        c.mamba_chunk };
    const Tensor A = -torch::exp(L.m_A_log.to(torch::kFloat32));
    Tensor y = ssm::mambaSplitConv1dScan(
        zxbcdt, L.m_conv_w, L.m_conv_b, L.m_dt_bias.to(torch::kFloat32), A, L.m_D, dims);
    y = ssm::groupRmsNorm(y.transpose(0, 1).contiguous(), L.m_norm_w, dims.groups, kNormEps);
    return linear(y, L.m_out);
}

Tensor Model::gdnMixer(const Layer& L, const Tensor& x)
{
    // GatedDeltaNet.forward (gdn.py, CP 1): the norm fused into in_proj, [b, l, d], split into q k v, the
    // gate z, beta and alpha; FLA's conv + SiLU on q k v, the L2 norm of q and k, q and k repeated to the
    // value heads, the decay g = -exp(A_log) softplus(alpha + dt_bias) in fp32 and beta = sigmoid(b), the
    // chunked gated delta rule, then _gated_norm_and_a2a (the gdn_norm_out region: out_norm per value head
    // and the SiLU gate), [l, b, v], out_proj.
    const auto& c = config_;
    const int64_t tp = std::max(1, c.tp);
    const int64_t hk = c.gdn_key_heads / tp, hv = c.gdn_value_heads / tp;
    const int64_t dk = c.gdn_key_dim, dv = c.gdn_value_dim, qk = hk * dk, v = hv * dv;
    const int layer = L.global;
    Region whole = [this, &L, hk, hv, dk, dv, qk, v, layer](const Tensors& in) -> Tensors {
        MemoryRegion region(MemoryCategory::Activations, layer, "gdn");
        const Tensor proj = columnLinear(norm(in[0], L.ln1_w, L.ln1_b), L.g_in).transpose(0, 1); // [b, l, .]
        const int64_t b = proj.size(0), l = proj.size(1);
        const Tensor qkv = ssm::causalConv1dSilu(proj.narrow(-1, 0, 2 * qk + v), L.g_conv_w, Tensor());
        const Tensor gate = proj.narrow(-1, 2 * qk + v, v).reshape({ b, l, hv, dv }).contiguous();
        const Tensor beta = at::sigmoid(proj.narrow(-1, 2 * qk + 2 * v, hv));
        const Tensor alpha = proj.narrow(-1, 2 * qk + 2 * v + hv, hv);
        const Tensor qk_norm
            = ssm::l2norm(qkv.narrow(-1, 0, 2 * qk).contiguous().reshape({ b, l, 2 * hk, dk }));
        Tensor query = qk_norm.narrow(2, 0, hk), key = qk_norm.narrow(2, hk, hk);
        if (hv > hk) {
            query = query.repeat_interleave(hv / hk, 2);
            key = key.repeat_interleave(hv / hk, 2);
        } else {
            query = query.contiguous();
            key = key.contiguous();
        }
        const Tensor value = qkv.narrow(-1, 2 * qk, v).contiguous().reshape({ b, l, hv, dv });
        const Tensor g = -L.g_A_log.to(torch::kFloat32).exp()
            * at::softplus(alpha.to(torch::kFloat32) + L.g_dt_bias.to(torch::kFloat32));
        const Tensor core
            = ssm::chunkGatedDeltaRule(query, key, value, g, beta, 1.0 / std::sqrt(double(dk)), kGdnChunk);
        Region gated = [this, &L, layer, b, l, v](const Tensors& t) -> Tensors {
            MemoryRegion region(MemoryCategory::Activations, layer, "gdn_norm_out");
            const Tensor y = ssm::siluGate(norm(t[0], L.g_norm_w, Tensor()), t[1]);
            return { y.reshape({ b, l, v }).transpose(0, 1).contiguous() };
        };
        OutputDiscardCheckpoint norm_ckpt;
        const bool discard = plan_.has("gdn_norm_out");
        const Tensor norm_out = (discard ? norm_ckpt.run(gated, { core, gate }) : gated({ core, gate }))[0];
        Tensor out = linear(norm_out, L.g_out);
        if (discard)
            norm_ckpt.discardOutputAndRegisterRecompute(out);
        return { out };
    };
    // gdn (dev): the whole module, from its input, in one normal checkpoint.
    return (plan_.has("gdn") ? checkpoint(whole, { x }) : whole({ x }))[0];
}

Tensor Model::mixerPart(const Layer& L, Tensor x)
{
    const int layer = L.global;
    using Cat = MemoryCategory;
    if (L.kind.mixer == LayerMixer::Mamba || L.kind.mixer == LayerMixer::GatedDeltaNet) {
        Tensor out = rowReduce(L.kind.mixer == LayerMixer::Mamba ? mambaMixer(L, x) : gdnMixer(L, x));
        MemoryRegion region(Cat::Activations, layer, "residual");
        return biasDropoutAdd(out, Tensor(), x);
    }
    if (L.kind.mixer != LayerMixer::Attention)
        return x;
    // layernorm is output-discard: the input norm's output is rebuilt when the attention output's gradient
    // arrives (TL:683-688). Under the TE spec a norm fused into the next linear is an IdentityOp that the
    // label skips (RT1, TL:475-479): the input norm unless MLA.
    const bool discard_ln1 = plan_.has("layernorm") && (!config_.te_spec || config_.mla);
    auto norm_region = [this, layer](const Tensor& w, const Tensor& bias, const char* name) -> Region {
        return [this, w, bias, layer, name](const Tensors& in) -> Tensors {
            MemoryRegion region(Cat::Activations, layer, name);
            return { norm(in[0], w, bias) };
        };
    };
    OutputDiscardCheckpoint ln1_ckpt;
    const Region ln1_region = norm_region(L.ln1_w, L.ln1_b, "input_layernorm");
    auto ln1 = discard_ln1 ? ln1_ckpt.run(ln1_region, { x })[0] : ln1_region({ x })[0];
    Tensor attn;
    {
        MemoryRegion region(Cat::Activations, layer, "self_attention");
        attn = rowReduce(attention(L, ln1));
    }
    if (discard_ln1)
        ln1_ckpt.discardOutputAndRegisterRecompute(attn);
    MemoryRegion region(Cat::Activations, layer, "residual");
    return biasDropoutAdd(attn, L.proj_b, x);
}

Tensor Model::ffnPart(const Layer& L, Tensor x)
{
    if (L.kind.ffn == LayerFfn::None)
        return x;
    // The pre-MLP norm's output is rebuilt when the MLP output's gradient arrives (TL:1088-1093); under the
    // TE spec it is fused into linear_fc1 unless the MLP is MoE (RT1, TL:523-524).
    const bool discard_ln2 = plan_.has("layernorm") && (!config_.te_spec || L.moe);
    const int layer = L.global;
    using Cat = MemoryCategory;
    const Region ln2_region = [this, &L, layer](const Tensors& in) -> Tensors {
        MemoryRegion region(Cat::Activations, layer, "pre_mlp_layernorm");
        return { norm(in[0], L.ln2_w, L.ln2_b) };
    };
    // Under the TE spec a dense layer's pre-MLP norm is linear_fc1's (TELayerNormColumnParallelLinear;
    // pre_mlp_layernorm an IdentityOp): the mlp checkpoint takes the residual and replays the norm too.
    const bool ln2_in_mlp = config_.te_spec && !L.moe && plan_.has("mlp");
    OutputDiscardCheckpoint ln2_ckpt;
    Tensor ln2;
    if (!ln2_in_mlp)
        ln2 = discard_ln2 ? ln2_ckpt.run(ln2_region, { x })[0] : ln2_region({ x })[0];
    Tensor out;
    if (L.moe) {
        MemoryRegion region(Cat::Activations, layer, "moe");
        out = moe(L, ln2);
    } else {
        MemoryRegion region(Cat::Activations, layer, "mlp");
        if (plan_.has("mlp")) {
            Region head = [this, &L, ln2_in_mlp, ln2_region](const Tensors& in) -> Tensors {
                const Tensor y = ln2_in_mlp ? ln2_region(in)[0] : in[0];
                MemoryRegion region(Cat::Activations, L.global, "mlp");
                return { activation(teLinear(y, L.fc1, L.fc1_b, true)) };
            };
            out = rowReduce(checkpoint(head, linearTail(L.fc2), { ln2_in_mlp ? x : ln2 })[0]);
        } else {
            out = rowReduce(mlp(ln2, L.fc1, L.fc1_b, L.fc2));
        }
    }
    if (discard_ln2)
        ln2_ckpt.discardOutputAndRegisterRecompute(out);
    MemoryRegion region(Cat::Activations, layer, "residual");
    return biasDropoutAdd(out, L.fc2_b, x);
}

Tensor Model::layerForward(const Layer& L, Tensor x)
{
    return ffnPart(L, mixerPart(L, std::move(x)));
}

Tensors Model::denseLayerHead(const Layer& L, Tensor x)
{
    // layerForward's ops in the same order, for a layer with no selective labels, no hidden dropout and no
    // bias on its last linear.
    x = biasDropoutAdd(attention(L, norm(x, L.ln1_w, L.ln1_b)), L.proj_b, x);
    return { x, activation(teLinear(norm(x, L.ln2_w, L.ln2_b), L.fc1, L.fc1_b, true)) };
}

Tensor Model::embed(const Tensor& tokens)
{
    // LanguageModelEmbedding: word (+ learned absolute position) embeddings, then embedding dropout; the
    // vocabulary-parallel lookup's all-reduce is a reduce-scatter to s / TP under SP.
    MemoryRegion region(MemoryCategory::Activations, -1, "embedding");
    Tensor x = at::embedding(embedding_, tokens);
    if (position_embedding_.defined()) {
        auto positions = torch::arange(tokens.size(0), tokens.options());
        x = x + at::embedding(position_embedding_, positions).unsqueeze(1);
    }
    x = rowReduce(x);
    return dropout(x, config_.hidden_dropout);
}

Tensor Model::runLayers(int chunk, Tensor x)
{
    for (const auto& unit : plan_.units) {
        if (chunk >= 0 && config_.chunk[static_cast<size_t>(unit.first)] != chunk)
            continue;
        const int last = unit.first + unit.count - 1;
        if (unit.checkpointed && layers_[last].kind.mixer == LayerMixer::Attention
            && layers_[last].kind.ffn == LayerFfn::Dense && config_.hidden_dropout == 0
            && !layers_[last].fc2_b.defined() && !config_.sp) {
            // The unit ends with x + fc2(act): the replay stops at the last layer's activation.
            Region head = [this, unit, last](const Tensors& in) -> Tensors {
                Tensor h = in[0];
                for (int i = unit.first; i < last; ++i)
                    h = layerForward(layers_[i], h);
                MemoryRegion region(MemoryCategory::Activations, layers_[last].global, "layer");
                return denseLayerHead(layers_[last], h);
            };
            MemoryRegion region(MemoryCategory::Activations, layers_[last].global, "residual");
            x = checkpoint(head, residualLinearTail(layers_[last].fc2), { x })[0];
            continue;
        }
        Region run = [this, unit](const Tensors& in) -> Tensors {
            Tensor h = in[0];
            for (int i = unit.first; i < unit.first + unit.count; ++i)
                h = layerForward(layers_[i], h);
            return { h };
        };
        x = (unit.checkpointed ? checkpoint(run, { x }) : run({ x }))[0];
    }
    return x;
}

Tensor Model::head(Tensor x, const Tensor& labels)
{
    // Final norm, the column-parallel output layer (the rank's vocabulary shard), and the vocab-parallel
    // cross-entropy as a local one over the shard (fp32 [s*b, V/TP], as Megatron's keeps).
    MemoryRegion region(MemoryCategory::Activations, -1, "output");
    x = norm(x, final_norm_w_, final_norm_b_);
    auto logits = columnLinear(x, output_);
    return vocabCrossEntropy(logits.view({ -1, vocab_ }), labels.reshape({ -1 })).mean();
}

Model::ChunkOutput Model::chunkForward(
    int chunk, const Tensor& tokens, const Tensor& labels, const Tensor& received)
{
    aux_losses_.clear();
    ChunkOutput out;
    Tensor x = chunkStartsFromTokens(chunk) ? embed(tokens) : received;
    x = runLayers(chunk, x);
    if (chunk == chunks() - 1 && config_.has_head) {
        out.out = head(x, labels);
        out.is_loss = true;
        for (const auto& aux : aux_losses_)
            out.out = out.out + aux;
    } else {
        out.out = x;
        for (const auto& aux : aux_losses_)
            out.aux = out.aux.defined() ? out.aux + aux : aux;
    }
    aux_losses_.clear();
    return out;
}

Tensor Model::loss(const Tensor& tokens, const Tensor& labels)
{
    aux_losses_.clear();
    Tensor x = config_.has_embedding ? embed(tokens) : receivedActivation();
    x = runLayers(-1, x);
    Tensor loss;
    if (config_.has_head) {
        loss = head(x, labels);
    } else {
        // No loss head on this stage: the gradient its output would receive, as a fixed tensor.
        MemoryRegion region(MemoryCategory::Activations, -1, "output");
        loss = (x * sent_grad_).sum().to(torch::kFloat32);
    }
    for (const auto& aux : aux_losses_)
        loss = loss + aux;
    aux_losses_.clear();
    return loss;
}

} // namespace rs::engine
