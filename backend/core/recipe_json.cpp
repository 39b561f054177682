// SPDX-License-Identifier: Apache-2.0
// One table of the recipe's fields drives the JSON reader and writer, equality, and the per-key access
// that the override and flag readers share, so a field added to recipe.h needs one line here.
#include "core/recipe_json.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <functional>
#include <set>
#include <variant>

#include "core/overrides.h"
#include "core/pipeline_layout.h"

namespace rs {

namespace {

// The offset of the first byte that is not part of well-formed UTF-8 (RFC 3629: no overlongs, no
// surrogates, nothing above U+10FFFF); npos when the text is valid.
std::size_t firstInvalidUtf8(const std::string& s)
{
    std::size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        std::size_t n = 0;
        unsigned lo = 0x80, hi = 0xBF;
        if (c < 0x80) {
            ++i;
            continue;
        } else if (c >= 0xC2 && c <= 0xDF) {
            n = 1;
        } else if (c >= 0xE0 && c <= 0xEF) {
            n = 2;
            lo = c == 0xE0 ? 0xA0 : 0x80;
            hi = c == 0xED ? 0x9F : 0xBF;
        } else if (c >= 0xF0 && c <= 0xF4) {
            n = 3;
            lo = c == 0xF0 ? 0x90 : 0x80;
            hi = c == 0xF4 ? 0x8F : 0xBF;
        } else {
            return i;
        }
        for (std::size_t k = 1; k <= n; ++k) {
            if (i + k >= s.size())
                return i;
            const auto d = static_cast<unsigned char>(s[i + k]);
            if (d < (k == 1 ? lo : 0x80) || d > (k == 1 ? hi : 0xBF))
                return i;
        }
        i += n + 1;
    }
    return std::string::npos;
}

// The text with every byte that is not well-formed UTF-8 written as \xNN, so a message about bad input is
// itself printable (and JSON-encodable).
std::string printableUtf8(const std::string& s)
{
    if (firstInvalidUtf8(s) == std::string::npos)
        return s;
    std::string out;
    std::string rest = s;
    while (!rest.empty()) {
        const std::size_t bad = firstInvalidUtf8(rest);
        if (bad == std::string::npos) {
            out += rest;
            break;
        }
        out += rest.substr(0, bad);
        static const char* const hex = "0123456789abcdef";
        const auto c = static_cast<unsigned char>(rest[bad]);
        out += "\\x";
        out += hex[c >> 4];
        out += hex[c & 15];
        rest.erase(0, bad + 1);
    }
    return out;
}

} // namespace

bool isValidUtf8(const std::string& text)
{
    return firstInvalidUtf8(text) == std::string::npos;
}

std::string boundedDump(const nlohmann::json& v, std::size_t max_chars)
{
    // Recursion depth is bounded here, not by the value: a value nested a million levels deep prints as
    // "[[[[…]]]]" without walking it.
    std::string out;
    const std::function<void(const nlohmann::json&, int)> write = [&](const nlohmann::json& x, int depth) {
        if (out.size() > max_chars)
            return;
        if (x.is_array() || x.is_object()) {
            const bool array = x.is_array();
            out += array ? '[' : '{';
            if (depth >= 4 && !x.empty()) {
                out += "\u2026";
            } else {
                bool first = true;
                for (auto it = x.begin(); it != x.end(); ++it) {
                    if (out.size() > max_chars)
                        break;
                    if (!first)
                        out += ',';
                    first = false;
                    if (!array)
                        out += nlohmann::json(printableUtf8(it.key())).dump() + ':';
                    write(*it, depth + 1);
                }
            }
            out += array ? ']' : '}';
            return;
        }
        if (x.is_string())
            out += nlohmann::json(printableUtf8(x.get<std::string>())).dump();
        else
            out += x.dump();
    };
    write(v, 0);
    if (out.size() > max_chars)
        out = out.substr(0, max_chars) + "\u2026";
    return out;
}

RecipeError::RecipeError(std::string field_, std::string where_, const std::string& message_)
    : std::runtime_error(printableUtf8(where_) + ": "
        + (field_.empty() ? std::string() : printableUtf8(field_) + ": ") + printableUtf8(message_))
    , field(printableUtf8(field_))
    , where(printableUtf8(where_))
    , message(printableUtf8(message_))
{
}

namespace {

using Member = std::variant<int Recipe::*, std::optional<int> Recipe::*, double Recipe::*,
    std::optional<double> Recipe::*, bool Recipe::*, std::string Recipe::*,
    std::optional<std::string> Recipe::*, std::vector<std::string> Recipe::*,
    std::optional<std::vector<std::string>> Recipe::*, std::vector<int> Recipe::*, Profile Recipe::*,
    InputFormat Recipe::*>;

const char* const kPipelineLayoutKey = "pipeline_model_parallel_layout";

struct FieldDef {
    const char* key;
    Member member;
    bool layerFreq = false; // std::vector<int>: moe_layer_freq, linear_attention_freq (which may be None)
};

const std::vector<std::string> kNormalization = { "LayerNorm", "RMSNorm" };
// Megatron-LM's activations the estimate and the worker build (argument_utils.py: --swiglu, --squared-relu;
// plain GeLU by default); Bridge names the function.
const std::vector<std::string> kActivation = { "gelu", "silu", "squared_relu" };
const std::vector<std::string> kCrossEntropyImpl = { "native", "te" };
const std::vector<std::string> kAttentionBackend = { "fused", "flash", "unfused" };
const std::vector<std::string> kAdamImplementation = { "fused", "torch" };
const std::vector<std::string> kTransformerImpl = { "transformer_engine", "local" };
const std::vector<std::string> kCudaGraphImpl = { "none", "local", "transformer_engine", "full_iteration" };
const std::vector<std::string> kFp8 = { "e4m3", "hybrid" };
// Bridge's PEFT schemes the estimate models (peft/lora.py); DoRA and canonical LoRA are not.
const std::vector<std::string> kPeft = { "lora" };
// Megatron-LM's --fp8-recipe choices (custom: a user-supplied quantization factory).
const std::vector<std::string> kFp8Recipe = { "delayed", "tensorwise", "blockwise", "mxfp8", "custom" };
const std::vector<std::string> kFrontEnd = { "json", "bridge_overrides", "megatron_flags" };
const std::vector<std::string> kDispatcher = { "allgather", "alltoall", "flex" };
const std::vector<std::string> kDsaKernelBackend = { "none", "tilelang", "cudnn" };
// Megatron-LM's --position-embedding-type and --moe-router-load-balancing-type choices (main).
const std::vector<std::string> kPositionEmbedding
    = { "learned_absolute", "rope", "yarn", "mrope", "relative", "none" };
const std::vector<std::string> kLoadBalancing
    = { "aux_loss", "seq_aux_loss", "global_aux_loss", "sinkhorn", "quantile_balancing", "none" };
const std::vector<std::string> kMainGradsDtype = { "fp32", "bf16" };
const std::vector<std::string> kMainParamsDtype = { "fp32", "fp16" };
const std::vector<std::string> kMomentDtype = { "fp32", "fp16", "bf16", "fp8" };

std::vector<std::string> profileNames()
{
    std::vector<std::string> names;
    for (Profile p : allProfiles())
        names.emplace_back(profileName(p));
    return names;
}

const std::vector<FieldDef>& fieldDefs()
{
    static const std::vector<FieldDef> defs = {
        { "name", &Recipe::name },
        { "num_layers", &Recipe::num_layers },
        { "hidden_size", &Recipe::hidden_size },
        { "ffn_hidden_size", &Recipe::ffn_hidden_size },
        { "num_attention_heads", &Recipe::num_attention_heads },
        { "num_query_groups", &Recipe::num_query_groups },
        { "kv_channels", &Recipe::kv_channels },
        { "seq_length", &Recipe::seq_length },
        { "micro_batch_size", &Recipe::micro_batch_size },
        { "global_batch_size", &Recipe::global_batch_size },
        { "create_attention_mask_in_dataloader", &Recipe::create_attention_mask_in_dataloader },
        { "normalization", &Recipe::normalization },
        { "gated_linear_unit", &Recipe::gated_linear_unit },
        { "activation_func", &Recipe::activation_func },
        { "bias_activation_fusion", &Recipe::bias_activation_fusion },
        { "use_fused_weighted_squared_relu", &Recipe::use_fused_weighted_squared_relu },
        { "cross_entropy_loss_fusion", &Recipe::cross_entropy_loss_fusion },
        { "cross_entropy_fusion_impl", &Recipe::cross_entropy_fusion_impl },
        { "vocab_size", &Recipe::vocab_size },
        { "make_vocab_size_divisible_by", &Recipe::make_vocab_size_divisible_by },
        { "add_bias_linear", &Recipe::add_bias_linear },
        { "add_qkv_bias", &Recipe::add_qkv_bias },
        { "qk_layernorm", &Recipe::qk_layernorm },
        { "position_embedding_type", &Recipe::position_embedding_type },
        { "max_position_embeddings", &Recipe::max_position_embeddings },
        { "rotary_percent", &Recipe::rotary_percent },
        { "rotary_base", &Recipe::rotary_base },
        { "untie_embeddings_and_output_weights", &Recipe::untie_embeddings_and_output_weights },
        { "attention_softmax_in_fp32", &Recipe::attention_softmax_in_fp32 },
        { "apply_query_key_layer_scaling", &Recipe::apply_query_key_layer_scaling },
        { "masked_softmax_fusion", &Recipe::masked_softmax_fusion },
        { "gradient_accumulation_fusion", &Recipe::gradient_accumulation_fusion },
        { "multi_latent_attention", &Recipe::multi_latent_attention },
        { "q_lora_rank", &Recipe::q_lora_rank },
        { "kv_lora_rank", &Recipe::kv_lora_rank },
        { "qk_head_dim", &Recipe::qk_head_dim },
        { "qk_pos_emb_head_dim", &Recipe::qk_pos_emb_head_dim },
        { "v_head_dim", &Recipe::v_head_dim },
        { "experimental_attention_variant", &Recipe::experimental_attention_variant },
        { "dsa_indexer_n_heads", &Recipe::dsa_indexer_n_heads },
        { "dsa_indexer_head_dim", &Recipe::dsa_indexer_head_dim },
        { "dsa_indexer_topk", &Recipe::dsa_indexer_topk },
        { "dsa_indexer_topk_freq", &Recipe::dsa_indexer_topk_freq },
        { "dsa_indexer_skip_topk_offset", &Recipe::dsa_indexer_skip_topk_offset },
        { "dsa_indexer_loss_coeff", &Recipe::dsa_indexer_loss_coeff },
        { "dsa_indexer_use_sparse_loss", &Recipe::dsa_indexer_use_sparse_loss },
        { "dsa_kernel_backend", &Recipe::dsa_kernel_backend },
        { "linear_attention_freq", &Recipe::linear_attention_freq, true },
        { "linear_conv_kernel_dim", &Recipe::linear_conv_kernel_dim },
        { "linear_key_head_dim", &Recipe::linear_key_head_dim },
        { "linear_value_head_dim", &Recipe::linear_value_head_dim },
        { "linear_num_key_heads", &Recipe::linear_num_key_heads },
        { "linear_num_value_heads", &Recipe::linear_num_value_heads },
        { "hybrid_layer_pattern", &Recipe::hybrid_layer_pattern },
        { "is_hybrid_model", &Recipe::is_hybrid_model },
        { "mamba_num_heads", &Recipe::mamba_num_heads },
        { "mamba_head_dim", &Recipe::mamba_head_dim },
        { "mamba_state_dim", &Recipe::mamba_state_dim },
        { "mamba_num_groups", &Recipe::mamba_num_groups },
        { "mamba_chunk_size", &Recipe::mamba_chunk_size },
        { "num_moe_experts", &Recipe::num_moe_experts },
        { "moe_router_topk", &Recipe::moe_router_topk },
        { "moe_ffn_hidden_size", &Recipe::moe_ffn_hidden_size },
        { "moe_grouped_gemm", &Recipe::moe_grouped_gemm },
        { "moe_shared_expert_intermediate_size", &Recipe::moe_shared_expert_intermediate_size },
        { "moe_shared_expert_overlap", &Recipe::moe_shared_expert_overlap },
        { "moe_latent_size", &Recipe::moe_latent_size },
        { "moe_layer_freq", &Recipe::moe_layer_freq, true },
        { "moe_token_dispatcher_type", &Recipe::moe_token_dispatcher_type },
        { "moe_input_jitter_eps", &Recipe::moe_input_jitter_eps },
        { "mtp_num_layers", &Recipe::mtp_num_layers },
        { "mtp_use_repeated_layer", &Recipe::mtp_use_repeated_layer },
        { "mtp_hybrid_override_pattern", &Recipe::mtp_hybrid_override_pattern },
        { "moe_aux_loss_coeff", &Recipe::moe_aux_loss_coeff },
        { "moe_router_load_balancing_type", &Recipe::moe_router_load_balancing_type },
        { "moe_expert_capacity_factor", &Recipe::moe_expert_capacity_factor },
        { "enable_mhc_connections", &Recipe::enable_mhc_connections },
        { "enable_hyper_connections", &Recipe::enable_hyper_connections },
        { "mhc_recompute_layer_num", &Recipe::mhc_recompute_layer_num },
        { "tensor_model_parallel_size", &Recipe::tensor_model_parallel_size },
        { "pipeline_model_parallel_size", &Recipe::pipeline_model_parallel_size },
        { "virtual_pipeline_model_parallel_size", &Recipe::virtual_pipeline_model_parallel_size },
        { "context_parallel_size", &Recipe::context_parallel_size },
        { "expert_model_parallel_size", &Recipe::expert_model_parallel_size },
        { "expert_tensor_parallel_size", &Recipe::expert_tensor_parallel_size },
        { "sequence_parallel", &Recipe::sequence_parallel },
        { "data_parallel_size", &Recipe::data_parallel_size },
        { "pipeline_model_parallel_layout", &Recipe::pipeline_model_parallel_layout },
        { "num_layers_in_first_pipeline_stage", &Recipe::num_layers_in_first_pipeline_stage },
        { "num_layers_in_last_pipeline_stage", &Recipe::num_layers_in_last_pipeline_stage },
        { "account_for_embedding_in_pipeline_split", &Recipe::account_for_embedding_in_pipeline_split },
        { "account_for_loss_in_pipeline_split", &Recipe::account_for_loss_in_pipeline_split },
        { "deallocate_pipeline_outputs", &Recipe::deallocate_pipeline_outputs },
        { "use_distributed_optimizer", &Recipe::use_distributed_optimizer },
        { "grad_reduce_in_fp32", &Recipe::grad_reduce_in_fp32 },
        { "main_grads_dtype", &Recipe::main_grads_dtype },
        { "main_params_dtype", &Recipe::main_params_dtype },
        { "exp_avg_dtype", &Recipe::exp_avg_dtype },
        { "exp_avg_sq_dtype", &Recipe::exp_avg_sq_dtype },
        { "store_param_remainders", &Recipe::store_param_remainders },
        { "use_precision_aware_optimizer", &Recipe::use_precision_aware_optimizer },
        { "adam_implementation", &Recipe::adam_implementation },
        { "bf16", &Recipe::bf16 },
        { "fp16", &Recipe::fp16 },
        { "fp8", &Recipe::fp8 },
        { "fp8_recipe", &Recipe::fp8_recipe },
        { "fp8_param_gather", &Recipe::fp8_param_gather },
        { "fp4", &Recipe::fp4 },
        { "mixed_precision", &Recipe::mixed_precision },
        { "te_version", &Recipe::te_version },
        { "attention_backend", &Recipe::attention_backend },
        { "transformer_impl", &Recipe::transformer_impl },
        { "attention_dropout", &Recipe::attention_dropout },
        { "hidden_dropout", &Recipe::hidden_dropout },
        { "cuda_graph_impl", &Recipe::cuda_graph_impl },
        { "cuda_graph_modules", &Recipe::cuda_graph_modules },
        { "cuda_graph_scope", &Recipe::cuda_graph_scope },
        { "enable_cuda_graph", &Recipe::enable_cuda_graph },
        { "external_cuda_graph", &Recipe::external_cuda_graph },
        { "use_te_rng_tracker", &Recipe::use_te_rng_tracker },
        { "cpu_offloading", &Recipe::cpu_offloading },
        { "cpu_offloading_num_layers", &Recipe::cpu_offloading_num_layers },
        { "fine_grained_activation_offloading", &Recipe::fine_grained_activation_offloading },
        { "offload_modules", &Recipe::offload_modules },
        { "recompute_granularity", &Recipe::recompute_granularity },
        { "recompute_modules", &Recipe::recompute_modules },
        { "recompute_method", &Recipe::recompute_method },
        { "recompute_num_layers", &Recipe::recompute_num_layers },
        { "distribute_saved_activations", &Recipe::distribute_saved_activations },
        { "moe_layer_recompute", &Recipe::moe_layer_recompute },
        { "peft.scheme", &Recipe::peft },
        { "peft.dim", &Recipe::peft_dim },
        { "peft.alpha", &Recipe::peft_alpha },
        { "peft.dropout", &Recipe::peft_dropout },
        { "peft.target_modules", &Recipe::peft_target_modules },
        { "delay_wgrad_compute", &Recipe::delay_wgrad_compute },
        { "comm_overlap.overlap_moe_expert_parallel_comm", &Recipe::overlap_moe_expert_parallel_comm },
        { "rerun_state_machine.check_for_nan_in_loss", &Recipe::check_for_nan_in_loss },
        { "profile", &Recipe::profile },
        { "memory_target_gb", &Recipe::memory_target_gb },
        { "gpu_compute_capability", &Recipe::gpu_compute_capability },
        { "warmup_iters", &Recipe::warmup_iters },
        { "train_iters", &Recipe::train_iters },
        { "checkpoint_activations_flag", &Recipe::checkpoint_activations_flag },
        { "recompute_activations", &Recipe::recompute_activations },
        { "front_end", &Recipe::front_end },
        { "extra_overrides", &Recipe::extra_overrides },
        { "extra_flags", &Recipe::extra_flags },
        { "launch_command", &Recipe::launch_command },
        { "explicit_keys", &Recipe::explicit_keys },
    };
    return defs;
}

const FieldDef* findField(const std::string& key)
{
    for (const FieldDef& f : fieldDefs()) {
        if (key == f.key)
            return &f;
    }
    return nullptr;
}

// --- JSON -> field values, with the messages a user needs ---

[[noreturn]] void wrongType(
    const std::string& key, const std::string& where, const char* expected, const nlohmann::json& got)
{
    throw RecipeError(key, where, std::string("expected ") + expected + ", got " + boundedDump(got));
}

int readInt(const std::string& key, const std::string& where, const nlohmann::json& v, const char* expected)
{
    if (!v.is_number_integer())
        wrongType(key, where, expected, v);
    if (v.is_number_unsigned()) {
        if (v.get<std::uint64_t>() > std::uint64_t(INT_MAX))
            throw RecipeError(key, where,
                "integer " + v.dump() + " is out of range (allowed: " + std::to_string(INT_MIN) + " to "
                    + std::to_string(INT_MAX) + ")");
        return int(v.get<std::uint64_t>());
    }
    const std::int64_t x = v.get<std::int64_t>();
    if (x < INT_MIN || x > INT_MAX)
        throw RecipeError(key, where,
            "integer " + v.dump() + " is out of range (allowed: " + std::to_string(INT_MIN) + " to "
                + std::to_string(INT_MAX) + ")");
    return int(x);
}

double readDouble(
    const std::string& key, const std::string& where, const nlohmann::json& v, const char* expected)
{
    if (!v.is_number())
        wrongType(key, where, expected, v);
    const double x = v.get<double>();
    if (!std::isfinite(x))
        throw RecipeError(key, where, "expected a finite number (at most 1.8e308 in magnitude)");
    return x;
}

std::string readString(
    const std::string& key, const std::string& where, const nlohmann::json& v, const char* expected)
{
    if (!v.is_string())
        wrongType(key, where, expected, v);
    std::string s = v.get<std::string>();
    if (!isValidUtf8(s))
        throw RecipeError(
            key, where, "the text is not valid UTF-8: '" + s + "' (every string must be UTF-8)");
    if (const std::vector<std::string>* allowed = allowedValues(key)) {
        if (std::find(allowed->begin(), allowed->end(), s) == allowed->end())
            throw RecipeError(key, where, "'" + s + "' is not allowed; allowed: " + joinNames(*allowed));
    }
    return s;
}

std::vector<std::string> readStringList(
    const std::string& key, const std::string& where, const nlohmann::json& v, const char* expected)
{
    if (!v.is_array())
        wrongType(key, where, expected, v);
    std::vector<std::string> out;
    for (const nlohmann::json& item : v) {
        if (!item.is_string())
            throw RecipeError(
                key, where, std::string("expected ") + expected + ", got the element " + boundedDump(item));
        if (!isValidUtf8(item.get<std::string>()))
            throw RecipeError(key, where,
                "the element '" + item.get<std::string>()
                    + "' is not valid UTF-8 (every string must be UTF-8)");
        out.push_back(item.get<std::string>());
    }
    return out;
}

std::vector<int> readLayerFreq(const std::string& key, const std::string& where, const nlohmann::json& v)
{
    static const char* const expected = "an integer >= 1 or a non-empty list of 0/1";
    if (v.is_number_integer()) {
        const int n = readInt(key, where, v, expected);
        if (n < 1)
            throw RecipeError(key, where, "expected " + std::string(expected) + ", got " + boundedDump(v));
        return { n };
    }
    if (!v.is_array() || v.empty())
        wrongType(key, where, expected, v);
    std::vector<int> pattern;
    for (const nlohmann::json& item : v) {
        if (!item.is_number_integer() || (item.get<std::int64_t>() != 0 && item.get<std::int64_t>() != 1))
            throw RecipeError(
                key, where, "expected " + std::string(expected) + ", got the element " + boundedDump(item));
        pattern.push_back(item.get<int>());
    }
    return pattern;
}

// pipeline_model_parallel_layout: Megatron's string form, checked by its parser and kept as written, or its
// list form (one list of LayerType names per stage), kept as the string form (TransformerConfig takes
// either).
std::optional<std::string> readPipelineLayout(
    const std::string& key, const std::string& where, const nlohmann::json& v)
{
    static const char* const expected
        = "a layout string such as \"Et|(tt|)*30mL\", a list of per-stage lists of layer names such as "
          "[[\"embedding\", \"decoder\"], [\"decoder\", \"loss\"]], or null";
    if (v.is_null())
        return std::nullopt;
    try {
        if (v.is_string()) {
            const std::string text = readString(key, where, v, expected);
            parsePipelineLayout(text);
            return text;
        }
        if (!v.is_array())
            wrongType(key, where, expected, v);
        std::vector<std::vector<std::string>> stages;
        for (const nlohmann::json& stage : v) {
            if (!stage.is_array())
                throw RecipeError(key, where,
                    std::string("expected ") + expected + ", got the stage " + boundedDump(stage));
            stages.push_back(readStringList(key, where, stage, "a list of layer names"));
        }
        return pipelineLayoutText(pipelineLayoutFromNames(stages));
    } catch (const PipelineLayoutError& e) {
        throw RecipeError(key, where, e.what());
    }
}

template <class... F> struct Overloaded : F... {
    using F::operator()...;
};
template <class... F> Overloaded(F...) -> Overloaded<F...>;

} // namespace

// --- public field access ---

const std::vector<std::string>& recipeFieldKeys()
{
    static const std::vector<std::string> keys = [] {
        std::vector<std::string> k;
        for (const FieldDef& f : fieldDefs())
            k.emplace_back(f.key);
        return k;
    }();
    return keys;
}

std::optional<RecipeFieldType> recipeFieldType(const std::string& key)
{
    const FieldDef* f = findField(key);
    if (!f)
        return std::nullopt;
    if (key == kPipelineLayoutKey)
        return RecipeFieldType::PipelineLayout;
    return std::visit(
        Overloaded {
            [](int Recipe::*) { return RecipeFieldType::Int; },
            [](std::optional<int> Recipe::*) { return RecipeFieldType::OptionalInt; },
            [](double Recipe::*) { return RecipeFieldType::Double; },
            [](std::optional<double> Recipe::*) { return RecipeFieldType::OptionalDouble; },
            [](bool Recipe::*) { return RecipeFieldType::Bool; },
            [](std::string Recipe::*) { return RecipeFieldType::String; },
            [](std::optional<std::string> Recipe::*) { return RecipeFieldType::OptionalString; },
            [](std::vector<std::string> Recipe::*) { return RecipeFieldType::StringList; },
            [](std::optional<std::vector<std::string>> Recipe::*) {
                return RecipeFieldType::OptionalStringList;
            },
            [](std::vector<int> Recipe::*) { return RecipeFieldType::LayerFreq; },
            [](Profile Recipe::*) { return RecipeFieldType::Profile; },
            [](InputFormat Recipe::*) { return RecipeFieldType::FrontEnd; },
        },
        f->member);
}

nlohmann::json recipeFieldValue(const Recipe& r, const std::string& key)
{
    const FieldDef* f = findField(key);
    if (!f)
        throw RecipeError(key, "recipe", "unknown field");
    return std::visit(Overloaded {
                          [&](int Recipe::*m) { return nlohmann::json(r.*m); },
                          [&](std::optional<int> Recipe::*m) {
                              return (r.*m) ? nlohmann::json(*(r.*m)) : nlohmann::json(nullptr);
                          },
                          [&](double Recipe::*m) { return nlohmann::json(r.*m); },
                          [&](std::optional<double> Recipe::*m) {
                              return (r.*m) ? nlohmann::json(*(r.*m)) : nlohmann::json(nullptr);
                          },
                          [&](bool Recipe::*m) { return nlohmann::json(r.*m); },
                          [&](std::string Recipe::*m) { return nlohmann::json(r.*m); },
                          [&](std::optional<std::string> Recipe::*m) {
                              return (r.*m) ? nlohmann::json(*(r.*m)) : nlohmann::json(nullptr);
                          },
                          [&](std::vector<std::string> Recipe::*m) { return nlohmann::json(r.*m); },
                          [&](std::optional<std::vector<std::string>> Recipe::*m) {
                              return (r.*m) ? nlohmann::json(*(r.*m)) : nlohmann::json(nullptr);
                          },
                          [&](std::vector<int> Recipe::*m) {
                              // A single value >= 1 is Megatron's int form (every N-th layer); anything
                              // else is a layer pattern; none at all is None (linear_attention_freq).
                              const std::vector<int>& v = r.*m;
                              if (v.empty())
                                  return nlohmann::json(nullptr);
                              if (v.size() == 1 && v[0] >= 1)
                                  return nlohmann::json(v[0]);
                              return nlohmann::json(v);
                          },
                          [&](Profile Recipe::*m) { return nlohmann::json(profileName(r.*m)); },
                          [&](InputFormat Recipe::*m) { return nlohmann::json(frontEndName(r.*m)); },
                      },
        f->member);
}

void setRecipeField(Recipe& r, const std::string& key, const nlohmann::json& v, const std::string& where)
{
    const FieldDef* f = findField(key);
    if (!f) {
        throw RecipeError(
            key, where, "unknown field; did you mean '" + nearestName(key, recipeFieldKeys()) + "'?");
    }
    if (key == kPipelineLayoutKey) {
        r.pipeline_model_parallel_layout = readPipelineLayout(key, where, v);
        return;
    }
    std::visit(Overloaded {
                   [&](int Recipe::*m) { r.*m = readInt(key, where, v, "an integer"); },
                   [&](std::optional<int> Recipe::*m) {
                       r.*m = v.is_null() ? std::nullopt
                                          : std::optional<int>(readInt(key, where, v, "an integer or null"));
                   },
                   [&](double Recipe::*m) { r.*m = readDouble(key, where, v, "a number"); },
                   [&](std::optional<double> Recipe::*m) {
                       r.*m = v.is_null()
                           ? std::nullopt
                           : std::optional<double>(readDouble(key, where, v, "a number or null"));
                   },
                   [&](bool Recipe::*m) {
                       if (!v.is_boolean())
                           wrongType(key, where, "true or false", v);
                       r.*m = v.get<bool>();
                   },
                   [&](std::string Recipe::*m) { r.*m = readString(key, where, v, "a string"); },
                   [&](std::optional<std::string> Recipe::*m) {
                       r.*m = v.is_null()
                           ? std::nullopt
                           : std::optional<std::string>(readString(key, where, v, "a string or null"));
                   },
                   [&](std::vector<std::string> Recipe::*m) {
                       r.*m = readStringList(key, where, v, "a list of strings");
                       if (key == "explicit_keys") {
                           std::sort((r.*m).begin(), (r.*m).end());
                           (r.*m).erase(std::unique((r.*m).begin(), (r.*m).end()), (r.*m).end());
                       }
                   },
                   [&](std::optional<std::vector<std::string>> Recipe::*m) {
                       if (v.is_null())
                           r.*m = std::nullopt;
                       else
                           r.*m = readStringList(key, where, v, "a list of strings or null");
                   },
                   [&](std::vector<int> Recipe::*m) {
                       // linear_attention_freq is Optional in TransformerConfig: null is None.
                       if (v.is_null() && key == "linear_attention_freq")
                           (r.*m).clear();
                       else
                           r.*m = readLayerFreq(key, where, v);
                   },
                   [&](Profile Recipe::*m) {
                       const std::string name = readString(key, where, v, "a string");
                       r.*m = *profileFromName(name); // readString checked it against the profile names
                   },
                   [&](InputFormat Recipe::*m) {
                       const std::string name = readString(key, where, v, "a string");
                       r.*m = *frontEndFromName(name);
                   },
               },
        f->member);
}

const std::vector<std::string>* allowedValues(const std::string& key)
{
    static const std::vector<std::string> kProfiles = profileNames();
    if (key == "normalization")
        return &kNormalization;
    if (key == "position_embedding_type")
        return &kPositionEmbedding;
    if (key == "moe_router_load_balancing_type")
        return &kLoadBalancing;
    if (key == "main_grads_dtype")
        return &kMainGradsDtype;
    if (key == "main_params_dtype")
        return &kMainParamsDtype;
    if (key == "exp_avg_dtype" || key == "exp_avg_sq_dtype")
        return &kMomentDtype;
    if (key == "activation_func")
        return &kActivation;
    if (key == "cross_entropy_fusion_impl")
        return &kCrossEntropyImpl;
    if (key == "attention_backend")
        return &kAttentionBackend;
    if (key == "adam_implementation")
        return &kAdamImplementation;
    if (key == "transformer_impl")
        return &kTransformerImpl;
    if (key == "cuda_graph_impl")
        return &kCudaGraphImpl;
    if (key == "fp8")
        return &kFp8;
    if (key == "peft.scheme")
        return &kPeft;
    if (key == "fp8_recipe")
        return &kFp8Recipe;
    if (key == "moe_token_dispatcher_type")
        return &kDispatcher;
    if (key == "dsa_kernel_backend")
        return &kDsaKernelBackend;
    if (key == "profile")
        return &kProfiles;
    if (key == "front_end")
        return &kFrontEnd;
    return nullptr;
}

std::size_t nameDistance(const std::string& name, const std::string& other)
{
    // Levenshtein distance, case-insensitive.
    auto lower = [](std::string s) {
        std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
        return s;
    };
    const std::string a = lower(name), b = lower(other);
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j)
        row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t above = row[j];
            row[j] = std::min({ row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1) });
            diagonal = above;
        }
    }
    return row[b.size()];
}

std::string nearestName(const std::string& name, const std::vector<std::string>& candidates)
{
    // The first of equally near candidates wins.
    std::string best;
    std::size_t bestDistance = std::string::npos;
    for (const std::string& candidate : candidates) {
        const std::size_t d = nameDistance(name, candidate);
        if (d < bestDistance) {
            bestDistance = d;
            best = candidate;
        }
    }
    return best;
}

std::string joinNames(const std::vector<std::string>& names)
{
    std::string out;
    for (const std::string& n : names) {
        if (!out.empty())
            out += ", ";
        out += n;
    }
    return out;
}

// --- whole recipes ---

bool Recipe::operator==(const Recipe& other) const
{
    for (const FieldDef& f : fieldDefs()) {
        if (std::string(f.key) == "explicit_keys")
            continue; // how a value was set, not what the recipe is
        const bool same = std::visit([&](auto m) { return this->*m == other.*m; }, f.member);
        if (!same)
            return false;
    }
    return true;
}

Recipe recipeFromJson(const nlohmann::json& j, const std::string& where)
{
    if (!j.is_object())
        throw RecipeError("", where, "a recipe is a JSON object, got " + std::string(j.type_name()));
    // The version first: a newer file is reported as newer, not as a list of unknown keys.
    if (auto it = j.find("schema_version"); it != j.end()) {
        if (!it->is_number_integer())
            wrongType("schema_version", where, "an integer", *it);
        const int version = readInt("schema_version", where, *it, "an integer");
        if (version > Recipe::kSchemaVersion) {
            throw RecipeError("schema_version", where,
                "schema_version " + std::to_string(version) + " is newer than this program reads ("
                    + std::to_string(Recipe::kSchemaVersion) + "); use a newer Recompute Studio");
        }
        if (version < 1)
            throw RecipeError(
                "schema_version", where, "schema_version must be >= 1, got " + boundedDump(*it));
    }

    Recipe r;
    auto unknown = [&](const std::string& key) {
        std::vector<std::string> candidates = recipeFieldKeys();
        candidates.emplace_back("schema_version");
        throw RecipeError(key, where, "unknown key; did you mean '" + nearestName(key, candidates) + "'?");
    };
    for (auto it = j.begin(); it != j.end(); ++it) {
        const std::string& key = it.key();
        if (key == "schema_version")
            continue;
        if (key == "comm_overlap" || key == "rerun_state_machine" || key == "peft") {
            if (!it->is_object())
                wrongType(key, where, "an object", *it);
            for (auto inner = it->begin(); inner != it->end(); ++inner) {
                const std::string dotted = key + "." + inner.key();
                if (!findField(dotted))
                    unknown(dotted);
                setRecipeField(r, dotted, inner.value(), where);
            }
            continue;
        }
        if (key.find('.') != std::string::npos || !findField(key))
            unknown(key);
        setRecipeField(r, key, it.value(), where);
    }
    // Overrides an earlier version kept verbatim (no field modelled them then: a pipeline layout, a peft
    // section) that name a field now: read into it, as Bridge applies them on top of the rest, so a recipe
    // stored before the field came estimates with it.
    std::vector<std::string> now_fields, still_kept;
    for (const std::string& o : r.extra_overrides) {
        const std::string key = o.substr(0, o.find('='));
        const bool plain = !key.empty() && key.find_first_of("+~") != 0 && o.find('=') != std::string::npos;
        (plain && !bridgeOverrideField(key).empty() ? now_fields : still_kept).push_back(o);
    }
    if (!now_fields.empty()) {
        r.extra_overrides = still_kept;
        try {
            r = recipeFromBridgeOverrides(now_fields, r);
        } catch (const RecipeError& e) {
            throw RecipeError(e.field, where, "extra_overrides: " + e.message);
        }
    }
    return r;
}

Recipe recipeFromJsonText(const std::string& text, const std::string& where)
{
    nlohmann::json j;
    // nlohmann keeps the last of two equal keys; a recipe must not lose the first silently.
    struct Scope {
        std::set<std::string> keys;
        std::string parent;
    };
    std::vector<Scope> scopes;
    std::string lastKey;
    // The recipe field being read: the top-level key, dotted with the inner key for the two nested objects.
    std::string topKey, innerKey;
    const auto dottedLast = [&]() {
        if ((topKey == "comm_overlap" || topKey == "rerun_state_machine" || topKey == "peft")
            && !innerKey.empty())
            return topKey + "." + innerKey;
        return topKey;
    };
    const nlohmann::json::parser_callback_t noDuplicates
        = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
              if ((event == nlohmann::json::parse_event_t::object_start
                      || event == nlohmann::json::parse_event_t::array_start)
                  && depth >= kMaxJsonNesting) {
                  throw RecipeError(dottedLast(), where,
                      "nested more than " + std::to_string(kMaxJsonNesting)
                          + " levels deep (a recipe value is at most a list inside an object)");
              }
              if (event == nlohmann::json::parse_event_t::object_start) {
                  scopes.push_back({ {}, scopes.empty() ? std::string() : lastKey });
              } else if (event == nlohmann::json::parse_event_t::object_end) {
                  scopes.pop_back();
              } else if (event == nlohmann::json::parse_event_t::key && !scopes.empty()) {
                  lastKey = parsed.get<std::string>();
                  if (scopes.size() == 1) {
                      topKey = lastKey;
                      innerKey.clear();
                  } else if (scopes.size() == 2) {
                      innerKey = lastKey;
                  }
                  if (!scopes.back().keys.insert(lastKey).second) {
                      const std::string& parent = scopes.back().parent;
                      throw RecipeError(parent.empty() ? lastKey : parent + "." + lastKey, where,
                          "duplicate key: the recipe gives it twice");
                  }
              }
              return true;
          };
    try {
        j = nlohmann::json::parse(text, noDuplicates);
    } catch (const nlohmann::json::out_of_range& e) {
        // A number literal too large for a double ("1e400"): nlohmann says "number overflow" and nothing
        // else; the key it was read for is the last one seen.
        std::string literal = e.what();
        if (const auto q = literal.find('\''); q != std::string::npos)
            literal = literal.substr(q);
        throw RecipeError(dottedLast(), where,
            "the number " + literal
                + " is out of range: a number must be finite, at most 1.8e308 in magnitude");
    } catch (const nlohmann::json::parse_error& e) {
        // e.byte is the 1-based offset of the last character read: the end of the offending token. Point
        // at the token's start, where an editor's cursor should go.
        std::size_t stop = e.byte == 0 ? 0 : std::min<std::size_t>(e.byte - 1, text.size());
        auto tokenChar = [](char c) {
            return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '+' || c == '-';
        };
        if (stop < text.size() && text[stop] == '"') {
            for (std::size_t i = stop; i-- > 0;) {
                if (text[i] == '"' && (i == 0 || text[i - 1] != '\\')) {
                    stop = i;
                    break;
                }
            }
        } else {
            // An invalid literal is reported with the character after it ("tru\n"): step back onto it.
            if (stop > 0 && (stop == text.size() || !tokenChar(text[stop])) && tokenChar(text[stop - 1])
                && std::string(e.what()).find("invalid literal") != std::string::npos)
                --stop;
            while (stop > 0 && stop < text.size() && tokenChar(text[stop]) && tokenChar(text[stop - 1]))
                --stop;
        }
        std::size_t line = 1, column = 1;
        for (std::size_t i = 0; i < stop; ++i) {
            if (text[i] == '\n') {
                ++line;
                column = 1;
            } else {
                ++column;
            }
        }
        std::string detail = e.what();
        if (const auto colon = detail.find("syntax error"); colon != std::string::npos)
            detail = detail.substr(colon);
        throw RecipeError("", where,
            "malformed JSON at line " + std::to_string(line) + ", column " + std::to_string(column) + ": "
                + detail);
    }
    return recipeFromJson(j, where);
}

nlohmann::json recipeToJson(const Recipe& r)
{
    nlohmann::json j = nlohmann::json::object();
    j["schema_version"] = Recipe::kSchemaVersion;
    for (const std::string& key : recipeFieldKeys()) {
        const auto dot = key.find('.');
        if (dot == std::string::npos)
            j[key] = recipeFieldValue(r, key);
        else
            j[key.substr(0, dot)][key.substr(dot + 1)] = recipeFieldValue(r, key);
    }
    return j;
}

std::string recipeCanonicalText(const Recipe& r)
{
    nlohmann::json j = recipeToJson(r);
    j.erase("explicit_keys");
    return j.dump();
}

const char* frontEndName(InputFormat f)
{
    switch (f) {
    case InputFormat::Json:
        return "json";
    case InputFormat::BridgeOverrides:
        return "bridge_overrides";
    case InputFormat::MegatronFlags:
        return "megatron_flags";
    }
    return "json";
}

std::optional<InputFormat> frontEndFromName(const std::string& name)
{
    for (InputFormat f : { InputFormat::Json, InputFormat::BridgeOverrides, InputFormat::MegatronFlags }) {
        if (name == frontEndName(f))
            return f;
    }
    return std::nullopt;
}

Recipe frontEndDefaults(InputFormat frontEnd, Profile profile)
{
    Recipe r;
    r.profile = profile;
    r.front_end = frontEnd;
    switch (frontEnd) {
    case InputFormat::Json:
        break;
    case InputFormat::MegatronFlags:
        // --no-masked-softmax-fusion is store_false: Megatron-LM fuses unless told not to.
        r.masked_softmax_fusion = true;
        // --no-gradient-accumulation-fusion is store_false (arguments.py): fused unless told not to.
        r.gradient_accumulation_fusion = true;
        // megatron/training/argument_utils.py:305 (d98e8a64), core_transformer_config_from_args: always
        // True, with no flag to say otherwise.
        r.deallocate_pipeline_outputs = true;
        // megatron/training/arguments.py: --attention-softmax-in-fp32 is a store_true flag (default
        // False), where TransformerConfig's field defaults to True. Every other modelled default
        // (learned_absolute positions, biases on, tied embeddings, dropout 0.1, padded vocabulary to 128,
        // allgather dispatcher, top-2 router) is the same as TransformerConfig's. grad_reduce_in_fp32 is
        // derived after the flags are read (bf16 with fp32 main grads: validate_args turns it on).
        r.attention_softmax_in_fp32 = false;
        // --no-bias-swiglu-fusion / --no-bias-gelu-fusion are store_false flags (on by default); the
        // reader derives the field from them after the whole command line (megatron_flags.cpp).
        r.bias_activation_fusion = true;
        break;
    case InputFormat::BridgeOverrides:
        // Megatron Bridge's GPTModelProvider (src/megatron/bridge/models/gpt_provider.py): seq_length 1024;
        // share_embeddings_and_output_weights True, make_vocab_size_divisible_by 128, learned_absolute,
        // rotary 10000 / 1.0 as TransformerConfig. DistributedDataParallelConfig: grad_reduce_in_fp32
        // False, use_distributed_optimizer False. bias_activation_fusion: GPTModelProvider keeps
        // TransformerConfig's False (the Llama / Qwen providers and Bridge's perf recipes set it True).
        r.seq_length = 1024;
        // GPTModelProvider (gpt_provider.py at 0254ddd4, "# Fusions"): masked_softmax_fusion True, where
        // TransformerConfig says False.
        r.masked_softmax_fusion = true;
        // GPTModelProvider (gpt_provider.py:162 at 067f987d): deallocate_pipeline_outputs True, where
        // ModelParallelConfig says False.
        r.deallocate_pipeline_outputs = true;
        // GPTModelProvider (gpt_provider.py at 0254ddd4): attention_softmax_in_fp32 False, where
        // TransformerConfig says True.
        r.attention_softmax_in_fp32 = false;
        // GPTModelProvider and the hybrid provider (gpt_provider.py:206, hybrid_provider.py:150 at
        // 067f987d): fusions.can_enable_gradient_accumulation_fusion(), True where Transformer Engine or
        // apex's kernel is installed, as on the clusters these recipes name.
        r.gradient_accumulation_fusion = true;
        // Bridge's GPTDatasetConfig: skip_getting_attention_mask_from_dataset True (training/config.py:251
        // at 067f987d; recipes/common.py:102 says it again); its SFT configs have no such field and
        // gpt_step.py reads it with getattr(..., True).
        r.create_attention_mask_in_dataloader = false;
        break;
    }
    return r;
}

void markExplicit(Recipe& r, const std::string& key)
{
    auto it = std::lower_bound(r.explicit_keys.begin(), r.explicit_keys.end(), key);
    if (it == r.explicit_keys.end() || *it != key)
        r.explicit_keys.insert(it, key);
}

bool isExplicit(const Recipe& r, const std::string& key)
{
    return std::binary_search(r.explicit_keys.begin(), r.explicit_keys.end(), key);
}

} // namespace rs
