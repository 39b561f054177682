// SPDX-License-Identifier: Apache-2.0
// The rules engine: every evaluated rule fires on one recipe and narrowly does not on a neighbour, per
// profile where it differs; messages render as Python would; adjustments land in `resolved`; findings come
// in Megatron's evaluation order; applying a fix-it clears its finding; the catalogue and label effects.
#include <cstring>

#include <nlohmann/json.hpp>

#include <QtTest>

#include "core/megatron_arg_table.h"
#include "core/profiles.h"
#include "core/recipe_json.h"
#include "core/rules.h"
#include "core/rules_detail.h"

using namespace rs;

namespace {

// A plain dense GPT that the MCore rules accept; each case merges its patch into it.
const char* const kBase = R"({"num_layers": 8, "hidden_size": 1024, "num_attention_heads": 8, "bf16": true})";

// A valid EP A2A overlap setup (R36 / B4 start from it).
#define EPO                                                                                                  \
    R"("num_moe_experts": 8, "moe_grouped_gemm": true, "expert_model_parallel_size": 2, )"                   \
    R"("moe_token_dispatcher_type": "alltoall", "comm_overlap": {"overlap_moe_expert_parallel_comm": true}, )"
#define SEL R"("recompute_granularity": "selective", )"
#define FULL1 R"("recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 1, )"
#define MOE R"("num_moe_experts": 8, "moe_grouped_gemm": true, )"
#define NODROP R"("attention_dropout": 0.0, "hidden_dropout": 0.0, )"
// DeepSeek sparse attention on the cuDNN path the estimate models (8 heads: FlashMLA pads them to 64).
#define DSA                                                                                                  \
    R"("multi_latent_attention": true, "experimental_attention_variant": "dsa", "add_bias_linear": false, )" \
    R"("dsa_indexer_n_heads": 4, "dsa_indexer_head_dim": 32, "dsa_indexer_topk": 64, "dsa_kernel_backend": "cudnn", )"

struct Case {
    const char* profiles; // "*" = every profile, else a comma list of profile names
    const char* format; // json | bridge | flags
    const char* id;
    const char* key; // a piece of the message template that tells this row of the rule from its others
    const char* patch; // merged into kBase (a trailing ", " before "}" is allowed)
    bool fires;
};

// clang-format off
const std::vector<Case>& cases()
{
    static const std::vector<Case> c = {
    // --- Megatron-LM flags
    { "*", "flags", "M1", "no longer valid", R"({"checkpoint_activations_flag": "--checkpoint-activations"})", true },
    { "*", "flags", "M1", "no longer valid", R"({"recompute_activations": true})", false },
    { "*", "flags", "M2", "-> 'selective'", R"({"recompute_activations": true})", true },
    { "*", "flags", "M2", "-> 'selective'", R"({"recompute_activations": false})", false },
    { "*", "flags", "M3", "only across tensor model parallel", R"({)" FULL1 R"("distribute_saved_activations": true})", true },
    { "*", "flags", "M3", "only across tensor model parallel", R"({)" FULL1 R"("distribute_saved_activations": true, "tensor_model_parallel_size": 2})", false },
    { "*", "flags", "M3", "only application to full", R"({)" SEL R"("distribute_saved_activations": true, "tensor_model_parallel_size": 2})", true },
    { "*", "flags", "M3", "only application to full", R"({)" FULL1 R"("distribute_saved_activations": true, "tensor_model_parallel_size": 2})", false },
    { "*", "flags", "M3", "need to use a recompute method", R"({"recompute_granularity": "full", "recompute_num_layers": 1, "distribute_saved_activations": true, "tensor_model_parallel_size": 2})", true },
    { "*", "flags", "M3", "need to use a recompute method", R"({)" FULL1 R"("distribute_saved_activations": true, "tensor_model_parallel_size": 2})", false },
    { "*", "flags", "M4", "not yet supported for selective", R"({)" SEL R"("recompute_method": "uniform"})", true },
    { "*", "flags", "M4", "not yet supported for selective", R"({)" FULL1 R"(})", false },
    { "*", "flags", "M5", "Disabling sequence parallelism", R"({"sequence_parallel": true})", true },
    { "*", "flags", "M5", "Disabling sequence parallelism", R"({"sequence_parallel": true, "tensor_model_parallel_size": 2})", false },
    { "*", "flags", "M5", "True -> False", R"({"sequence_parallel": true})", true },
    { "*", "flags", "M5", "True -> False", R"({"sequence_parallel": false})", false },
    { "*", "flags", "M6", "False -> True", R"({"cpu_offloading_num_layers": 2})", true },
    { "*", "flags", "M6", "False -> True", R"({"cpu_offloading_num_layers": 0})", false },
    { "*", "flags", "M8", "ignoring --num-layers", R"({"hybrid_layer_pattern": "M*M*"})", true },
    { "*", "flags", "M8", "ignoring --num-layers", R"({"hybrid_layer_pattern": "M*M*M*M*"})", false },
    { "*", "flags", "M9", "has to be greater than zero", R"({)" MOE R"("moe_latent_size": 0})", true },
    { "*", "flags", "M9", "has to be greater than zero", R"({)" MOE R"("moe_latent_size": 256})", false },
    { "*", "flags", "M9", "applicable only for MoE models", R"({"moe_latent_size": 256})", true },
    { "*", "flags", "M9", "applicable only for MoE models", R"({)" MOE R"("moe_latent_size": 256})", false },
    // the pipeline split under Megatron-LM's validate_args
    { "*", "flags", "M12", "--decoder-first-pipeline-num-layers should not", R"({"hybrid_layer_pattern": "M*M*|M*M*", "pipeline_model_parallel_size": 2, "num_layers_in_first_pipeline_stage": 4})", true },
    { "*", "flags", "M12", "--decoder-first-pipeline-num-layers should not", R"({"hybrid_layer_pattern": "M*M*M*M*", "pipeline_model_parallel_size": 2, "num_layers_in_first_pipeline_stage": 4})", false },
    { "*", "flags", "M12", "--decoder-last-pipeline-num-layers should not", R"({"hybrid_layer_pattern": "M*M*|M*M*", "pipeline_model_parallel_size": 2, "num_layers_in_last_pipeline_stage": 4})", true },
    { "*", "flags", "M12", "--decoder-last-pipeline-num-layers should not", R"({"hybrid_layer_pattern": "M*M*M*M*", "pipeline_model_parallel_size": 2, "num_layers_in_last_pipeline_stage": 4})", false },
    { "*", "flags", "M12", "--pipeline-model-parallel-layout should not", R"({"hybrid_layer_pattern": "M*M*M*M*", "pipeline_model_parallel_size": 2, "pipeline_model_parallel_layout": "Etttt|ttttL"})", true },
    { "*", "flags", "M12", "--pipeline-model-parallel-layout should not", R"({"hybrid_layer_pattern": "M*M*M*M*", "pipeline_model_parallel_size": 2})", false },
    { "*", "flags", "M12", "--account-for-embedding-in-pipeline-split should", R"({"hybrid_layer_pattern": "M*M*M*M*", "account_for_embedding_in_pipeline_split": true})", true },
    { "*", "flags", "M12", "--account-for-embedding-in-pipeline-split should", R"({"hybrid_layer_pattern": "M*M*M*M*", "account_for_loss_in_pipeline_split": true})", false },
    { "*", "flags", "M12", "--account-for-loss-in-pipeline-split should", R"({"hybrid_layer_pattern": "M*M*M*M*", "account_for_loss_in_pipeline_split": true})", true },
    { "*", "flags", "M12", "--account-for-loss-in-pipeline-split should", R"({"account_for_loss_in_pipeline_split": true, "pipeline_model_parallel_size": 3})", false },
    { "*", "flags", "M10", "The length of pipeline_model_parallel_layout", R"({"pipeline_model_parallel_layout": "Etttt|ttt|tL", "pipeline_model_parallel_size": 2})", true },
    { "*", "flags", "M10", "The length of pipeline_model_parallel_layout", R"({"pipeline_model_parallel_layout": "Etttt|ttt|tL", "pipeline_model_parallel_size": 3})", false },
    { "*", "flags", "M11", "Number of layers should be divisible", R"({"pipeline_model_parallel_size": 3})", true },
    { "*", "flags", "M11", "Number of layers should be divisible", R"({"pipeline_model_parallel_size": 3, "account_for_embedding_in_pipeline_split": true})", false },
    { "*", "flags", "M11", "Number of layers should be divisible", R"({"pipeline_model_parallel_size": 3, "virtual_pipeline_model_parallel_size": 2})", false },
    // --- Megatron Bridge
    { "*", "bridge", "B8", "is not a Megatron Bridge", R"({"mixed_precision": "bf16_fp9_mixed"})", true },
    { "*", "bridge", "B8", "is not a Megatron Bridge", R"({"mixed_precision": "bf16_mixed"})", false },
    { "*", "bridge", "B8", "overwrites", R"({"mixed_precision": "bf16_with_fp8_current_scaling_mixed"})", true },
    { "*", "bridge", "B8", "overwrites", R"({"mixed_precision": "bf16_mixed", "fp8_recipe": "tensorwise"})", false },
    { "*", "bridge", "B4", "disable full recomputation", R"({)" EPO FULL1 R"("recompute_modules": []})", true },
    { "*", "bridge", "B4", "disable full recomputation", R"({)" EPO SEL R"("recompute_modules": []})", false },
    { "*", "bridge", "B4", "disable recomputation method", R"({)" EPO SEL R"("recompute_modules": [], "recompute_method": "uniform"})", true },
    { "*", "bridge", "B4", "disable recomputation method", R"({)" EPO SEL R"("recompute_modules": []})", false },
    { "*", "bridge", "B4", "recompute_num_layers must be None", R"({)" EPO SEL R"("recompute_modules": [], "recompute_num_layers": 1})", true },
    { "*", "bridge", "B4", "recompute_num_layers must be None", R"({)" EPO SEL R"("recompute_modules": []})", false },
    { "*", "bridge", "B4", "disable moe in recompute_modules", R"({)" EPO SEL R"("recompute_modules": ["moe"]})", true },
    { "*", "bridge", "B4", "disable moe in recompute_modules", R"({)" EPO SEL R"("recompute_modules": ["moe_act"]})", false },
    { "*", "bridge", "B2", "cuda_graph_impl='none'", R"({})", true },
    { "*", "bridge", "B2", "cuda_graph_impl='none'", R"({"cuda_graph_impl": "transformer_engine", "use_te_rng_tracker": true})", false },
    { "*", "bridge", "B2", "only for full-iteration", R"({"cuda_graph_impl": "local", "cuda_graph_modules": ["attn"], "use_te_rng_tracker": true})", true },
    { "*", "bridge", "B2", "only for full-iteration", R"({"cuda_graph_impl": "local", "cuda_graph_modules": ["full_iteration"], "use_te_rng_tracker": true})", false },
    { "*", "bridge", "B1", "True -> False", R"({"sequence_parallel": true})", true },
    { "*", "bridge", "B1", "True -> False", R"({"sequence_parallel": true, "tensor_model_parallel_size": 2})", false },
    { "*", "bridge", "B12", "None -> 1", R"({"num_moe_experts": 8, "expert_model_parallel_size": 2})", true },
    { "*", "bridge", "B12", "None -> 1", R"({"num_moe_experts": 8, "expert_model_parallel_size": 2, "expert_tensor_parallel_size": 2})", false },
    { "*", "json", "B12", "None -> 1", R"({"num_moe_experts": 8, "expert_model_parallel_size": 2})", false },
    { "*", "bridge", "B10", "does not match the number of layers", R"({"hybrid_layer_pattern": "M*M*"})", true },
    { "*", "bridge", "B10", "does not match the number of layers", R"({"hybrid_layer_pattern": "M*M*M*M*"})", false },
    { "*", "bridge", "B10", "None ->", R"({"num_layers": 0, "hybrid_layer_pattern": "M*M*"})", true },
    { "*", "bridge", "B10", "None ->", R"({"hybrid_layer_pattern": "M*M*M*M*"})", false },
    { "*", "bridge", "B3", "check_for_nan_in_loss", R"({"cuda_graph_impl": "full_iteration", "use_te_rng_tracker": true})", true },
    { "*", "bridge", "B3", "check_for_nan_in_loss", R"({"cuda_graph_impl": "full_iteration", "use_te_rng_tracker": true, "rerun_state_machine": {"check_for_nan_in_loss": false}})", false },
    { "*", "bridge", "B5", "RNG tracker", R"({"cuda_graph_impl": "transformer_engine"})", true },
    { "*", "bridge", "B5", "RNG tracker", R"({"cuda_graph_impl": "transformer_engine", "use_te_rng_tracker": true})", false },
    // --- ModelParallelConfig
    { "*", "json", "MP1", "without tensor parallelism", R"({"sequence_parallel": true})", true },
    { "*", "json", "MP1", "without tensor parallelism", R"({"sequence_parallel": true, "tensor_model_parallel_size": 2})", false },
    { "*", "bridge", "MP1", "without tensor parallelism", R"({"sequence_parallel": true})", false }, // B1 ran first
    { "*", "flags", "MP1", "without tensor parallelism", R"({"sequence_parallel": true})", false }, // M5 ran first
    { "*", "json", "MP2", "sequence parallelism must be used", R"({"num_moe_experts": 8, "expert_model_parallel_size": 2, "tensor_model_parallel_size": 2})", true },
    { "*", "json", "MP2", "sequence parallelism must be used", R"({"num_moe_experts": 8, "expert_model_parallel_size": 2, "tensor_model_parallel_size": 2, "sequence_parallel": true})", false },
    // --- TransformerConfig
    { "*", "json", "R39", "simultaneously", R"({"fp8": "e4m3", "fp4": "e2m1"})", true },
    { "*", "json", "R39", "simultaneously", R"({"fp4": "e2m1"})", false },
    { "*", "json", "R41", "add_bias_linear must also be True", R"({"bias_activation_fusion": true, "add_bias_linear": false})", true },
    { "*", "json", "R41", "add_bias_linear must also be True", R"({"bias_activation_fusion": true})", false },
    { "*", "json", "R38", "alltoall or flex", R"({"num_moe_experts": 8, "moe_shared_expert_intermediate_size": 512, "moe_shared_expert_overlap": true})", true },
    { "*", "json", "R38", "alltoall or flex", R"({"num_moe_experts": 8, "moe_shared_expert_intermediate_size": 512, "moe_shared_expert_overlap": true, "moe_token_dispatcher_type": "flex"})", false },
    { "*", "json", "R01", "less than", R"({"cpu_offloading": true, "cpu_offloading_num_layers": 8})", true },
    { "*", "json", "R01", "less than", R"({"cpu_offloading": true, "cpu_offloading_num_layers": 7})", false },
    { "*", "json", "R02", "Pipeline parallelism", R"({"cpu_offloading": true, "pipeline_model_parallel_size": 2})", true },
    { "*", "json", "R02", "Pipeline parallelism", R"({"cpu_offloading": true})", false },
    { "*", "json", "R03", "activation recomputation", R"({)" SEL R"("cpu_offloading": true})", true },
    { "*", "json", "R03", "activation recomputation", R"({"cpu_offloading": true})", false },
    { "*", "json", "R04", "granuarlity", R"({"recompute_granularity": "partial"})", true },
    { "*", "json", "R04", "granuarlity", R"({"recompute_granularity": "selective"})", false },
    { "*", "json", "R05", "must be \"block\" or \"uniform\".", R"({"recompute_granularity": "full", "recompute_method": "blocks", "recompute_num_layers": 1})", true },
    { "*", "json", "R05", "must be \"block\" or \"uniform\".", R"({"recompute_granularity": "full", "recompute_method": "block", "recompute_num_layers": 1})", false },
    { "*", "json", "R06", "so recompute_method must be", R"({"recompute_granularity": "full", "recompute_num_layers": 1})", true },
    { "*", "json", "R06", "so recompute_method must be", R"({)" SEL R"("recompute_modules": []})", false },
    { "*", "json", "R07", "num_layers_per_pipeline_rank", R"({"recompute_granularity": "full", "recompute_method": "uniform"})", true },
    { "*", "json", "R07", "num_layers_per_pipeline_rank", R"({)" FULL1 R"(})", false },
    { "*", "json", "R08", "selective recompute_num_layers must be None", R"({)" SEL R"("recompute_num_layers": 1})", true },
    { "*", "json", "R08", "selective recompute_num_layers must be None", R"({)" SEL R"("recompute_modules": []})", false },
    { "*", "json", "R09", "must be false when sequence parallel", R"({)" FULL1 R"("distribute_saved_activations": true, "sequence_parallel": true, "tensor_model_parallel_size": 2})", true },
    { "*", "json", "R09", "must be false when sequence parallel", R"({"distribute_saved_activations": true, "sequence_parallel": true, "tensor_model_parallel_size": 2})", false },
    { "*", "json", "R10", "None -> ['core_attn']", R"({})", true },
    { "*", "json", "R10", "None -> ['core_attn']", R"({"recompute_modules": []})", false },
    { "bridge-pin,guide", "json", "R11", "Invalid choices", R"({)" SEL R"("recompute_modules": ["mhc"]})", true },
    { "main", "json", "R11", "Invalid choices", R"({)" SEL R"("recompute_modules": ["mhc"], "enable_mhc_connections": true})", false },
    { "main", "json", "R11", "Invalid choices", R"({)" SEL R"("recompute_modules": ["gdn"]})", true },
    { "dev", "json", "R11", "Invalid choices", R"({)" SEL R"("recompute_modules": ["gdn"], "experimental_attention_variant": "gated_delta_net"})", false },
    { "dev", "json", "R11", "Invalid choices", R"({)" SEL R"("recompute_modules": ["gdp_qkv"]})", true },
    { "main", "json", "R11", "Invalid choices", R"({)" SEL R"("recompute_modules": ["gdp_qkv"]})", false },
    { "*", "json", "R11", "Invalid choices", R"({)" SEL R"("recompute_modules": []})", false },
    { "*", "json", "R11", "Invalid choices", R"({"recompute_modules": ["moe_layer"]})", false }, // not selective
    { "*", "json", "R12", "moe_grouped_gemm", R"({)" SEL R"("recompute_modules": ["moe_act"], "num_moe_experts": 8})", true },
    { "*", "json", "R12", "moe_grouped_gemm", R"({)" SEL MOE R"("recompute_modules": ["moe_act"]})", false },
    { "*", "json", "R13", "multi_latent_attention", R"({)" SEL R"("recompute_modules": ["mla_up_proj"]})", true },
    { "*", "json", "R13", "multi_latent_attention", R"({)" SEL R"("recompute_modules": ["mla_up_proj"], "multi_latent_attention": true})", false },
    { "bridge-pin,main", "json", "R14", "'gdn' or 'gdn2'", R"({)" SEL R"("recompute_modules": ["gdn_norm_out"]})", true },
    { "bridge-pin,main", "json", "R14", "'gdn' or 'gdn2'", R"({)" SEL R"("recompute_modules": ["gdn_norm_out"], "experimental_attention_variant": "gdn"})", false },
    { "guide,dev", "json", "R14", "='gated_delta_net'", R"({)" SEL R"("recompute_modules": ["gdn_norm_out"], "experimental_attention_variant": "gdn"})", true },
    { "guide,dev", "json", "R14", "='gated_delta_net'", R"({)" SEL R"("recompute_modules": ["gdn_norm_out"], "experimental_attention_variant": "gated_delta_net"})", false },
    { "dev", "json", "G1", "gdn in recompute_modules", R"({)" SEL R"("recompute_modules": ["gdn"], "experimental_attention_variant": "gdn"})", true },
    { "dev", "json", "G1", "gdn in recompute_modules", R"({)" SEL R"("recompute_modules": ["gdn"], "experimental_attention_variant": "gated_delta_net"})", false },
    { "dev", "json", "G2", "cannot be used together", R"({)" SEL R"("recompute_modules": ["gdn", "gdn_norm_out"], "experimental_attention_variant": "gated_delta_net"})", true },
    { "dev", "json", "G2", "cannot be used together", R"({)" SEL R"("recompute_modules": ["gdn"], "experimental_attention_variant": "gated_delta_net"})", false },
    { "*", "json", "R42", "must be a multiple of linear_num_key_heads", R"({"experimental_attention_variant": "gated_delta_net", "linear_num_value_heads": 24})", true },
    { "*", "json", "R42", "must be a multiple of linear_num_key_heads", R"({"experimental_attention_variant": "gated_delta_net", "linear_num_value_heads": 48})", false },
    { "*", "json", "R42", "must be a multiple of linear_num_key_heads", R"({"linear_num_value_heads": 24})", false },
    { "bridge-pin,guide,main", "json", "R42", "self.context_parallel_size=", R"({"experimental_attention_variant": "gated_delta_net", "tensor_model_parallel_size": 3})", true },
    { "bridge-pin,guide,main", "json", "R42", "self.context_parallel_size=", R"({"experimental_attention_variant": "gated_delta_net", "tensor_model_parallel_size": 2, "sequence_parallel": true})", false },
    { "*", "json", "R43", "requires add_bias_linear=False", R"({)" DSA R"("add_bias_linear": true})", true },
    { "*", "json", "R43", "requires add_bias_linear=False", R"({)" DSA R"(})", false },
    { "*", "json", "R44", "dsa_indexer_topk_freq must be positive", R"({)" DSA R"("dsa_indexer_topk_freq": 0})", true },
    { "*", "json", "R44", "dsa_indexer_topk_freq must be positive", R"({)" DSA R"("dsa_indexer_topk_freq": 2})", false },
    { "*", "json", "R44", "dsa_indexer_skip_topk_offset must be non-negative", R"({)" DSA R"("dsa_indexer_skip_topk_offset": -1})", true },
    { "*", "json", "R44", "dsa_indexer_skip_topk_offset must be non-negative", R"({)" DSA R"("dsa_indexer_skip_topk_offset": 0})", false },
    { "*", "json", "R15", "core_attn recompute is really needed", R"({)" SEL R"(})", true },
    { "*", "json", "R15", "core_attn recompute is really needed", R"({)" SEL R"("recompute_modules": ["mlp"]})", false },
    { "*", "json", "R16", "shared_experts recompute cannot", R"({)" SEL MOE R"("recompute_modules": ["shared_experts"], "moe_shared_expert_intermediate_size": 512, "moe_shared_expert_overlap": true, "moe_token_dispatcher_type": "alltoall"})", true },
    { "*", "json", "R16", "shared_experts recompute cannot", R"({)" SEL MOE R"("recompute_modules": ["shared_experts"], "moe_shared_expert_intermediate_size": 512, "moe_token_dispatcher_type": "alltoall"})", false },
    { "*", "json", "R17", "Delayed scaling", R"({)" SEL MOE R"("recompute_modules": ["moe_act"], "fp8": "e4m3"})", true },
    { "*", "json", "R17", "Delayed scaling", R"({)" SEL MOE R"("recompute_modules": ["moe_act"], "fp8": "e4m3", "fp8_recipe": "tensorwise"})", false },
    { "*", "json", "R18", "transformer-engine>=2.6.0dev0", R"({)" SEL R"("recompute_modules": ["layernorm"], "fp8": "hybrid", "fp8_recipe": "tensorwise", "te_version": "2.5.0"})", true },
    { "*", "json", "R18", "transformer-engine>=2.6.0dev0", R"({)" SEL R"("recompute_modules": ["layernorm"], "fp8": "hybrid", "fp8_recipe": "tensorwise", "te_version": "2.6.0.dev0+abc"})", false },
    { "*", "json", "R19", "is deprecated", R"({"moe_layer_recompute": true, "num_moe_experts": 8})", true },
    { "*", "json", "R19", "is deprecated", R"({"num_moe_experts": 8})", false },
    { "*", "json", "R19", "with full recompute granularity", R"({)" FULL1 R"("moe_layer_recompute": true, "num_moe_experts": 8})", true },
    { "*", "json", "R19", "with full recompute granularity", R"({)" SEL R"("moe_layer_recompute": true, "num_moe_experts": 8})", false },
    { "*", "json", "R19", "-> 'selective', recompute_modules", R"({"moe_layer_recompute": true, "num_moe_experts": 8})", true },
    { "*", "json", "R19", "-> 'selective', recompute_modules", R"({)" FULL1 R"("moe_layer_recompute": true, "num_moe_experts": 8})", false },
    { "main", "json", "R20", "requires enable_mhc_connections", R"({)" SEL R"("recompute_modules": ["mhc"]})", true },
    { "main", "json", "R20", "requires enable_mhc_connections", R"({)" SEL R"("recompute_modules": ["mhc"], "enable_mhc_connections": true})", false },
    { "dev", "json", "R20", "requires enable_hyper_connections", R"({)" SEL R"("recompute_modules": ["mhc"], "enable_mhc_connections": true})", true },
    { "dev", "json", "R20", "requires enable_hyper_connections", R"({)" SEL R"("recompute_modules": ["mhc"], "enable_hyper_connections": true})", false },
    { "main,dev", "json", "R20", "'mhc' and 'mlp'", R"({)" SEL R"("recompute_modules": ["mhc", "mlp"], "enable_mhc_connections": true, "enable_hyper_connections": true})", true },
    { "main,dev", "json", "R20", "'mhc' and 'mlp'", R"({)" SEL R"("recompute_modules": ["mhc"], "enable_mhc_connections": true, "enable_hyper_connections": true})", false },
    { "main", "json", "R20", "positive integer", R"({)" SEL R"("recompute_modules": ["mhc"], "enable_mhc_connections": true, "mhc_recompute_layer_num": 0})", true },
    { "main", "json", "R20", "positive integer", R"({)" SEL R"("recompute_modules": ["mhc"], "enable_mhc_connections": true, "mhc_recompute_layer_num": 1})", false },
    { "main", "json", "R20", "fine_grained_activation_offloading is not yet", R"({)" SEL R"("recompute_modules": ["mhc"], "enable_mhc_connections": true, "fine_grained_activation_offloading": true})", true },
    { "main", "json", "R20", "fine_grained_activation_offloading is not yet", R"({)" SEL R"("recompute_modules": ["mhc"], "enable_mhc_connections": true})", false },
    { "dev", "json", "G3", "attn_norm / mlp_norm", R"({)" SEL R"("recompute_modules": ["mhc"], "enable_hyper_connections": true, "fine_grained_activation_offloading": true, "offload_modules": ["attn_norm"]})", true },
    { "dev", "json", "G3", "attn_norm / mlp_norm", R"({)" SEL R"("recompute_modules": ["mhc"], "enable_hyper_connections": true, "fine_grained_activation_offloading": true, "offload_modules": ["core_attn"]})", false },
    { "main", "json", "R21", "HyperConnections are enabled", R"({"enable_mhc_connections": true})", true },
    { "main", "json", "R21", "HyperConnections are enabled", R"({)" SEL R"("recompute_modules": ["mhc"], "enable_mhc_connections": true})", false },
    { "bridge-pin,guide,dev", "json", "R21", "HyperConnections are enabled", R"({"enable_mhc_connections": true})", false },
    { "main", "json", "R22", "not yet compatible with full", R"({)" FULL1 R"("enable_mhc_connections": true})", true },
    { "bridge-pin,guide,dev", "json", "R22", "not yet compatible with full", R"({)" FULL1 R"("enable_mhc_connections": true})", false },
    { "main", "json", "R22", "not yet compatible with full", R"({)" SEL R"("recompute_modules": ["mhc"], "enable_mhc_connections": true})", false },
    { "*", "json", "R23", "cannot be enabled with cpu_offloading", R"({"fine_grained_activation_offloading": true, "cpu_offloading": true})", true },
    { "*", "json", "R23", "cannot be enabled with cpu_offloading", R"({"fine_grained_activation_offloading": true})", false },
    { "main", "json", "R24", "gdp_qkv cannot be set", R"({)" SEL R"("recompute_modules": ["gdp_in_proj"], "fine_grained_activation_offloading": true, "offload_modules": ["gdp_qkv"]})", true },
    { "main", "json", "R24", "gdp_qkv cannot be set", R"({)" SEL R"("recompute_modules": ["gdp_in_proj"], "fine_grained_activation_offloading": true, "offload_modules": ["moe_act"]})", false },
    { "*", "json", "R24b", "while recomputing the entire MoE", R"({)" SEL R"("num_moe_experts": 8, "recompute_modules": ["moe"], "fine_grained_activation_offloading": true, "offload_modules": ["expert_fc1"]})", true },
    { "*", "json", "R24b", "while recomputing the entire MoE", R"({)" SEL R"("num_moe_experts": 8, "recompute_modules": ["moe"], "fine_grained_activation_offloading": true, "offload_modules": ["attn_norm"]})", false },
    { "*", "json", "R25", "Do not use enable_cuda_graph", R"({"enable_cuda_graph": true, "cuda_graph_impl": "local"})", true },
    { "*", "json", "R25", "Do not use enable_cuda_graph", R"({"enable_cuda_graph": true})", false },
    { "*", "json", "R25", "at the same time", R"({"enable_cuda_graph": true, "external_cuda_graph": true})", true },
    { "*", "json", "R25", "at the same time", R"({"external_cuda_graph": true})", false },
    { "*", "json", "R25", "use cuda_graph_impl=local", R"({"enable_cuda_graph": true})", true },
    { "*", "json", "R25", "use cuda_graph_impl=local", R"({"cuda_graph_impl": "local"})", false },
    { "*", "json", "R25", "'none' -> 'local'", R"({"enable_cuda_graph": true})", true },
    { "*", "json", "R25", "'none' -> 'local'", R"({"enable_cuda_graph": true, "cuda_graph_impl": "local"})", false },
    { "*", "json", "R25", "use cuda_graph_impl=transformer_engine", R"({"external_cuda_graph": true})", true },
    { "*", "json", "R25", "use cuda_graph_impl=transformer_engine", R"({"cuda_graph_impl": "transformer_engine"})", false },
    { "*", "json", "R25", "'none' -> 'transformer_engine'", R"({"external_cuda_graph": true})", true },
    { "*", "json", "R25", "'none' -> 'transformer_engine'", R"({"external_cuda_graph": true, "cuda_graph_impl": "transformer_engine"})", false },
    { "*", "json", "R26", "cannot be set together", R"({"cuda_graph_scope": ["attn"], "cuda_graph_modules": ["attn"]})", true },
    { "*", "json", "R26", "cannot be set together", R"({"cuda_graph_scope": ["attn"]})", false },
    { "*", "json", "R26", "from the deprecated cuda_graph_scope", R"({"cuda_graph_scope": ["attn"]})", true },
    { "*", "json", "R26", "from the deprecated cuda_graph_scope", R"({"cuda_graph_modules": ["attn"]})", false },
    { "*", "json", "R26", "full scope is deprecated", R"({"cuda_graph_modules": ["full"]})", true },
    { "*", "json", "R26", "full scope is deprecated", R"({})", false },
    { "*", "json", "R26", " -> []", R"({})", true },
    { "*", "json", "R26", " -> []", R"({"cuda_graph_modules": []})", false },
    { "*", "json", "R26", "'full_iteration' is deprecated", R"({"cuda_graph_modules": ["full_iteration"]})", true },
    { "*", "json", "R26", "'full_iteration' is deprecated", R"({"cuda_graph_impl": "full_iteration"})", false },
    { "*", "json", "R26", "-> 'full_iteration', cuda_graph_modules", R"({"cuda_graph_modules": ["full_iteration"]})", true },
    { "*", "json", "R26", "-> 'full_iteration', cuda_graph_modules", R"({"cuda_graph_modules": ["attn"]})", false },
    { "*", "json", "R27", "must be empty when", R"({"cuda_graph_impl": "full_iteration", "cuda_graph_modules": ["attn"]})", true },
    { "*", "json", "R27", "must be empty when", R"({"cuda_graph_impl": "full_iteration", "cuda_graph_modules": []})", false },
    { "*", "json", "R28", "CUDA graphs not supported with CPU", R"({"cuda_graph_impl": "transformer_engine", "cpu_offloading": true})", true },
    { "*", "json", "R28", "CUDA graphs not supported with CPU", R"({"cuda_graph_impl": "full_iteration", "cpu_offloading": true})", false },
    { "*", "json", "R29", "captures moe_router and moe_preprocess", R"({"cuda_graph_impl": "local", "cuda_graph_modules": ["moe_router"]})", true },
    { "*", "json", "R29", "captures moe_router and moe_preprocess", R"({"cuda_graph_impl": "local", "cuda_graph_modules": ["moe_router", "moe_preprocess"]})", false },
    { "*", "json", "R30", "full iteration CUDA graph", R"({)" FULL1 R"("cuda_graph_impl": "transformer_engine"})", true },
    { "*", "json", "R30", "full iteration CUDA graph", R"({)" FULL1 R"("cuda_graph_impl": "full_iteration"})", false },
    { "*", "json", "R31", "moe_router CUDA graph", R"({)" SEL R"("num_moe_experts": 8, "recompute_modules": ["moe"], "cuda_graph_impl": "transformer_engine", "cuda_graph_modules": ["moe_router"]})", true },
    { "*", "json", "R31", "moe_router CUDA graph", R"({)" SEL R"("num_moe_experts": 8, "recompute_modules": ["moe"], "cuda_graph_impl": "transformer_engine", "cuda_graph_modules": ["attn"]})", false },
    { "*", "json", "R32", "attention dropout", R"({)" SEL R"("recompute_modules": ["core_attn"], "cuda_graph_impl": "transformer_engine", "cuda_graph_modules": ["attn"]})", true },
    { "*", "json", "R32", "attention dropout", R"({)" SEL R"("recompute_modules": ["core_attn"], "cuda_graph_impl": "transformer_engine", "cuda_graph_modules": ["attn"], "attention_dropout": 0.0})", false },
    { "*", "json", "R33", "hidden dropout", R"({)" SEL R"("recompute_modules": ["mlp"], "cuda_graph_impl": "transformer_engine", "cuda_graph_modules": ["mlp"]})", true },
    { "*", "json", "R33", "hidden dropout", R"({)" SEL R"("recompute_modules": ["mlp"], "cuda_graph_impl": "transformer_engine", "cuda_graph_modules": ["attn"]})", false },
    { "*", "json", "R34", "moe_input_jitter_eps", R"({)" SEL R"("num_moe_experts": 8, "recompute_modules": ["moe"], "cuda_graph_impl": "transformer_engine", "cuda_graph_modules": ["moe"], "hidden_dropout": 0.0, "moe_input_jitter_eps": 0.01})", true },
    { "*", "json", "R34", "moe_input_jitter_eps", R"({)" SEL R"("num_moe_experts": 8, "recompute_modules": ["moe"], "cuda_graph_impl": "transformer_engine", "cuda_graph_modules": ["moe"], "hidden_dropout": 0.0})", false },
    { "dev", "json", "G4", "cuda_graph_impl='local'", R"({)" SEL R"("recompute_modules": ["mhc"], "enable_hyper_connections": true, "cuda_graph_impl": "local"})", true },
    { "dev", "json", "G4", "cuda_graph_impl='local'", R"({)" SEL R"("recompute_modules": ["mhc"], "enable_hyper_connections": true, "cuda_graph_impl": "transformer_engine"})", false },
    { "dev", "json", "G5", "needs attention_dropout=0", R"({)" SEL R"("recompute_modules": ["mhc"], "enable_hyper_connections": true, "cuda_graph_impl": "full_iteration"})", true },
    { "dev", "json", "G5", "needs attention_dropout=0", R"({)" SEL NODROP R"("recompute_modules": ["mhc"], "enable_hyper_connections": true, "cuda_graph_impl": "full_iteration"})", false },
    { "dev", "json", "G6", "supports only cuda_graph_impl", R"({)" EPO SEL R"("recompute_modules": ["mhc"], "enable_hyper_connections": true, "cuda_graph_impl": "transformer_engine", "cuda_graph_modules": ["attn", "mamba"]})", true },
    { "dev", "json", "G6", "supports only cuda_graph_impl", R"({)" EPO SEL R"("recompute_modules": ["mhc"], "enable_hyper_connections": true, "cuda_graph_impl": "transformer_engine", "cuda_graph_modules": ["attn"]})", false },
    { "*", "json", "R36", "virtual_pipeline_model_parallel_size must be specified", R"({)" EPO R"("recompute_modules": [], "pipeline_model_parallel_size": 2})", true },
    { "*", "json", "R36", "virtual_pipeline_model_parallel_size must be specified", R"({)" EPO R"("recompute_modules": [], "pipeline_model_parallel_size": 2, "virtual_pipeline_model_parallel_size": 2})", false },
    { "*", "json", "R36", "only supported with expert model parallelism", R"({)" EPO R"("recompute_modules": [], "expert_model_parallel_size": 1})", true },
    { "*", "json", "R36", "only supported with expert model parallelism", R"({)" EPO R"("recompute_modules": []})", false },
    { "*", "json", "R36", "alltoall/flex token dispatcher", R"({)" EPO R"("recompute_modules": [], "moe_token_dispatcher_type": "allgather"})", true },
    { "*", "json", "R36", "alltoall/flex token dispatcher", R"({)" EPO R"("recompute_modules": [], "moe_token_dispatcher_type": "flex"})", false },
    { "bridge-pin,guide,main", "json", "R36", "disable full recomputation", R"({)" EPO FULL1 R"("recompute_modules": []})", true },
    { "dev", "json", "R36", "disable full recomputation", R"({)" EPO FULL1 R"("recompute_modules": []})", false },
    { "bridge-pin,guide,main", "json", "R36", "disable full recomputation", R"({)" EPO SEL R"("recompute_modules": []})", false },
    { "dev", "json", "G7", "distribute_saved_activations=False", R"({)" EPO FULL1 NODROP R"("recompute_modules": [], "distribute_saved_activations": true, "tensor_model_parallel_size": 2})", true },
    { "dev", "json", "G7", "distribute_saved_activations=False", R"({)" EPO FULL1 NODROP R"("recompute_modules": [], "tensor_model_parallel_size": 2})", false },
    { "dev", "json", "G7", "requires recompute_num_layers=1", R"({)" EPO NODROP R"("recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 2, "mtp_num_layers": 1, "recompute_modules": []})", true },
    { "dev", "json", "G7", "requires recompute_num_layers=1", R"({)" EPO FULL1 NODROP R"("mtp_num_layers": 1, "recompute_modules": []})", false },
    { "dev", "json", "G7", "requires attention_dropout=0", R"({)" EPO FULL1 R"("recompute_modules": []})", true },
    { "dev", "json", "G7", "requires attention_dropout=0", R"({)" EPO FULL1 NODROP R"("recompute_modules": []})", false },
    { "dev", "json", "G7", "fp8 delayed scaling", R"({)" EPO FULL1 NODROP R"("recompute_modules": [], "fp8": "e4m3"})", true },
    { "dev", "json", "G7", "fp8 delayed scaling", R"({)" EPO FULL1 NODROP R"("recompute_modules": [], "fp8": "e4m3", "fp8_recipe": "tensorwise"})", false },
    { "*", "json", "R36", "disable recomputation method", R"({)" EPO SEL R"("recompute_modules": [], "recompute_method": "uniform"})", true },
    { "dev", "json", "R36", "disable recomputation method", R"({)" EPO FULL1 NODROP R"("recompute_modules": []})", false },
    { "*", "json", "R36", "recompute_num_layers must be None", R"({)" EPO SEL R"("recompute_modules": [], "recompute_num_layers": 1})", true },
    { "dev", "json", "R36", "recompute_num_layers must be None", R"({)" EPO FULL1 NODROP R"("recompute_modules": []})", false },
    { "*", "json", "R36", "disable moe in recompute_modules", R"({)" EPO SEL R"("recompute_modules": ["moe"]})", true },
    { "*", "json", "R36", "disable moe in recompute_modules", R"({)" EPO SEL R"("recompute_modules": ["moe_act"]})", false },
    { "*", "json", "R36", "bf16 or fp16 model", R"({)" EPO R"("recompute_modules": [], "bf16": false})", true },
    { "*", "json", "R36", "bf16 or fp16 model", R"({)" EPO R"("recompute_modules": [], "bf16": false, "fp16": true})", false },
    { "*", "json", "R36", "disable moe_shared_expert_overlap", R"({)" EPO R"("recompute_modules": [], "moe_shared_expert_intermediate_size": 512, "moe_shared_expert_overlap": true})", true },
    { "*", "json", "R36", "disable moe_shared_expert_overlap", R"({)" EPO R"("recompute_modules": [], "moe_shared_expert_intermediate_size": 512})", false },
    { "*", "json", "R36", "MTP supports at most one layer", R"({)" EPO R"("recompute_modules": [], "mtp_num_layers": 2})", true },
    { "*", "json", "R36", "MTP supports at most one layer", R"({)" EPO R"("recompute_modules": [], "mtp_num_layers": 1})", false },
    { "*", "json", "R36", "CUDA graph scope on moe and mlp", R"({)" EPO R"("recompute_modules": [], "cuda_graph_impl": "transformer_engine", "cuda_graph_modules": ["moe"]})", true },
    { "*", "json", "R36", "CUDA graph scope on moe and mlp", R"({)" EPO R"("recompute_modules": [], "cuda_graph_impl": "transformer_engine", "cuda_graph_modules": ["attn"]})", false },
    { "*", "json", "R37", "must be enabled when enabling delay_wgrad", R"({"delay_wgrad_compute": true})", true },
    { "*", "json", "R37", "must be enabled when enabling delay_wgrad", R"({)" EPO R"("recompute_modules": [], "delay_wgrad_compute": true})", false },
    // --- build/run time
    // --- the pipeline split (TransformerConfig.__post_init__, PipelineParallelLayerLayout)
    { "*", "json", "R45", "cannot beset at the same time", R"({"pipeline_model_parallel_size": 2, "num_layers_in_first_pipeline_stage": 3, "account_for_loss_in_pipeline_split": true})", true },
    { "*", "json", "R45", "cannot beset at the same time", R"({"pipeline_model_parallel_size": 2, "num_layers_in_first_pipeline_stage": 3})", false },
    { "*", "json", "R46", "cannot be set with other pipeline layout arguments", R"({"pipeline_model_parallel_layout": "Etttt|ttttL", "pipeline_model_parallel_size": 2, "account_for_embedding_in_pipeline_split": true})", true },
    { "*", "bridge", "R46", "cannot be set with other pipeline layout arguments", R"({"pipeline_model_parallel_layout": "Etttt|ttttL", "pipeline_model_parallel_size": 2, "num_layers_in_last_pipeline_stage": 4})", true },
    { "*", "json", "R46", "cannot be set with other pipeline layout arguments", R"({"pipeline_model_parallel_layout": "Etttt|ttttL", "pipeline_model_parallel_size": 2})", false },
    { "*", "json", "R47", "(len(layout)=", R"({"pipeline_model_parallel_layout": "Etttt|ttt|tL", "pipeline_model_parallel_size": 2})", true },
    { "*", "json", "R47", "(len(layout)=", R"({"pipeline_model_parallel_layout": "Etttt|ttt|tL", "pipeline_model_parallel_size": 3})", false },
    { "*", "flags", "R47", "(len(layout)=", R"({"pipeline_model_parallel_layout": "Etttt|ttt|tL", "pipeline_model_parallel_size": 2})", false }, // M10 first
    { "*", "json", "R48", "conflicts with pipeline_model_parallel_layout", R"({"pipeline_model_parallel_layout": "Ett|tt|tt|ttL", "pipeline_model_parallel_size": 2, "virtual_pipeline_model_parallel_size": 3})", true },
    { "*", "json", "R48", "conflicts with pipeline_model_parallel_layout", R"({"pipeline_model_parallel_layout": "Ett|tt|tt|ttL", "pipeline_model_parallel_size": 2, "virtual_pipeline_model_parallel_size": 2})", false },
    { "*", "json", "R48", "None -> ", R"({"pipeline_model_parallel_layout": "Ett|tt|tt|ttL", "pipeline_model_parallel_size": 2})", true },
    { "*", "json", "R48", "None -> ", R"({"pipeline_model_parallel_layout": "Etttt|ttttL", "pipeline_model_parallel_size": 2})", false },
    { "*", "json", "R49", "The first layer must be embedding", R"({"pipeline_model_parallel_layout": "tEttt|ttttL", "pipeline_model_parallel_size": 2})", true },
    { "*", "json", "R49", "The first layer must be embedding", R"({"pipeline_model_parallel_layout": "Etttt|ttttL", "pipeline_model_parallel_size": 2})", false },
    { "*", "json", "R49", "The last layer must be loss", R"({"pipeline_model_parallel_layout": "Etttt|tttLt", "pipeline_model_parallel_size": 2})", true },
    { "*", "json", "R49", "The last layer must be loss", R"({"pipeline_model_parallel_layout": "Etttt|ttttL", "pipeline_model_parallel_size": 2})", false },
    { "*", "json", "R49", "Embedding must be specified exactly once", R"({"pipeline_model_parallel_layout": "EEtttt|ttttL", "pipeline_model_parallel_size": 2})", true },
    { "*", "json", "R49", "Embedding must be specified exactly once", R"({"pipeline_model_parallel_layout": "Etttt|ttttL", "pipeline_model_parallel_size": 2})", false },
    { "*", "json", "R49", "Loss must be specified exactly once", R"({"pipeline_model_parallel_layout": "Etttt|ttLttL", "pipeline_model_parallel_size": 2})", true },
    { "*", "json", "R49", "Loss must be specified exactly once", R"({"pipeline_model_parallel_layout": "Etttt|ttttL", "pipeline_model_parallel_size": 2})", false },
    { "*", "json", "R49", "must match num_layers", R"({"pipeline_model_parallel_layout": "Ettt|ttttL", "pipeline_model_parallel_size": 2})", true },
    { "*", "json", "R49", "must match num_layers", R"({"pipeline_model_parallel_layout": "Et*4|(t)*4,L", "pipeline_model_parallel_size": 2})", false },
    { "*", "json", "R49", "Number of mtp layers in layout", R"({"pipeline_model_parallel_layout": "Etttt|ttttmL", "pipeline_model_parallel_size": 2})", true },
    { "*", "json", "R49", "Number of mtp layers in layout", R"({"pipeline_model_parallel_layout": "Etttt|ttttmL", "pipeline_model_parallel_size": 2, "mtp_num_layers": 1})", false },
    { "*", "json", "R49", "decoder layers must be placed before MTP", R"({"pipeline_model_parallel_layout": "Etttt|tttmtL", "pipeline_model_parallel_size": 2, "mtp_num_layers": 1})", true },
    { "*", "json", "R49", "decoder layers must be placed before MTP", R"({"pipeline_model_parallel_layout": "Etttt|ttttmL", "pipeline_model_parallel_size": 2, "mtp_num_layers": 1})", false },
    { "*", "json", "R49", "MTP should be always in the last", R"({"pipeline_model_parallel_layout": "Ettt|tmt|tt|tL", "pipeline_model_parallel_size": 2, "mtp_num_layers": 1})", true },
    { "*", "json", "R49", "MTP should be always in the last", R"({"pipeline_model_parallel_layout": "Ettt|ttt|tt|mL", "pipeline_model_parallel_size": 2, "mtp_num_layers": 1})", false },
    { "*", "json", "R49", "must be in the same one virtual pipeline stage", R"({"pipeline_model_parallel_layout": "Ettt|ttt|tm|tmL", "pipeline_model_parallel_size": 2, "mtp_num_layers": 2})", true },
    { "*", "json", "R49", "must be in the same one virtual pipeline stage", R"({"pipeline_model_parallel_layout": "Ettt|ttt|tt|mmL", "pipeline_model_parallel_size": 2, "mtp_num_layers": 2})", false },
    { "*", "json", "R50", "num_layers_in_first_pipeline_stage must be larger", R"({"pipeline_model_parallel_size": 2, "num_layers_in_first_pipeline_stage": 0})", true },
    { "*", "json", "R50", "num_layers_in_first_pipeline_stage must be larger", R"({"pipeline_model_parallel_size": 2, "num_layers_in_first_pipeline_stage": 4})", false },
    { "*", "json", "R50", "at first stage", R"({"pipeline_model_parallel_size": 2, "virtual_pipeline_model_parallel_size": 2, "num_layers_in_first_pipeline_stage": 3})", true },
    { "*", "json", "R50", "at first stage", R"({"pipeline_model_parallel_size": 2, "virtual_pipeline_model_parallel_size": 2, "num_layers_in_first_pipeline_stage": 2})", false },
    { "*", "json", "R50", "num_layers_in_last_pipeline_stage must be larger", R"({"pipeline_model_parallel_size": 2, "num_layers_in_last_pipeline_stage": -1})", true },
    { "*", "json", "R50", "num_layers_in_last_pipeline_stage must be larger", R"({"pipeline_model_parallel_size": 2, "num_layers_in_last_pipeline_stage": 4})", false },
    { "*", "json", "R50", "at last stage", R"({"pipeline_model_parallel_size": 2, "virtual_pipeline_model_parallel_size": 2, "num_layers_in_last_pipeline_stage": 3})", true },
    { "*", "json", "R50", "at last stage", R"({"pipeline_model_parallel_size": 2, "virtual_pipeline_model_parallel_size": 2, "num_layers_in_last_pipeline_stage": 2})", false },
    { "*", "json", "R50", "Mismatch:", R"({"pipeline_model_parallel_size": 2, "num_layers_in_first_pipeline_stage": 3, "num_layers_in_last_pipeline_stage": 3})", true },
    { "*", "json", "R50", "Mismatch:", R"({"pipeline_model_parallel_size": 2, "num_layers_in_first_pipeline_stage": 4, "num_layers_in_last_pipeline_stage": 4})", false },
    { "*", "json", "R50", "at middle stage", R"({"pipeline_model_parallel_size": 4, "num_layers_in_first_pipeline_stage": 3})", true },
    { "*", "json", "R50", "at middle stage", R"({"pipeline_model_parallel_size": 4, "num_layers_in_first_pipeline_stage": 2})", false },
    { "*", "json", "R50", "on each middle pipeline rank", R"({"pipeline_model_parallel_size": 4, "virtual_pipeline_model_parallel_size": 2, "num_layers_in_first_pipeline_stage": 4, "num_layers_in_last_pipeline_stage": 2})", true },
    { "*", "json", "R50", "on each middle pipeline rank", R"({"pipeline_model_parallel_size": 4, "virtual_pipeline_model_parallel_size": 2, "num_layers_in_first_pipeline_stage": 2, "num_layers_in_last_pipeline_stage": 2})", false },
    { "*", "json", "R51", "number of middle layers", R"({"pipeline_model_parallel_size": 4, "account_for_embedding_in_pipeline_split": true})", true },
    { "*", "json", "R51", "number of middle layers", R"({"pipeline_model_parallel_size": 3, "account_for_embedding_in_pipeline_split": true})", false },
    { "*", "json", "R51", "must be divisibleby pipeline_model_parallel_size", R"({"pipeline_model_parallel_size": 4, "virtual_pipeline_model_parallel_size": 2, "account_for_embedding_in_pipeline_split": true})", true },
    { "*", "json", "R51", "must be divisibleby pipeline_model_parallel_size", R"({"pipeline_model_parallel_size": 3, "virtual_pipeline_model_parallel_size": 3, "account_for_embedding_in_pipeline_split": true})", false },
    { "*", "json", "R51", "on each pipeline rank", R"({"pipeline_model_parallel_size": 3, "virtual_pipeline_model_parallel_size": 2, "account_for_embedding_in_pipeline_split": true})", true },
    { "*", "json", "R51", "on each pipeline rank", R"({"pipeline_model_parallel_size": 3, "virtual_pipeline_model_parallel_size": 3, "account_for_embedding_in_pipeline_split": true})", false },
    { "*", "json", "RT1", "'layernorm' in recompute_modules has no effect", R"({)" SEL R"("recompute_modules": ["layernorm"]})", true },
    { "*", "json", "RT1", "'layernorm' in recompute_modules has no effect", R"({)" SEL R"("recompute_modules": ["layernorm"], "multi_latent_attention": true})", false },
    { "*", "json", "RT2", "shared expert overlap", R"({)" SEL MOE R"("recompute_modules": ["layernorm"], "moe_shared_expert_intermediate_size": 512, "moe_shared_expert_overlap": true, "moe_token_dispatcher_type": "alltoall", "cuda_graph_impl": "transformer_engine", "cuda_graph_modules": ["moe_router"]})", true },
    { "*", "json", "RT2", "shared expert overlap", R"({)" SEL MOE R"("recompute_modules": ["layernorm"], "moe_shared_expert_intermediate_size": 512, "moe_shared_expert_overlap": true, "moe_token_dispatcher_type": "alltoall", "cuda_graph_impl": "local", "cuda_graph_modules": ["moe_router"]})", false },
    { "*", "json", "RT3", "cudagraph will alltoall", R"({)" SEL MOE R"("recompute_modules": ["layernorm"], "cuda_graph_impl": "transformer_engine", "cuda_graph_modules": ["moe_router"]})", true },
    { "*", "json", "RT3", "cudagraph will alltoall", R"({)" SEL MOE R"("recompute_modules": ["layernorm"], "cuda_graph_impl": "transformer_engine", "cuda_graph_modules": ["moe_router", "moe_preprocess"], "moe_token_dispatcher_type": "alltoall"})", false },
    // Latent MoE lets the norm recompute stand with the preprocess graph whatever the dispatcher (TL:479-481).
    { "*", "json", "RT3", "cudagraph will alltoall", R"({)" SEL MOE R"("recompute_modules": ["layernorm"], "cuda_graph_impl": "transformer_engine", "cuda_graph_modules": ["moe_router", "moe_preprocess"], "moe_latent_size": 256})", false },
    { "*", "json", "RT3", "cudagraph will alltoall", R"({)" SEL MOE R"("recompute_modules": ["layernorm"], "cuda_graph_impl": "transformer_engine", "cuda_graph_modules": ["moe_router"], "moe_latent_size": 256})", true },
    { "*", "json", "RT4", "every layer's MLP is MoE", R"({)" SEL MOE R"("recompute_modules": ["mlp"]})", true },
    { "*", "json", "RT4", "every layer's MLP is MoE", R"({)" SEL MOE R"("recompute_modules": ["mlp"], "moe_layer_freq": [0, 1, 1, 1, 1, 1, 1, 1]})", false },
    { "*", "json", "RT4", "acts only on the", R"({)" SEL MOE R"("recompute_modules": ["mlp"], "moe_layer_freq": [0, 1, 1, 1, 1, 1, 1, 1]})", true },
    { "*", "json", "RT4", "acts only on the", R"({)" SEL MOE R"("recompute_modules": ["mlp"]})", false },
    { "*", "json", "RT5", "MoELayer-level 'moe' checkpoint is off", R"({)" SEL R"("num_moe_experts": 8, "recompute_modules": ["moe"], "cuda_graph_impl": "local", "cuda_graph_modules": ["attn"]})", true },
    { "*", "json", "RT5", "MoELayer-level 'moe' checkpoint is off", R"({)" SEL R"("num_moe_experts": 8, "recompute_modules": ["moe"], "cuda_graph_impl": "transformer_engine", "cuda_graph_modules": ["attn"]})", false },
    { "*", "json", "RT6", "has no shared expert", R"({)" SEL R"("num_moe_experts": 8, "recompute_modules": ["shared_experts"]})", true },
    { "*", "json", "RT6", "has no shared expert", R"({)" SEL R"("num_moe_experts": 8, "recompute_modules": ["shared_experts"], "moe_shared_expert_intermediate_size": 512})", false },
    { "*", "json", "RT7", "AbsorbedMLA", R"({)" SEL R"("recompute_modules": ["mla_up_proj"], "multi_latent_attention": true, "experimental_attention_variant": "dsa", "fp8": "e4m3"})", true },
    { "*", "json", "RT7", "AbsorbedMLA", R"({)" SEL R"("recompute_modules": ["mla_up_proj"], "multi_latent_attention": true, "experimental_attention_variant": "dsa"})", false },
    { "*", "json", "RT8", "must be 1 for MTP", R"({"recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 2, "mtp_num_layers": 1})", true },
    { "*", "json", "RT8", "must be 1 for MTP", R"({)" FULL1 R"("mtp_num_layers": 1})", false },
    { "*", "json", "RT9", "not supported for MTP yet", R"({"recompute_granularity": "full", "recompute_method": "block", "recompute_num_layers": 1, "mtp_num_layers": 1})", true },
    { "*", "json", "RT9", "not supported for MTP yet", R"({"recompute_granularity": "full", "recompute_method": "block", "recompute_num_layers": 1})", false },
    { "*", "json", "RT12", "inside the captured CUDA-graph scope", R"({)" SEL R"("recompute_modules": ["core_attn"], "attention_dropout": 0.0, "cuda_graph_impl": "transformer_engine", "cuda_graph_modules": ["attn"]})", true },
    { "*", "json", "RT12", "inside the captured CUDA-graph scope", R"({)" SEL R"("recompute_modules": ["core_attn"], "attention_dropout": 0.0, "cuda_graph_impl": "transformer_engine", "cuda_graph_modules": ["mlp"]})", false },
    { "*", "json", "RT14", "fusion of gelu and swiglu", R"({"bias_activation_fusion": true, "activation_func": "silu"})", true },
    { "*", "json", "RT14", "fusion of gelu and swiglu", R"({"bias_activation_fusion": true, "activation_func": "silu", "gated_linear_unit": true})", false },
    { "*", "json", "RT15", "per_token_scale in MLP", R"({)" MOE R"("bias_activation_fusion": true, "transformer_impl": "local"})", true },
    { "*", "json", "RT15", "per_token_scale in MLP", R"({)" MOE R"("bias_activation_fusion": true, "transformer_impl": "local", "activation_func": "silu", "gated_linear_unit": true})", false },
    { "*", "json", "RT15", "in TEGroupedMLP", R"({)" MOE R"("bias_activation_fusion": true})", true },
    { "*", "json", "RT15", "in TEGroupedMLP", R"({)" MOE R"("bias_activation_fusion": true, "transformer_impl": "local"})", false },
    { "*", "json", "RT16", "without also enabling sequence parallelism", R"({)" MOE R"("tensor_model_parallel_size": 2})", true },
    { "*", "json", "RT16", "without also enabling sequence parallelism", R"({)" MOE R"("tensor_model_parallel_size": 2, "sequence_parallel": true})", false },
    { "*", "json", "RT16", "without also enabling sequence parallelism", R"({"tensor_model_parallel_size": 2})", false },
    // --- hybrid stacks (8 layers: kBase's num_layers)
    { "*", "json", "RT17", "HybridModel builds the layers", R"({"hybrid_layer_pattern": "M*M*"})", true },
    { "*", "json", "RT17", "HybridModel builds the layers", R"({"hybrid_layer_pattern": "M*M*M-M-"})", false },
    { "*", "json", "RT18", "is not a valid layer symbol", R"({"hybrid_layer_pattern": "M*X*M*M*"})", true },
    { "*", "json", "RT18", "is not a valid layer symbol", R"({"hybrid_layer_pattern": "M*|M*M*M*/M*"})", false },
    { "dev", "json", "RT18", "is not a valid layer symbol", R"({"hybrid_layer_pattern": "M+M+M+M+"})", true },
    { "*", "json", "RT18", "is not a valid layer symbol", R"({"hybrid_layer_pattern": "M*M*M*M*/M|"})", true },
    { "*", "json", "RT18", "All MTP patterns must be identical", R"({"hybrid_layer_pattern": "M*M*M*M*/MM/M*"})", true },
    { "*", "json", "RT18", "All MTP patterns must be identical", R"({"hybrid_layer_pattern": "M*M*M*M*/MM/MM"})", false },
    { "bridge-pin,guide,main", "json", "RT18", "Attention and MLA/DSA in one", R"({"hybrid_layer_pattern": "M*M+M*M*"})", true },
    { "bridge-pin,guide,main", "json", "RT18", "Attention and MLA/DSA in one", R"({"hybrid_layer_pattern": "M+M+M+M+"})", false },
    { "dev", "json", "RT18", "MLA/DSA/CSA/HCA/Window", R"({"hybrid_layer_pattern": "M*MDM*MH"})", true },
    { "dev", "json", "RT18", "MLA/DSA/CSA/HCA/Window", R"({"hybrid_layer_pattern": "MDMDMCMH"})", false },
    { "*", "json", "RT19", "vp_stage != None", R"({"hybrid_layer_pattern": "M*M*M*M*", "pipeline_model_parallel_size": 2, "virtual_pipeline_model_parallel_size": 2})", true },
    { "*", "json", "RT19", "vp_stage != None", R"({"hybrid_layer_pattern": "M*|M*|M*|M*", "pipeline_model_parallel_size": 2, "virtual_pipeline_model_parallel_size": 2})", false },
    { "*", "json", "RT19", "must be evenly divisible by pipeline-model-parallel-size", R"({"hybrid_layer_pattern": "M*M*M*M*", "pipeline_model_parallel_size": 3})", true },
    { "*", "json", "RT19", "must be evenly divisible by pipeline-model-parallel-size", R"({"hybrid_layer_pattern": "M*M*M*M*", "pipeline_model_parallel_size": 2})", false },
    { "*", "json", "RT19", "pipe-delimited segments", R"({"hybrid_layer_pattern": "M*|M*|M*M*", "pipeline_model_parallel_size": 2})", true },
    { "*", "json", "RT19", "pipe-delimited segments", R"({"hybrid_layer_pattern": "M*M*|M*M*", "pipeline_model_parallel_size": 2})", false },
    { "*", "json", "RT19", "must be evenly divisible by pipeline-model-parallel-size", R"({"hybrid_layer_pattern": "M*M*M*M*", "pipeline_model_parallel_size": 3, "num_layers_in_first_pipeline_stage": 2})", false },
    { "*", "json", "RT19", "Cannot specify num_layers_in_first_pipeline_stage", R"({"hybrid_layer_pattern": "M*M*|M*M*", "pipeline_model_parallel_size": 2, "num_layers_in_first_pipeline_stage": 4})", true },
    { "*", "json", "RT19", "Cannot specify num_layers_in_first_pipeline_stage", R"({"hybrid_layer_pattern": "M*M*M*M*", "pipeline_model_parallel_size": 2, "num_layers_in_first_pipeline_stage": 4})", false },
    { "*", "json", "RT19", "Middle layers (", R"({"hybrid_layer_pattern": "M*M*M*M*", "pipeline_model_parallel_size": 4, "num_layers_in_first_pipeline_stage": 3})", true },
    { "*", "json", "RT19", "Middle layers (", R"({"hybrid_layer_pattern": "M*M*M*M*", "pipeline_model_parallel_size": 4, "num_layers_in_first_pipeline_stage": 2})", false },
    { "*", "json", "RT20", "d_inner must be evenly divisible", R"({"hybrid_layer_pattern": "M*M*M*M*", "mamba_head_dim": 48})", true },
    { "*", "json", "RT20", "d_inner must be evenly divisible", R"({"hybrid_layer_pattern": "M*M*M*M*", "mamba_head_dim": 48, "mamba_num_heads": 32})", false },
    { "*", "json", "RT20", "d_inner must be evenly divisible", R"({"hybrid_layer_pattern": "-*-*-*-*", "mamba_head_dim": 48})", false },
    { "*", "json", "RT20", "nheads must be evenly divisble by tp_size", R"({"hybrid_layer_pattern": "M-M-M-M-", "mamba_num_heads": 30, "mamba_num_groups": 2, "tensor_model_parallel_size": 4, "sequence_parallel": true})", true },
    { "*", "json", "RT20", "nheads must be evenly divisble by tp_size", R"({"hybrid_layer_pattern": "M-M-M-M-", "tensor_model_parallel_size": 4, "sequence_parallel": true})", false },
    { "*", "json", "RT20", "ngroups must be evenly divisible by tp_size", R"({"hybrid_layer_pattern": "M-M-M-M-", "mamba_num_groups": 2, "tensor_model_parallel_size": 4, "sequence_parallel": true})", true },
    { "*", "json", "RT20", "ngroups must be evenly divisible by tp_size", R"({"hybrid_layer_pattern": "M-M-M-M-", "mamba_num_groups": 4, "tensor_model_parallel_size": 4, "sequence_parallel": true})", false },
    { "*", "json", "RT20", "nheads must be evenly divisible by ngroups", R"({"hybrid_layer_pattern": "M-M-M-M-", "mamba_num_groups": 6})", true },
    { "*", "json", "RT20", "nheads must be evenly divisible by ngroups", R"({"hybrid_layer_pattern": "M-M-M-M-", "mamba_num_groups": 4})", false },
    { "*", "json", "RT21", "self.activation in", R"({"hybrid_layer_pattern": "M*G*M-G-", "activation_func": "squared_relu"})", true },
    { "*", "json", "RT21", "self.activation in", R"({"hybrid_layer_pattern": "M*G*M-G-", "activation_func": "silu", "gated_linear_unit": true})", false },
    { "*", "json", "RT21", "self.activation in", R"({"hybrid_layer_pattern": "M*M*M-M-", "activation_func": "squared_relu"})", false },
    { "*", "json", "RT21", "self.activation in", R"({"experimental_attention_variant": "gated_delta_net", "linear_attention_freq": 4})", true },
    { "main", "json", "RT22", "unexpected keyword argument", R"({"bf16": true, "fp8": "hybrid", "fp8_recipe": "delayed", "te_version": "2.17.1"})", true },
    { "main", "json", "RT22", "unexpected keyword argument", R"({"bf16": true, "fp8": "hybrid", "fp8_recipe": "delayed", "te_version": "2.16.0"})", false },
    { "main", "json", "RT22", "unexpected keyword argument", R"({"bf16": true, "fp8": "hybrid", "fp8_recipe": "tensorwise", "te_version": "2.17.1"})", false },
    { "main", "json", "RT22", "set te_version to check", R"({"bf16": true, "fp8": "hybrid", "fp8_recipe": "delayed"})", true },
    { "main", "json", "RT22", "set te_version to check", R"({"bf16": true, "fp8": "hybrid", "fp8_recipe": "delayed", "te_version": "2.17.1"})", false },
    { "*", "json", "RT23", "Currently only MLA supports sparse attention", R"({)" DSA R"("multi_latent_attention": false})", true },
    { "*", "json", "RT23", "Currently only MLA supports sparse attention", R"({)" DSA R"(})", false },
    { "*", "json", "RT24", "AbsorbedMLA requires sequence_parallel", R"({)" DSA R"("tensor_model_parallel_size": 2})", true },
    { "*", "json", "RT24", "AbsorbedMLA requires sequence_parallel", R"({)" DSA R"("tensor_model_parallel_size": 2, "sequence_parallel": true})", false },
    { "bridge-pin,guide,main", "json", "RT25", "FP8/FP4 is not supported for AbsorbedMLA", R"({)" DSA SEL R"("recompute_modules": ["mla_up_proj"], "fp8": "hybrid", "fp8_recipe": "tensorwise"})", true },
    { "bridge-pin,guide,main", "json", "RT25", "FP8/FP4 is not supported for AbsorbedMLA", R"({)" DSA SEL R"("recompute_modules": ["mla_up_proj"]})", false },
    { "*", "json", "RT26", "index-share pipeline split is invalid", R"({)" DSA R"("dsa_indexer_topk_freq": 4, "dsa_indexer_skip_topk_offset": 3, "pipeline_model_parallel_size": 2})", true },
    { "*", "json", "RT26", "index-share pipeline split is invalid", R"({)" DSA R"("dsa_indexer_topk_freq": 4, "dsa_indexer_skip_topk_offset": 3})", false },
    { "*", "json", "RT26", "index-share pipeline split is invalid", R"({)" DSA R"("dsa_indexer_topk_freq": 4, "dsa_indexer_skip_topk_offset": 0, "pipeline_model_parallel_size": 2})", false },
    { "main", "json", "RT22", "set te_version to check", R"({"bf16": true, "fp8": "hybrid", "fp8_recipe": "tensorwise"})", false },
    { "*", "json", "RT27", "MoE latent projections is not supported", R"({)" MOE R"("moe_latent_size": 256, "moe_shared_expert_intermediate_size": 1024, "moe_token_dispatcher_type": "alltoall", "moe_shared_expert_overlap": true})", true },
    { "*", "bridge", "RT27", "MoE latent projections is not supported", R"({)" MOE R"("moe_latent_size": 256, "moe_shared_expert_intermediate_size": 1024, "moe_token_dispatcher_type": "alltoall", "moe_shared_expert_overlap": true})", true },
    { "*", "json", "RT27", "MoE latent projections is not supported", R"({)" MOE R"("moe_latent_size": 256, "moe_shared_expert_intermediate_size": 1024, "moe_token_dispatcher_type": "alltoall"})", false },
    { "*", "json", "RT27", "MoE latent projections is not supported", R"({)" MOE R"("moe_shared_expert_intermediate_size": 1024, "moe_token_dispatcher_type": "alltoall", "moe_shared_expert_overlap": true})", false },
    // RT26 on a layout's chunks: stage 1 starting on layer 4 (which reuses layer 3's top-k) fails, on layer 7 (which
    // computes its own) it does not.
    { "*", "json", "RT26", "index-share pipeline split is invalid", R"({)" DSA R"("dsa_indexer_topk_freq": 4, "dsa_indexer_skip_topk_offset": 3, "pipeline_model_parallel_size": 2, "pipeline_model_parallel_layout": "Ettt|tttttL"})", true },
    { "*", "json", "RT26", "index-share pipeline split is invalid", R"({)" DSA R"("dsa_indexer_topk_freq": 4, "dsa_indexer_skip_topk_offset": 3, "pipeline_model_parallel_size": 2, "pipeline_model_parallel_layout": "Etttttt|ttL"})", false },
    { "*", "json", "RT28", "should be divisible by config.pipeline_model_parallel_size", R"({"pipeline_model_parallel_size": 3})", true },
    { "*", "json", "RT28", "should be divisible by config.pipeline_model_parallel_size", R"({"pipeline_model_parallel_size": 2})", false },
    { "*", "json", "RT28", "should be divisible by config.pipeline_model_parallel_size", R"({"pipeline_model_parallel_size": 3, "pipeline_model_parallel_layout": "Ettt|ttt|ttL"})", false },
    { "*", "flags", "RT28", "should be divisible by config.pipeline_model_parallel_size", R"({"pipeline_model_parallel_size": 3})", false }, // M11 first
    { "*", "json", "RT28", "should be divisible by vp_size", R"({"pipeline_model_parallel_size": 2, "virtual_pipeline_model_parallel_size": 3})", true },
    { "*", "json", "RT28", "should be divisible by vp_size", R"({"pipeline_model_parallel_size": 2, "virtual_pipeline_model_parallel_size": 2})", false },
    { "*", "json", "RT29", "integer division or modulo by zero", R"({"pipeline_model_parallel_size": 2, "virtual_pipeline_model_parallel_size": 2, "num_layers_in_first_pipeline_stage": 4, "num_layers_in_last_pipeline_stage": 4})", true },
    { "*", "json", "RT29", "integer division or modulo by zero", R"({"pipeline_model_parallel_size": 2, "num_layers_in_first_pipeline_stage": 4, "num_layers_in_last_pipeline_stage": 4})", false },
    { "*", "json", "RT30", "re-enters itself through the linear_fc2 bias", R"({"recompute_granularity": "selective", "recompute_modules": ["core_attn", "mlp"], "add_bias_linear": true})", true },
    { "*", "flags", "RT30", "re-enters itself through the linear_fc2 bias", R"({"recompute_granularity": "selective", "recompute_modules": ["mlp"], "add_bias_linear": true})", true },
    { "*", "json", "RT30", "re-enters itself through the linear_fc2 bias", R"({"recompute_granularity": "selective", "recompute_modules": ["core_attn", "mlp"], "add_bias_linear": false})", false },
    { "*", "json", "RT30", "re-enters itself through the linear_fc2 bias", R"({"recompute_granularity": "selective", "recompute_modules": ["core_attn"], "add_bias_linear": true})", false },
    { "*", "json", "RT30", "re-enters itself through the linear_fc2 bias", R"({"recompute_granularity": "selective", "recompute_modules": ["mlp"], "add_bias_linear": true, "num_moe_experts": 8, "moe_router_topk": 2, "moe_grouped_gemm": true})", false }, // MoE layers take no mlp
    { "*", "json", "RT30", "re-enters itself through the linear_fc2 bias", R"({"recompute_granularity": "selective", "recompute_modules": ["mlp"], "add_bias_linear": true, "fp8": "hybrid"})", false }, // te_checkpoint: not run
    // --- ours
    { "*", "json", "RS01", "loops forever", R"({"recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 0})", true },
    { "*", "json", "RS01", "loops forever", R"({)" FULL1 R"(})", false },
    { "*", "json", "RS02", "checkpoints no layer", R"({"recompute_granularity": "full", "recompute_method": "block", "recompute_num_layers": -1})", true },
    { "*", "json", "RS02", "checkpoints no layer", R"({"recompute_granularity": "full", "recompute_method": "block", "recompute_num_layers": 1})", false },
    { "*", "json", "RS03", "exceeds the", R"({"recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 3, "pipeline_model_parallel_size": 2, "virtual_pipeline_model_parallel_size": 2})", true },
    { "*", "json", "RS03", "exceeds the", R"({"recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 2, "pipeline_model_parallel_size": 2, "virtual_pipeline_model_parallel_size": 2})", false },
    // With a layout the largest chunk counts: "Ettt|tL" has a chunk of 3 layers.
    { "*", "json", "RS03", "exceeds the", R"({"num_layers": 4, "recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 3, "pipeline_model_parallel_size": 2, "pipeline_model_parallel_layout": "Ettt|tL"})", false },
    { "*", "json", "RS03", "exceeds the", R"({"num_layers": 4, "recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 4, "pipeline_model_parallel_size": 2, "pipeline_model_parallel_layout": "Ettt|tL"})", true },
    { "*", "json", "RS04", "applies per model chunk", R"({"recompute_granularity": "full", "recompute_method": "block", "recompute_num_layers": 1, "pipeline_model_parallel_size": 2, "virtual_pipeline_model_parallel_size": 2})", true },
    { "*", "json", "RS04", "applies per model chunk", R"({"recompute_granularity": "full", "recompute_method": "block", "recompute_num_layers": 1, "pipeline_model_parallel_size": 2})", false },
    { "*", "json", "RS05", "has no MoE layers", R"({)" SEL R"("recompute_modules": ["moe"]})", true },
    { "*", "json", "RS05", "has no MoE layers", R"({)" SEL R"("recompute_modules": ["moe"], "num_moe_experts": 8})", false },
    { "*", "json", "RS06", "must earn its place", R"({)" SEL R"("recompute_modules": ["core_attn"], "attention_backend": "flash"})", true },
    { "*", "json", "RS06", "must earn its place", R"({)" SEL R"("recompute_modules": ["core_attn"], "attention_backend": "unfused"})", false },
    { "*", "json", "RS07", "straddles the CUDA-graph boundary", R"({)" SEL R"("num_moe_experts": 8, "recompute_modules": ["moe"], "cuda_graph_impl": "transformer_engine", "cuda_graph_modules": ["moe_preprocess"]})", true },
    { "*", "json", "RS07", "straddles the CUDA-graph boundary", R"({)" SEL R"("num_moe_experts": 8, "recompute_modules": ["moe"], "cuda_graph_impl": "transformer_engine", "cuda_graph_modules": ["attn"]})", false },
    { "*", "json", "RS08", "changes RNG execution paths", R"({)" FULL1 R"(})", true },
    { "*", "json", "RS08", "changes RNG execution paths", R"({)" FULL1 NODROP R"(})", false },
    { "*", "json", "RS09", "replays the context-parallel communication", R"({)" SEL R"("context_parallel_size": 2})", true },
    { "*", "json", "RS09", "replays the context-parallel communication", R"({)" SEL R"("context_parallel_size": 2, "recompute_modules": ["mlp"]})", false },
    { "*", "json", "RS10", "dispatch/combine communication", R"({)" SEL R"("num_moe_experts": 8, "recompute_modules": ["moe"], "expert_model_parallel_size": 2})", true },
    { "*", "json", "RS10", "dispatch/combine communication", R"({)" SEL R"("num_moe_experts": 8, "recompute_modules": ["moe"]})", false },
    { "*", "json", "RS11", "has no effect under selective", R"({)" SEL R"("distribute_saved_activations": true})", true },
    { "*", "json", "RS11", "has no effect under selective", R"({)" FULL1 R"("distribute_saved_activations": true, "tensor_model_parallel_size": 2})", false },
    { "*", "json", "RS12", "saves nothing", R"({)" FULL1 R"("distribute_saved_activations": true})", true },
    { "*", "json", "RS12", "saves nothing", R"({)" FULL1 R"("distribute_saved_activations": true, "tensor_model_parallel_size": 2})", false },
    { "*", "flags", "RS12", "saves nothing", R"({)" FULL1 R"("distribute_saved_activations": true})", false }, // M3 says it
    { "*", "json", "RS13", "is the alternative to full recompute", R"({)" FULL1 R"(})", true },
    { "*", "json", "RS13", "is the alternative to full recompute", R"({)" FULL1 R"("pipeline_model_parallel_size": 2})", false },
    { "*", "json", "RS14", "is ignored under selective", R"({)" SEL R"("recompute_method": "block"})", true },
    { "*", "flags", "RS14", "is ignored under selective", R"({)" SEL R"("recompute_method": "block"})", false }, // M4 says it
    { "*", "json", "RS14", "is ignored under selective", R"({)" SEL R"(})", false },
    { "*", "json", "RS15", "has no effect with recompute_granularity", R"({"recompute_modules": ["mlp"]})", true },
    { "*", "json", "RS15", "has no effect with recompute_granularity", R"({)" SEL R"("recompute_modules": ["mlp"]})", false },
    { "*", "json", "RS16", "no-recompute control", R"({)" SEL R"("recompute_modules": []})", true },
    { "*", "json", "RS16", "no-recompute control", R"({"recompute_modules": []})", false },
    { "*", "json", "RS17", "already wraps", R"({)" SEL MOE R"("recompute_modules": ["moe", "moe_act"]})", true },
    { "*", "json", "RS17", "already wraps", R"({)" SEL MOE R"("recompute_modules": ["moe", "layernorm"]})", false },
    { "*", "json", "RS18", "CheckpointWithoutOutput", R"({)" SEL R"("recompute_modules": ["layernorm"], "transformer_impl": "local"})", true },
    { "*", "json", "RS18", "CheckpointWithoutOutput", R"({)" SEL R"("recompute_modules": ["core_attn"], "transformer_impl": "local"})", false },
    { "main", "json", "RS19", "does not build", R"({"multi_latent_attention": true, "transformer_impl": "local"})", true },
    { "main", "json", "RS19", "does not build", R"({"multi_latent_attention": true})", false },
    { "*", "json", "RS20", "is applied only when", R"({"mixed_precision": "bf16_mixed"})", true },
    { "*", "bridge", "RS20", "is applied only when", R"({"mixed_precision": "bf16_mixed"})", false },
    { "*", "json", "RS20", "is applied only when", R"({"fp8": "hybrid"})", false },
    { "*", "json", "RS21", "common first candidate", R"({)" SEL R"("recompute_modules": ["mlp"], "attention_backend": "unfused"})", true },
    { "*", "json", "RS21", "common first candidate", R"({)" SEL R"("recompute_modules": ["mlp", "core_attn"], "attention_backend": "unfused"})", false },
        { "bridge-pin,guide,main", "json", "RS22", "dev branch's spelling", R"({"enable_hyper_connections": true})", true },
        { "bridge-pin,guide,main", "json", "RS22", "dev branch's spelling", R"({"enable_mhc_connections": true})", false },
        { "dev", "json", "RS22", "main's spelling", R"({"enable_mhc_connections": true})", true },
        { "dev", "json", "RS22", "main's spelling", R"({"enable_hyper_connections": true})", false },
        // --- PEFT (issue 26): LoRA's targets and sizes
        { "*", "json", "B11", "No modules matched the requested target_modules entries", R"({"peft": {"scheme": "lora", "target_modules": ["linear_qkv", "in_proj"]}})", true },
        { "*", "json", "B11", "No modules matched", R"({"peft": {"scheme": "lora", "target_modules": ["linear_qkv", "linear_fc2"]}})", false },
        { "*", "json", "B11", "No modules matched", R"({"peft": {"scheme": null, "target_modules": ["in_proj"]}})", false },
        { "*", "json", "RS40", "the estimate builds no adapter", R"({"peft": {"scheme": "lora", "target_modules": ["router", "*.layers.0.*.linear_qkv"]}})", true },
        { "*", "json", "RS40", "the estimate builds no adapter", R"({"peft": {"scheme": "lora"}})", false },
        { "*", "json", "RS41", "the rank must be at least 1", R"({"peft": {"scheme": "lora", "dim": 0}})", true },
        { "*", "json", "RS41", "the rank must be at least 1", R"({"peft": {"scheme": "lora", "dim": 8, "dropout": 1.0}})", true },
        { "*", "json", "RS41", "the rank must be at least 1", R"({"peft": {"scheme": "lora", "dim": 8, "dropout": 0.1}})", false },
        // --- impossible sizes and shapes (RS23-RS29, R40, M7)
        // Issue 30: what Megatron refuses when it builds the model, refused before it (RS31, RS32, RS37), and
        // values our worker would run with no meaning (RS33-RS36).
        { "*", "json", "RS37", "must be a multiple of tensor_model_parallel_size", R"({"tensor_model_parallel_size": 3, "num_attention_heads": 32})", true },
        { "*", "json", "RS31", "is not divisible by", R"({"tensor_model_parallel_size": 3, "num_attention_heads": 32})", false },
        // TP 10^6 with 4 heads (and 4 groups, fewer than TP) estimated 0.000 GB; TransformerConfig refuses it.
        { "*", "json", "RS37", "must be a multiple of tensor_model_parallel_size", R"({"tensor_model_parallel_size": 1000000, "num_attention_heads": 4})", true },
        { "*", "json", "RS37", "must be a multiple of", R"({"tensor_model_parallel_size": 8, "num_attention_heads": 32, "num_query_groups": 4})", false },
        { "*", "json", "RS37", "must be a multiple of", R"({"multi_latent_attention": true, "tensor_model_parallel_size": 3, "num_attention_heads": 16})", true },
        { "*", "json", "RS31", "is not divisible by", R"({"tensor_model_parallel_size": 4, "num_attention_heads": 32, "num_query_groups": 8})", false },
        { "*", "json", "RS31", "is not divisible by", R"({"tensor_model_parallel_size": 8, "num_attention_heads": 32, "num_query_groups": 12})", true },
        { "*", "json", "RS31", "is not divisible by", R"({"tensor_model_parallel_size": 8, "num_attention_heads": 32, "num_query_groups": 4})", false },
        { "*", "json", "RS32", "is not divisible by expert_model_parallel_size", R"({)" MOE R"("expert_model_parallel_size": 3})", true },
        { "*", "json", "RS32", "is not divisible by expert_model_parallel_size", R"({)" MOE R"("expert_model_parallel_size": 4})", false },
        { "*", "json", "RS33", "with multi_latent_attention every MLA dimension", R"({"multi_latent_attention": true, "kv_lora_rank": 0})", true },
        { "*", "json", "RS33", "with multi_latent_attention every MLA dimension", R"({"multi_latent_attention": true, "q_lora_rank": null})", false },
        { "*", "json", "RS34", "the rotary share of each head", R"({"position_embedding_type": "rope", "rotary_percent": 2.0})", true },
        { "*", "json", "RS34", "the rotary share of each head", R"({"position_embedding_type": "rope", "rotary_percent": 0.5})", false },
        { "*", "json", "RS34", "the rotary base must be positive", R"({"position_embedding_type": "rope", "rotary_base": 0})", true },
        { "*", "json", "RS34", "the rotary base must be positive", R"({"position_embedding_type": "learned_absolute", "rotary_base": 0})", false },
        { "*", "json", "RS35", "a run has at least 1 step", R"({"train_iters": -1})", true },
        { "*", "json", "RS35", "a run has at least 1 step", R"({"train_iters": 20, "warmup_iters": 5})", false },
        { "*", "json", "RS35", "a positive, finite number of GB", R"({"memory_target_gb": -1})", true },
        { "*", "json", "RS35", "a positive, finite number of GB", R"({"memory_target_gb": 80})", false },
        { "*", "json", "RS35", "the GPUs' CUDA compute capability", R"({"gpu_compute_capability": 9})", true },
        { "*", "json", "RS35", "the GPUs' CUDA compute capability", R"({"gpu_compute_capability": 900})", true },
        { "*", "json", "RS35", "the GPUs' CUDA compute capability", R"({"gpu_compute_capability": 80})", false },
        { "*", "json", "RS35", "the GPUs' CUDA compute capability", R"({"gpu_compute_capability": 103})", false },
        { "*", "json", "RS36", "at most 65536 layers", R"({"num_layers": 2147483647})", true },
        { "*", "json", "RS36", "at most 65536 layers", R"({"num_layers": 65536})", false },
        { "*", "json", "RS38", "(DSA, MLA or DeepSeek-V4 attention)", R"({"hybrid_layer_pattern": "MDMDMDMD"})", true },
        { "*", "json", "RS38", "(DSA, MLA or DeepSeek-V4 attention)", R"({"hybrid_layer_pattern": "M-M-M-M-"})", false },
        { "*", "json", "RS38", "so nothing is estimated for this model", R"({)" DSA R"("dsa_kernel_backend": "none"})", true },
        { "*", "json", "RS38", "so nothing is estimated for this model", R"({)" DSA R"(})", false },
        { "*", "json", "RS38", "builds no DeepSeek sparse attention layer", R"({)" DSA R"(})", true },
        { "*", "json", "RS38", "builds no DeepSeek sparse attention layer", R"({)" DSA R"("dsa_kernel_backend": "tilelang"})", false },
        { "*", "json", "RS39", "Megatron Core has no default for them", R"({"multi_latent_attention": true, "experimental_attention_variant": "dsa", "add_bias_linear": false})", true },
        { "*", "json", "RS39", "Megatron Core has no default for them", R"({)" DSA R"(})", false },
        { "*", "json", "RS23", "dsa_indexer_n_heads must be at least 1", R"({)" DSA R"("dsa_indexer_n_heads": 0})", true },
        { "*", "json", "RS23", "dsa_indexer_n_heads must be at least 1", R"({)" DSA R"(})", false },
        { "*", "json", "RS23", "dsa_indexer_head_dim must be at least 1", R"({)" DSA R"("dsa_indexer_head_dim": -2})", true },
        { "*", "json", "RS23", "dsa_indexer_head_dim must be at least 1", R"({)" DSA R"(})", false },
        { "*", "json", "RS23", "dsa_indexer_topk must be at least 1", R"({)" DSA R"("dsa_indexer_topk": 0})", true },
        { "*", "json", "RS23", "dsa_indexer_topk must be at least 1", R"({)" DSA R"(})", false },
        { "*", "json", "RS38", "MTP depth(s)", R"({"hybrid_layer_pattern": "M*M*M*M*/MM/MM"})", true },
        { "*", "json", "RS38", "MTP depth(s)", R"({"hybrid_layer_pattern": "M*M*M*M*"})", false },
        { "*", "json", "RS38", "MTP depth(s)", R"({"hybrid_layer_pattern": "M*M*", "mtp_hybrid_override_pattern": "MM", "mtp_num_layers": 2})", true },
        { "*", "json", "RS38", "MTP depth(s)", R"({"hybrid_layer_pattern": "M*M*", "mtp_hybrid_override_pattern": "MM"})", false },
        // Overrides alone: the shape they do not give is unknown (not 0), and said once; given, RS23 judges it.
        { "*", "bridge", "RS30", "the overrides give no", R"({"num_layers": 0, "hidden_size": 0, "num_attention_heads": 0, "explicit_keys": ["recompute_granularity"]})", true },
        { "*", "bridge", "RS30", "the overrides give no", R"({"num_layers": 0, "hidden_size": 0, "num_attention_heads": 0, "explicit_keys": ["hidden_size", "num_attention_heads", "num_layers", "recompute_granularity"]})", false },
        { "*", "bridge", "RS23", "out of range: num_layers must", R"({"num_layers": 0, "explicit_keys": ["num_layers"]})", true },
        { "*", "bridge", "RS23", "out of range: num_layers must", R"({"num_layers": 0, "explicit_keys": ["recompute_granularity"]})", false },
        { "*", "json", "RS23", "out of range: num_layers must", R"({"num_layers": 0})", true },
        { "*", "json", "RS23", "out of range: num_layers must", R"({"num_layers": 8})", false },
        { "*", "json", "RS23", "out of range: hidden_size must", R"({"hidden_size": -1})", true },
        { "*", "json", "RS23", "out of range: hidden_size must", R"({"hidden_size": 1024})", false },
        { "*", "json", "RS23", "out of range: moe_latent_size must", R"({)" MOE R"("moe_latent_size": 0})", true },
        { "*", "bridge", "RS23", "out of range: moe_latent_size must", R"({)" MOE R"("moe_latent_size": -4})", true },
        { "*", "json", "RS23", "out of range: moe_latent_size must", R"({)" MOE R"("moe_latent_size": 256})", false },
        { "*", "flags", "RS23", "out of range: moe_latent_size must", R"({)" MOE R"("moe_latent_size": 0})", false },
        { "*", "json", "RS23", "out of range: num_attention_heads must", R"({"num_attention_heads": 0})", true },
        { "*", "json", "RS23", "out of range: num_attention_heads must", R"({"num_attention_heads": 8})", false },
        { "*", "json", "RS23", "out of range: seq_length must", R"({"seq_length": 0})", true },
        { "*", "json", "RS23", "out of range: seq_length must", R"({"seq_length": 1})", false },
        { "*", "json", "RS23", "out of range: micro_batch_size must", R"({"micro_batch_size": -3})", true },
        { "*", "json", "RS23", "out of range: micro_batch_size must", R"({"micro_batch_size": 1})", false },
        { "*", "json", "RS23", "out of range: vocab_size must", R"({"vocab_size": 0})", true },
        { "*", "json", "RS23", "out of range: vocab_size must", R"({"vocab_size": 32000})", false },
        { "*", "json", "RS23", "out of range: make_vocab_size_divisible_by must", R"({"make_vocab_size_divisible_by": 0})", true },
        { "*", "json", "RS23", "out of range: make_vocab_size_divisible_by must", R"({"make_vocab_size_divisible_by": 128})", false },
        { "*", "json", "RS23", "out of range: tensor_model_parallel_size must", R"({"tensor_model_parallel_size": 0})", true },
        { "*", "json", "RS23", "out of range: tensor_model_parallel_size must", R"({"tensor_model_parallel_size": 1})", false },
        { "*", "json", "RS23", "out of range: pipeline_model_parallel_size must", R"({"pipeline_model_parallel_size": 0})", true },
        { "*", "json", "RS23", "out of range: pipeline_model_parallel_size must", R"({"pipeline_model_parallel_size": 1})", false },
        { "*", "json", "RS23", "out of range: context_parallel_size must", R"({"context_parallel_size": -1})", true },
        { "*", "json", "RS23", "out of range: context_parallel_size must", R"({"context_parallel_size": 1})", false },
        { "*", "json", "RS23", "out of range: expert_model_parallel_size must", R"({"expert_model_parallel_size": 0})", true },
        { "*", "json", "RS23", "out of range: expert_model_parallel_size must", R"({"expert_model_parallel_size": 1})", false },
        { "*", "json", "RS23", "out of range: data_parallel_size must", R"({"data_parallel_size": 0})", true },
        { "*", "json", "RS23", "out of range: data_parallel_size must", R"({"data_parallel_size": 1})", false },
        { "*", "json", "RS23", "out of range: ffn_hidden_size must", R"({"ffn_hidden_size": 0})", true },
        { "*", "json", "RS23", "out of range: ffn_hidden_size must", R"({"ffn_hidden_size": 4096})", false },
        { "*", "json", "RS23", "out of range: num_query_groups must", R"({"num_query_groups": 0})", true },
        { "*", "json", "RS23", "out of range: num_query_groups must", R"({"num_query_groups": 8})", false },
        { "*", "json", "RS23", "out of range: kv_channels must", R"({"kv_channels": -128})", true },
        { "*", "json", "RS23", "out of range: kv_channels must", R"({"kv_channels": 128})", false },
        { "*", "json", "RS23", "out of range: global_batch_size must", R"({"global_batch_size": 0})", true },
        { "*", "json", "RS23", "out of range: global_batch_size must", R"({"global_batch_size": 8})", false },
        { "*", "json", "RS23", "out of range: virtual_pipeline_model_parallel_size must", R"({"virtual_pipeline_model_parallel_size": 0})", true },
        { "*", "json", "RS23", "out of range: virtual_pipeline_model_parallel_size must", R"({"virtual_pipeline_model_parallel_size": null})", false },
        { "*", "json", "RS23", "out of range: moe_ffn_hidden_size must", R"({"moe_ffn_hidden_size": -1})", true },
        { "*", "json", "RS23", "out of range: moe_ffn_hidden_size must", R"({"moe_ffn_hidden_size": null})", false },
        { "*", "json", "RS23", "out of range: max_position_embeddings must", R"({"max_position_embeddings": 0})", true },
        { "*", "json", "RS23", "out of range: max_position_embeddings must", R"({"max_position_embeddings": 4096})", false },
        { "*", "json", "RS24", "is not divisible by num_attention_heads", R"({"hidden_size": 1000, "num_attention_heads": 16})", true },
        { "*", "bridge", "RS24", "is not divisible by num_attention_heads", R"({"hidden_size": 1000, "num_attention_heads": 16, "kv_channels": 64})", false },
        { "*", "flags", "M7", "hidden_size % args.num_attention_heads", R"({"hidden_size": 1000, "num_attention_heads": 16})", true },
        { "*", "flags", "M7", "hidden_size % args.num_attention_heads", R"({"hidden_size": 1024, "num_attention_heads": 16})", false },
        { "*", "json", "RS25", "not divisible by num_query_groups", R"({"num_query_groups": 3})", true },
        { "*", "json", "RS25", "not divisible by num_query_groups", R"({"num_query_groups": 4})", false },
        { "*", "json", "RS26", "attention_dropout=", R"({"attention_dropout": 1.5})", true },
        { "*", "json", "RS26", "attention_dropout=", R"({"attention_dropout": 1.0})", false },
        { "*", "json", "RS26", "hidden_dropout=", R"({"hidden_dropout": -0.1})", true },
        { "*", "json", "RS26", "hidden_dropout=", R"({"hidden_dropout": 0.0})", false },
        { "*", "json", "RS27", "the router picks between 1", R"({)" MOE R"("moe_router_topk": 9})", true },
        { "*", "json", "RS27", "the router picks between 1", R"({)" MOE R"("moe_router_topk": 0})", true },
        { "*", "json", "RS27", "the router picks between 1", R"({)" MOE R"("moe_router_topk": 8})", false },
        { "*", "json", "RS28", "model chunks for ", R"({"pipeline_model_parallel_size": 65536, "virtual_pipeline_model_parallel_size": 65536})", true },
        { "*", "json", "RS28", "model chunks for ", R"({"pipeline_model_parallel_size": 2, "virtual_pipeline_model_parallel_size": 4})", false },
        // Bridge's Llama 3.1 405B recipes: 126 layers, PP 8 x VP 16, the embedding and the loss in the split.
        { "*", "json", "RS28", "model chunks for ", R"({"num_layers": 126, "pipeline_model_parallel_size": 8, "virtual_pipeline_model_parallel_size": 16, "account_for_embedding_in_pipeline_split": true})", true },
        { "*", "json", "RS28", "model chunks for ", R"({"num_layers": 126, "pipeline_model_parallel_size": 8, "virtual_pipeline_model_parallel_size": 16, "account_for_embedding_in_pipeline_split": true, "account_for_loss_in_pipeline_split": true})", false },
        // A layout may leave stages without a decoder layer (GLM-5.2's recipes do): RS28 is the even split's.
        { "*", "json", "RS28", "model chunks for ", R"({"pipeline_model_parallel_size": 4, "virtual_pipeline_model_parallel_size": 4, "pipeline_model_parallel_layout": "E|t|t|t|t|t|t|t|t|||||||L"})", false },
        { "*", "json", "RS29", "elements in one activation", R"({"seq_length": 2147483647, "micro_batch_size": 2147483647, "hidden_size": 2147483647, "num_attention_heads": 1})", true },
        { "*", "json", "RS29", "elements in one activation", R"({"seq_length": 131072, "micro_batch_size": 64})", false },
        { "*", "json", "R40", "must be non-negative", R"({"num_moe_experts": 0})", true },
        { "*", "json", "R40", "must be non-negative", R"({"num_moe_experts": 1, "moe_router_topk": 1})", false },
    };
    return c;
}
// clang-format on

InputFormat formatFromName(const std::string& f)
{
    if (f == "bridge")
        return InputFormat::BridgeOverrides;
    if (f == "flags")
        return InputFormat::MegatronFlags;
    return InputFormat::Json;
}

std::vector<Profile> profilesOf(const std::string& spec)
{
    if (spec == "*")
        return allProfiles();
    std::vector<Profile> out;
    size_t start = 0;
    while (start <= spec.size()) {
        const size_t end = spec.find(',', start);
        const std::string name
            = spec.substr(start, end == std::string::npos ? std::string::npos : end - start);
        if (auto p = profileFromName(name))
            out.push_back(*p);
        if (end == std::string::npos)
            break;
        start = end + 1;
    }
    return out;
}

nlohmann::json recipeJson(std::string patch, Profile profile)
{
    // The macros above leave ", " before the closing brace: drop it.
    const size_t close = patch.rfind('}');
    size_t end = close;
    while (end > 0 && (patch[end - 1] == ' ' || patch[end - 1] == ','))
        --end;
    if (close != std::string::npos)
        patch.erase(end, close - end);
    nlohmann::json j = nlohmann::json::parse(kBase);
    j.merge_patch(nlohmann::json::parse(patch));
    j["profile"] = profileName(profile);
    return j;
}

const Finding* findFinding(const Validation& v, const std::string& id, const std::string& key)
{
    for (const auto& f : v.findings)
        if (f.rule_id == id && f.message.find(key) != std::string::npos)
            return &f;
    return nullptr;
}

// Whether a catalogue row is the one a case aims at: same id and the key is part of its template
// (placeholders are rendered, so a key must not straddle one).
bool rowMatches(const rules_detail::Row& row, const Case& c, Profile p)
{
    return c.id == std::string(row.id) && std::string(row.message).find(c.key) != std::string::npos
        && rules_detail::rowExists(row, p)
        && (row.formats & rules_detail::formatBit(formatFromName(c.format)));
}

QByteArray describe(const Validation& v)
{
    QByteArray out;
    for (const auto& f : v.findings)
        out += QByteArray("\n  ") + f.rule_id.c_str() + " " + severityName(f.severity) + ": "
            + f.message.c_str();
    return out;
}

int indexOf(const Validation& v, const std::string& id, const std::string& key = "")
{
    for (size_t i = 0; i < v.findings.size(); ++i)
        if (v.findings[i].rule_id == id && v.findings[i].message.find(key) != std::string::npos)
            return static_cast<int>(i);
    return -1;
}

} // namespace

class TestRules : public QObject {
    Q_OBJECT

private slots:
    void fires_data();
    void fires();
    void everyRuleHasBothCases();
    void frontEndRuleRanges();
    void exactMessages_data();
    void exactMessages();
    void adjustmentsResolved_data();
    void adjustmentsResolved();
    void evaluationOrder();
    void fixitsClear_data();
    void fixitsClear();
    void r11FixAppliesTheSuggestion_data();
    void r11FixAppliesTheSuggestion();
    void unfusedAttentionFixitsAgree_data();
    void unfusedAttentionFixitsAgree();
    void catalogue();
    void labelEffects_data();
    void labelEffects();
    void findingJsonShape();
    void profileTable_data();
    void profileTable();
    void sourcesNameKnownProfiles();
    void everyProfileResolvesEverySource_data();
    void everyProfileResolvesEverySource();
    void sourcesPointIntoTheRepository();
    void docsAnchorsExist();
};

void TestRules::fires_data()
{
    QTest::addColumn<int>("profile");
    QTest::addColumn<QByteArray>("format");
    QTest::addColumn<QByteArray>("id");
    QTest::addColumn<QByteArray>("key");
    QTest::addColumn<QByteArray>("patch");
    QTest::addColumn<bool>("expected");
    int n = 0;
    for (const Case& c : cases()) {
        for (Profile p : profilesOf(c.profiles)) {
            const QByteArray name = QByteArray(c.id) + (c.fires ? " fires" : " quiet") + " " + profileName(p)
                + " " + c.format + " #" + QByteArray::number(n++);
            QTest::newRow(name.constData()) << static_cast<int>(p) << QByteArray(c.format) << QByteArray(c.id)
                                            << QByteArray(c.key) << QByteArray(c.patch) << c.fires;
        }
    }
}

void TestRules::fires()
{
    QFETCH(int, profile);
    QFETCH(QByteArray, format);
    QFETCH(QByteArray, id);
    QFETCH(QByteArray, key);
    QFETCH(QByteArray, patch);
    QFETCH(bool, expected);
    const Recipe r = recipeFromJson(recipeJson(patch.toStdString(), static_cast<Profile>(profile)), "case");
    const Validation v = validate(r, formatFromName(format.toStdString()));
    const Finding* f = findFinding(v, id.toStdString(), key.toStdString());
    if (expected)
        QVERIFY2(f, QByteArray("expected " + id + " (" + key + ") among:" + describe(v)).constData());
    else
        QVERIFY2(!f, QByteArray("did not expect " + id + " (" + key + ") among:" + describe(v)).constData());
    // Whatever fired, `resolved` is a fixed point: validating it again adjusts nothing.
    const Validation again = validate(v.resolved, formatFromName(format.toStdString()));
    for (const auto& g : again.findings)
        QVERIFY2(g.severity != Severity::Adjustment,
            QByteArray("adjusted again: " + QByteArray(g.rule_id.c_str()) + " " + g.message.c_str())
                .constData());
}

// Every row of the table that is evaluated has a case where it fires and one where it does not, on a
// profile and input format where the row exists.
void TestRules::everyRuleHasBothCases()
{
    QStringList missing;
    for (const auto& row : rules_detail::ruleRows()) {
        if (!row.when)
            continue;
        bool fires = false, quiet = false;
        for (const Case& c : cases()) {
            for (Profile p : profilesOf(c.profiles)) {
                if (rowMatches(row, c, p))
                    (c.fires ? fires : quiet) = true;
            }
        }
        if (!fires || !quiet)
            missing << QString::fromUtf8(row.id) + QStringLiteral(": ")
                    + QString::fromUtf8(row.message).left(50)
                    + (fires ? QStringLiteral(" (no quiet case)") : QStringLiteral(" (no firing case)"));
    }
    QVERIFY2(missing.isEmpty(), qPrintable(missing.join(QLatin1Char('\n'))));
}

// What the interfaces name beside each front end, from the table: Bridge's own rules and Megatron-LM's.
void TestRules::frontEndRuleRanges()
{
    QCOMPARE(frontEndRuleRange(InputFormat::BridgeOverrides), std::string("B1-B12"));
    QCOMPARE(frontEndRuleRange(InputFormat::MegatronFlags), std::string("M1-M12"));
    QCOMPARE(frontEndRuleRange(InputFormat::Json), std::string());
}

void TestRules::exactMessages_data()
{
    QTest::addColumn<int>("profile");
    QTest::addColumn<QByteArray>("id");
    QTest::addColumn<QByteArray>("patch");
    QTest::addColumn<QByteArray>("message");
    const int main = static_cast<int>(Profile::Main), pin = static_cast<int>(Profile::BridgePin);
    QTest::newRow("RT18 symbol set, pipe allowed in main")
        << main << QByteArray("RT18") << QByteArray(R"({"hybrid_layer_pattern": "M*M*M*Mé"})")
        << QByteArray("In main pattern, 'é' is not a valid layer symbol. Valid symbols are: {'M', 'G', '*', "
                      "'D', '+', '-', 'E', '|'}");
    QTest::newRow("R42 self= rendering")
        << main << QByteArray("R42")
        << QByteArray(
               R"({"experimental_attention_variant": "gdn", "linear_num_key_heads": 6, "tensor_model_parallel_size": 4})")
        << QByteArray(
               "self.linear_num_key_heads=6 must be a multiple of (self.tensor_model_parallel_size=4 * "
               "self.context_parallel_size=1).");
    QTest::newRow("B11 Bridge's warning, the unmatched targets named")
        << pin << QByteArray("B11")
        << QByteArray(
               R"({"peft": {"scheme": "lora", "target_modules": ["in_proj", "linear_qkv", "out_proj"]}})")
        << QByteArray("No modules matched the requested target_modules entries: in_proj, out_proj");
    QTest::newRow("RS40 the targets outside the table named")
        << pin << QByteArray("RS40")
        << QByteArray(
               R"({"peft": {"scheme": "lora", "target_modules": ["router", "*.layers.0.*.linear_qkv"]}})")
        << QByteArray(
               "peft.target_modules router, *.layers.0.*.linear_qkv: the estimate builds no adapter there "
               "(it adapts linear_qkv, linear_proj, linear_fc1, linear_fc2, linear_q_proj, "
               "linear_q_down_proj, linear_q_up_proj, linear_kv_down_proj, linear_kv_up_proj, in_proj, "
               "out_proj), so it counts neither the adapter nor the input it keeps");
    QTest::newRow("RS41 rank and dropout")
        << pin << QByteArray("RS41")
        << QByteArray(R"({"peft": {"scheme": "lora", "dim": 8, "dropout": 1.0}})")
        << QByteArray(
               "peft.dim=8 and peft.dropout=1.0: the rank must be at least 1 and the dropout in [0, 1)");
    QTest::newRow("R04 typo and missing space")
        << main << QByteArray("R04") << QByteArray(R"({"recompute_granularity": "partial"})")
        << QByteArray(R"(When using recompute_granuarlity: partial must be "full"or "selective".)");
    QTest::newRow("R07 floor division")
        << main << QByteArray("R07")
        << QByteArray(
               R"({"num_layers": 9, "pipeline_model_parallel_size": 2, "recompute_granularity": "full", "recompute_method": "block"})")
        << QByteArray("When using recompute_granularity: full recompute_num_layers must be between 1 and "
                      "num_layers_per_pipeline_rank: 4");
    QTest::newRow("R09 True/True")
        << main << QByteArray("R09")
        << QByteArray(
               R"({"recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 1, "distribute_saved_activations": true, "sequence_parallel": true, "tensor_model_parallel_size": 2})")
        << QByteArray(
               "distribute_saved_activations: True must be false when sequence parallel is enabled: True");
    QTest::newRow("R11 pin sets")
        << pin << QByteArray("R11")
        << QByteArray(
               R"({"recompute_granularity": "selective", "recompute_modules": ["mlp", "mhc", "moe_layer", "mhc"]})")
        << QByteArray("Invalid choices for recompute_modules: {'mhc', 'moe_layer'}. Allowed modules are: "
                      "{'core_attn', 'moe_act', 'layernorm', 'mla_up_proj', 'mlp', 'moe', 'shared_experts', "
                      "'gdn_norm_out'}");
    QTest::newRow("R18 version")
        << main << QByteArray("R18")
        << QByteArray(
               R"({"recompute_granularity": "selective", "recompute_modules": ["layernorm"], "fp8": "e4m3", "fp8_recipe": "mxfp8", "te_version": "2.4.1"})")
        << QByteArray("moe_act and layernorm recompute for fp8 needs transformer-engine>=2.6.0dev0, but your "
                      "version is 2.4.1.");
    QTest::newRow("R19 trailing space")
        << main << QByteArray("R19")
        << QByteArray(
               R"({"moe_layer_recompute": true, "recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 1})")
        << QByteArray("Do not set --moe-layer-recompute with full recompute granularity. ");
    QTest::newRow("R24b set")
        << main << QByteArray("R24b")
        << QByteArray(
               R"({"num_moe_experts": 4, "recompute_granularity": "selective", "recompute_modules": ["moe"], "fine_grained_activation_offloading": true, "offload_modules": ["fused_group_mlp", "moe_act"]})")
        << QByteArray("Cannot offload {'moe_act', 'fused_group_mlp'} while recomputing the entire MoE layer. "
                      "'moe' in recompute_modules wraps the full MoE forward in a checkpoint, so offloading "
                      "activations inside it is redundant and will cause errors. Either remove 'moe' from "
                      "--recompute-modules or remove {'moe_act', 'fused_group_mlp'} from --offload-modules.");
    QTest::newRow("R31 dangling with")
        << main << QByteArray("R31")
        << QByteArray(
               R"({"num_moe_experts": 4, "recompute_granularity": "selective", "recompute_modules": ["moe"], "cuda_graph_impl": "transformer_engine", "cuda_graph_modules": ["moe_router"]})")
        << QByteArray("moe recompute is not supported with moe_router CUDA graph with: ");
    QTest::newRow("R01 num_layers") << main << QByteArray("R01")
                                    << QByteArray(
                                           R"({"cpu_offloading": true, "cpu_offloading_num_layers": -1})")
                                    << QByteArray("CPU offloading can be done only for layers less than 8");
    // The pipeline split's messages as Python renders them (checked against the f-strings at 2a75ac12).
    QTest::newRow("R46 self= rendering")
        << pin << QByteArray("R46")
        << QByteArray(
               R"({"pipeline_model_parallel_layout": "Etttt|ttttL", "pipeline_model_parallel_size": 2, "num_layers_in_last_pipeline_stage": 4})")
        << QByteArray(
               "pipeline_model_parallel_layout cannot be set with other pipeline layout arguments. "
               "self.num_layers_in_first_pipeline_stage=None, self.num_layers_in_last_pipeline_stage=4, "
               "self.account_for_embedding_in_pipeline_split=False, "
               "self.account_for_loss_in_pipeline_split=False.");
    QTest::newRow("R47 len(layout)=")
        << pin << QByteArray("R47")
        << QByteArray(
               R"({"pipeline_model_parallel_layout": "Etttt|ttt|tL", "pipeline_model_parallel_size": 2})")
        << QByteArray("pipeline_model_parallel_layout must be divisible by pipeline_model_parallel_size "
                      "(len(layout)=3, pipeline_model_parallel_size=2)");
    QTest::newRow("R48 double space")
        << pin << QByteArray("R48")
        << QByteArray(
               R"({"pipeline_model_parallel_layout": "Ett|tt|tt|ttL", "pipeline_model_parallel_size": 2, "virtual_pipeline_model_parallel_size": 3})")
        << QByteArray("virtual_pipeline_model_parallel_size conflicts with pipeline_model_parallel_layout, "
                      "(self.virtual_pipeline_model_parallel_size=3,  detected_vpp_size=2)");
    QTest::newRow("R49 LayerType")
        << pin << QByteArray("R49")
        << QByteArray(
               R"({"pipeline_model_parallel_layout": "tEttt|ttttL", "pipeline_model_parallel_size": 2})")
        << QByteArray("The first layer must be embedding, but got LayerType.decoder");
    QTest::newRow("R49 missing space")
        << pin << QByteArray("R49")
        << QByteArray(
               R"({"pipeline_model_parallel_layout": "Ettt|ttttL", "pipeline_model_parallel_size": 2})")
        << QByteArray("Number of decoder layers 7must match num_layers 8");
    QTest::newRow("R51 missing spaces")
        << pin << QByteArray("R51")
        << QByteArray(
               R"({"pipeline_model_parallel_size": 3, "virtual_pipeline_model_parallel_size": 2, "account_for_embedding_in_pipeline_split": true})")
        << QByteArray("number of layers on each pipeline rank: 3(after enable "
                      "account_for_embedding_in_pipeline_split "
                      "or account_for_loss_in_pipeline_split) must be divisible "
                      "byvirtual_pipeline_model_parallel_size2");
    QTest::newRow("RT28 backslash continuation")
        << pin << QByteArray("RT28")
        << QByteArray(R"({"pipeline_model_parallel_size": 2, "virtual_pipeline_model_parallel_size": 3})")
        << QByteArray("num_layers_per_pipeline_rank 4             should be divisible by vp_size 3");
    QTest::newRow("RT3 will")
        << main << QByteArray("RT3")
        << QByteArray(
               R"({"num_moe_experts": 4, "recompute_granularity": "selective", "recompute_modules": ["layernorm"], "cuda_graph_impl": "transformer_engine", "cuda_graph_modules": ["moe_router"]})")
        << QByteArray("pre_mlp_layernorm recompute is only supported with moe router + preprocess cudagraph "
                      "will alltoall token dispatcher or latent MoE. Disabling pre_mlp_layernorm recompute.");
}

void TestRules::exactMessages()
{
    QFETCH(int, profile);
    QFETCH(QByteArray, id);
    QFETCH(QByteArray, patch);
    QFETCH(QByteArray, message);
    const Validation v
        = validate(recipeFromJson(recipeJson(patch.toStdString(), static_cast<Profile>(profile))));
    const Finding* f = findFinding(v, id.toStdString(), "");
    QVERIFY2(f, QByteArray("no " + id + " among:" + describe(v)).constData());
    // Several rows of one rule (R19): look for the exact one.
    bool found = false;
    for (const auto& g : v.findings)
        found = found || (g.rule_id == id.toStdString() && g.message == message.toStdString());
    QVERIFY2(found, QByteArray("no exact message among:" + describe(v)).constData());
}

void TestRules::adjustmentsResolved_data()
{
    QTest::addColumn<QByteArray>("format");
    QTest::addColumn<QByteArray>("patch");
    QTest::addColumn<QByteArray>("id");
    QTest::addColumn<QByteArray>("resolved"); // a JSON object: these keys of recipeToJson(resolved)
    QTest::newRow("R10 default modules") << QByteArray("json") << QByteArray("{}") << QByteArray("R10")
                                         << QByteArray(R"({"recompute_modules": ["core_attn"]})");
    QTest::newRow("R19 g None -> selective, core_attn + moe")
        << QByteArray("json") << QByteArray(R"({"moe_layer_recompute": true, "num_moe_experts": 4})")
        << QByteArray("R19")
        << QByteArray(
               R"({"recompute_granularity": "selective", "recompute_modules": ["core_attn", "moe"], "moe_layer_recompute": false})");
    QTest::newRow("R19 moe not doubled")
        << QByteArray("json")
        << QByteArray(R"({"moe_layer_recompute": true, "num_moe_experts": 4, "recompute_modules": ["moe"]})")
        << QByteArray("R19")
        << QByteArray(R"({"recompute_granularity": "selective", "recompute_modules": ["moe"]})");
    QTest::newRow("R25 enable_cuda_graph")
        << QByteArray("json") << QByteArray(R"({"enable_cuda_graph": true})") << QByteArray("R25")
        << QByteArray(R"({"cuda_graph_impl": "local", "enable_cuda_graph": false})");
    QTest::newRow("R25 external_cuda_graph")
        << QByteArray("json") << QByteArray(R"({"external_cuda_graph": true})") << QByteArray("R25")
        << QByteArray(R"({"cuda_graph_impl": "transformer_engine"})");
    QTest::newRow("R26 scope moves")
        << QByteArray("json") << QByteArray(R"({"cuda_graph_scope": ["attn", "mlp"]})") << QByteArray("R26")
        << QByteArray(R"({"cuda_graph_modules": ["attn", "mlp"], "cuda_graph_scope": null})");
    QTest::newRow("R26 full -> []") << QByteArray("json") << QByteArray(R"({"cuda_graph_modules": ["full"]})")
                                    << QByteArray("R26") << QByteArray(R"({"cuda_graph_modules": []})");
    QTest::newRow("R26 full_iteration")
        << QByteArray("json") << QByteArray(R"({"cuda_graph_modules": ["full_iteration"]})")
        << QByteArray("R26")
        << QByteArray(R"({"cuda_graph_impl": "full_iteration", "cuda_graph_modules": []})");
    QTest::newRow("R29 router brings preprocess")
        << QByteArray("json")
        << QByteArray(R"({"cuda_graph_impl": "local", "cuda_graph_modules": ["moe_preprocess"]})")
        << QByteArray("R29") << QByteArray(R"({"cuda_graph_modules": ["moe_preprocess", "moe_router"]})");
    QTest::newRow("B1 SP off") << QByteArray("bridge") << QByteArray(R"({"sequence_parallel": true})")
                               << QByteArray("B1") << QByteArray(R"({"sequence_parallel": false})");
    QTest::newRow("B12 expert-TP 1") << QByteArray(
        "bridge") << QByteArray(R"({"num_moe_experts": 8, "expert_model_parallel_size": 2})")
                                     << QByteArray("B12")
                                     << QByteArray(R"({"expert_tensor_parallel_size": 1})");
    QTest::newRow("B2 modules cleared")
        << QByteArray("bridge") << QByteArray(R"({"cuda_graph_modules": ["attn"]})") << QByteArray("B2")
        << QByteArray(R"({"cuda_graph_modules": []})");
    QTest::newRow("B8 delayed")
        << QByteArray("bridge")
        << QByteArray(
               R"({"mixed_precision": "bf16_with_fp8_delayed_scaling_mixed", "fp8_recipe": "tensorwise"})")
        << QByteArray("B8") << QByteArray(R"({"fp8": "hybrid", "fp8_recipe": "delayed", "bf16": true})");
    QTest::newRow("B8 current -> tensorwise")
        << QByteArray("bridge") << QByteArray(R"({"mixed_precision": "bf16_with_fp8_current_scaling_mixed"})")
        << QByteArray("B8") << QByteArray(R"({"fp8": "hybrid", "fp8_recipe": "tensorwise"})");
    QTest::newRow("B8 nvfp4") << QByteArray("bridge")
                              << QByteArray(R"({"mixed_precision": "bf16_with_nvfp4_mixed"})")
                              << QByteArray("B8") << QByteArray(R"({"fp4": "e2m1", "fp8": null})");
    QTest::newRow("M2 recompute-activations")
        << QByteArray("flags") << QByteArray(R"({"recompute_activations": true})") << QByteArray("M2")
        << QByteArray(R"({"recompute_granularity": "selective", "recompute_modules": ["core_attn"]})");
    QTest::newRow("M5 SP off") << QByteArray("flags") << QByteArray(R"({"sequence_parallel": true})")
                               << QByteArray("M5") << QByteArray(R"({"sequence_parallel": false})");
    QTest::newRow("M6 cpu offloading on")
        << QByteArray("flags") << QByteArray(R"({"cpu_offloading_num_layers": 3})") << QByteArray("M6")
        << QByteArray(R"({"cpu_offloading": true})");
}

void TestRules::adjustmentsResolved()
{
    QFETCH(QByteArray, format);
    QFETCH(QByteArray, patch);
    QFETCH(QByteArray, id);
    QFETCH(QByteArray, resolved);
    const Validation v = validate(
        recipeFromJson(recipeJson(patch.toStdString(), Profile::Main)), formatFromName(format.toStdString()));
    bool adjusted = false;
    for (const auto& f : v.findings)
        adjusted = adjusted || (f.rule_id == id.toStdString() && f.severity == Severity::Adjustment);
    QVERIFY2(adjusted, QByteArray("no " + id + " adjustment among:" + describe(v)).constData());
    const nlohmann::json got = recipeToJson(v.resolved);
    const nlohmann::json want = nlohmann::json::parse(resolved.toStdString());
    for (auto it = want.begin(); it != want.end(); ++it) {
        const std::string& key = it.key();
        const nlohmann::json& value = it.value();
        QVERIFY2(got.at(key) == value,
            qPrintable(
                QString::fromStdString(key + ": got " + got.at(key).dump() + ", expected " + value.dump())));
    }
    // The resolved recipe is a fixed point: validating it adjusts nothing more.
    const Validation again = validate(v.resolved, formatFromName(format.toStdString()));
    for (const auto& f : again.findings)
        QVERIFY2(f.severity != Severity::Adjustment,
            QByteArray("adjusted again: " + QByteArray(f.rule_id.c_str()) + " " + f.message.c_str())
                .constData());
}

void TestRules::evaluationOrder()
{
    auto run = [](const char* patch, InputFormat fmt = InputFormat::Json, Profile p = Profile::Main) {
        return validate(recipeFromJson(recipeJson(patch, p)), fmt);
    };
    // R19 runs after the label checks: the 'moe' it appends is not label-checked (no RS/R error about a
    // dense model's 'moe' from R11-R18), but R36, later, sees it.
    {
        const Validation v = run(
            R"({"moe_layer_recompute": true, "num_moe_experts": 8, "moe_grouped_gemm": true, "expert_model_parallel_size": 2,
            "moe_token_dispatcher_type": "alltoall", "comm_overlap": {"overlap_moe_expert_parallel_comm": true}})");
        const int r10 = indexOf(v, "R10"), r15 = indexOf(v, "R15"), r19 = indexOf(v, "R19", "-> 'selective'"),
                  r36 = indexOf(v, "R36", "disable moe");
        QVERIFY2(r10 >= 0 && r19 > r10 && r36 > r19, describe(v));
        QCOMPARE(r15, -1); // g was None during the label checks: R15 did not see core_attn under selective
    }
    // The same under Bridge: B4 checks the modules as given (no 'moe' yet), R36 still fires at finalize.
    {
        const Validation v = run(
            R"({"moe_layer_recompute": true, "num_moe_experts": 8, "moe_grouped_gemm": true, "expert_model_parallel_size": 2,
            "moe_token_dispatcher_type": "alltoall", "comm_overlap": {"overlap_moe_expert_parallel_comm": true}})",
            InputFormat::BridgeOverrides);
        QCOMPARE(indexOf(v, "B4"), -1);
        QVERIFY2(indexOf(v, "R36", "disable moe") > indexOf(v, "R19", "-> 'selective'"), describe(v));
    }
    // Under Bridge, B4 says it first and R36 does not repeat it.
    {
        const Validation v = run(
            R"({"num_moe_experts": 8, "expert_model_parallel_size": 2, "moe_token_dispatcher_type": "alltoall",
            "comm_overlap": {"overlap_moe_expert_parallel_comm": true}, "recompute_granularity": "selective", "recompute_modules": ["moe"]})",
            InputFormat::BridgeOverrides);
        QVERIFY2(indexOf(v, "B4", "disable moe") >= 0 && indexOf(v, "R36", "disable moe") == -1, describe(v));
        QVERIFY(indexOf(v, "B4") < indexOf(v, "B2"));
    }
    // R10's default is in place before the label checks: R15 sees core_attn.
    {
        const Validation v = run(R"({"recompute_granularity": "selective"})");
        QVERIFY2(indexOf(v, "R10") >= 0 && indexOf(v, "R15") > indexOf(v, "R10"), describe(v));
    }
    // Megatron raises the first error listed: R02 comes before R03, MPC before TC.
    {
        const Validation v = run(
            R"({"cpu_offloading": true, "pipeline_model_parallel_size": 2, "recompute_granularity": "selective", "sequence_parallel": true})");
        QVERIFY2(indexOf(v, "MP1") >= 0 && indexOf(v, "MP1") < indexOf(v, "R02")
                && indexOf(v, "R02") < indexOf(v, "R03"),
            describe(v));
        const auto firstError = std::find_if(v.findings.begin(), v.findings.end(),
            [](const Finding& f) { return f.severity == Severity::Error; });
        QCOMPARE(QByteArray(firstError->rule_id.c_str()), QByteArray("MP1"));
    }
    // B8 rewrites precision before MCore: delayed scaling from the Bridge recipe triggers R17 ...
    {
        const char* p
            = R"({"mixed_precision": "bf16_with_fp8_delayed_scaling_mixed", "num_moe_experts": 8, "moe_grouped_gemm": true,
            "recompute_granularity": "selective", "recompute_modules": ["moe_act"]})";
        const Validation bridge = run(p, InputFormat::BridgeOverrides);
        QVERIFY2(
            indexOf(bridge, "B8") >= 0 && indexOf(bridge, "R17") > indexOf(bridge, "B8"), describe(bridge));
        // ... while JSON keeps the written (unset) fp8 and says that mixed_precision is not applied.
        const Validation json = run(p);
        QVERIFY2(indexOf(json, "R17") == -1 && indexOf(json, "RS20") >= 0, describe(json));
    }
    // ... and a current-scaling recipe (tensorwise) clears R17 that MCore's default (delayed) would raise.
    {
        const char* p
            = R"({"mixed_precision": "bf16_with_fp8_current_scaling_mixed", "fp8": "hybrid", "num_moe_experts": 8,
            "moe_grouped_gemm": true, "recompute_granularity": "selective", "recompute_modules": ["moe_act"]})";
        QCOMPARE(indexOf(run(p, InputFormat::BridgeOverrides), "R17"), -1);
        QVERIFY(indexOf(run(p), "R17") >= 0);
    }
    // Megatron-LM: M2 turns on selective before M4 and before TC's checks.
    {
        const Validation v = run(
            R"({"recompute_activations": true, "recompute_method": "uniform"})", InputFormat::MegatronFlags);
        QVERIFY2(indexOf(v, "M2") >= 0 && indexOf(v, "M4") > indexOf(v, "M2"), describe(v));
    }
    // R29's additions come before the recompute checks: a local moe_preprocess graph gains moe_router.
    {
        const Validation v = run(
            R"({"cuda_graph_impl": "local", "cuda_graph_modules": ["moe_preprocess"], "num_moe_experts": 8,
            "recompute_granularity": "selective", "recompute_modules": ["moe"], "hidden_dropout": 0.0})");
        QVERIFY2(indexOf(v, "R29") >= 0 && indexOf(v, "RT5") > indexOf(v, "R29"), describe(v));
    }
}

void TestRules::fixitsClear_data()
{
    QTest::addColumn<int>("profile");
    QTest::addColumn<QByteArray>("format");
    QTest::addColumn<QByteArray>("id");
    QTest::addColumn<QByteArray>("key");
    QTest::addColumn<QByteArray>("patch");
    int n = 0;
    for (const Case& c : cases()) {
        if (!c.fires)
            continue;
        for (Profile p : profilesOf(c.profiles)) {
            // Only findings that carry a fix-it (adjustments and notes mostly do not).
            const Validation v = validate(recipeFromJson(recipeJson(c.patch, p)), formatFromName(c.format));
            const Finding* f = findFinding(v, c.id, c.key);
            if (f && !f->fixit)
                continue;
            const QByteArray name
                = QByteArray(c.id) + " " + c.key + " " + profileName(p) + " #" + QByteArray::number(n++);
            QTest::newRow(name.constData()) << static_cast<int>(p) << QByteArray(c.format) << QByteArray(c.id)
                                            << QByteArray(c.key) << QByteArray(c.patch);
        }
    }
}

// Applying a fix-it (merge its patch into recipeToJson(input), read it back) removes the finding.
void TestRules::fixitsClear()
{
    QFETCH(int, profile);
    QFETCH(QByteArray, format);
    QFETCH(QByteArray, id);
    QFETCH(QByteArray, key);
    QFETCH(QByteArray, patch);
    const InputFormat fmt = formatFromName(format.toStdString());
    const Recipe input = recipeFromJson(recipeJson(patch.toStdString(), static_cast<Profile>(profile)));
    const Validation v = validate(input, fmt);
    const Finding* f = findFinding(v, id.toStdString(), key.toStdString());
    QVERIFY2(f, describe(v));
    QVERIFY(f->fixit && !f->fixit->description.empty());
    QVERIFY(f->fixit->patch.is_object() && !f->fixit->patch.empty());
    nlohmann::json fixed = recipeToJson(input);
    fixed.merge_patch(f->fixit->patch);
    const Validation after = validate(recipeFromJson(fixed, "fixed"), fmt);
    for (const auto& g : after.findings)
        QVERIFY2(!(g.rule_id == f->rule_id && g.message == f->message),
            QByteArray(
                "still there after " + QByteArray(f->fixit->patch.dump().c_str()) + ":" + describe(after))
                .constData());
}

// Issue 29 item 5: R11's Fix for a mistyped label applies the "did you mean" (the studio's hint and the fix
// read one suggestion, suggestedRecomputeLabel), so a candidate never silently becomes the [] control; a
// label no known one is near is dropped, and dropping every label says it leaves the control.
void TestRules::r11FixAppliesTheSuggestion_data()
{
    QTest::addColumn<QByteArray>("modules"); // the recipe's recompute_modules, JSON
    QTest::addColumn<QByteArray>("fixed"); // the fix-it's recompute_modules, JSON
    QTest::addColumn<QByteArray>("describes"); // in the fix-it's description
    QTest::newRow("core_atn") << QByteArray(R"(["core_atn"])") << QByteArray(R"(["core_attn"])")
                              << QByteArray("replace 'core_atn' with 'core_attn'");
    QTest::newRow("moe_act, core_atn")
        << QByteArray(R"(["moe_act","core_atn"])") << QByteArray(R"(["moe_act","core_attn"])")
        << QByteArray("replace 'core_atn' with 'core_attn'");
    QTest::newRow("core_attn twice after the fix")
        << QByteArray(R"(["core_attn","core_atn"])") << QByteArray(R"(["core_attn"])")
        << QByteArray("replace 'core_atn'");
    QTest::newRow("MOE_ACT (case)") << QByteArray(R"(["MOE_ACT"])") << QByteArray(R"(["moe_act"])")
                                    << QByteArray("with 'moe_act'");
    QTest::newRow("a word no label is near") << QByteArray(R"(["moe_act","banana"])")
                                             << QByteArray(R"(["moe_act"])") << QByteArray("drop 'banana'");
    QTest::newRow("nothing left: said")
        << QByteArray(R"(["banana"])") << QByteArray("[]") << QByteArray("the no-recompute control");
}

void TestRules::r11FixAppliesTheSuggestion()
{
    QFETCH(QByteArray, modules);
    QFETCH(QByteArray, fixed);
    QFETCH(QByteArray, describes);
    const std::string patch
        = std::string(R"({"recompute_granularity": "selective", "moe_grouped_gemm": true, )")
        + R"("num_moe_experts": 8, "recompute_modules": )" + modules.toStdString() + "}";
    const Validation v = validate(recipeFromJson(recipeJson(patch, Profile::Main)));
    const Finding* f = findFinding(v, "R11", "");
    QVERIFY2(f && f->fixit, describe(v));
    QCOMPARE(QByteArray(f->fixit->patch.at("recompute_modules").dump().c_str()), fixed);
    QVERIFY2(f->fixit->description.find(describes.toStdString()) != std::string::npos,
        f->fixit->description.c_str());
}

// Issue 29 item 10: under unfused attention core_attn is the common first candidate (RS21's fix adds it),
// so R15 (Megatron's own warning about core_attn) offers no fix that drops it there; under fused attention
// it still does.
void TestRules::unfusedAttentionFixitsAgree_data()
{
    QTest::addColumn<QByteArray>("backend");
    QTest::addColumn<bool>("r15Drops");
    QTest::newRow("unfused") << QByteArray("unfused") << false;
    QTest::newRow("fused") << QByteArray("fused") << true;
}

void TestRules::unfusedAttentionFixitsAgree()
{
    QFETCH(QByteArray, backend);
    QFETCH(bool, r15Drops);
    const std::string withLabel
        = R"({"recompute_granularity": "selective", "recompute_modules": ["core_attn"], )"
          R"("attention_backend": ")"
        + backend.toStdString() + "\"}";
    const Validation v = validate(recipeFromJson(recipeJson(withLabel, Profile::BridgePin)));
    const Finding* r15 = findFinding(v, "R15", "");
    QVERIFY2(r15, describe(v)); // Megatron's warning stays: it is Megatron's
    QCOMPARE(r15->fixit.has_value(), r15Drops);
    // Applying every fix-it offered never brings back a finding whose fix undoes it.
    if (!r15Drops) {
        const std::string without = R"({"recompute_granularity": "selective", "recompute_modules": ["mlp"], )"
                                    R"("attention_backend": "unfused"})";
        const Validation w = validate(recipeFromJson(recipeJson(without, Profile::BridgePin)));
        const Finding* rs21 = findFinding(w, "RS21", "");
        QVERIFY2(rs21 && rs21->fixit, describe(w));
        nlohmann::json fixed = recipeToJson(recipeFromJson(recipeJson(without, Profile::BridgePin)));
        fixed.merge_patch(rs21->fixit->patch);
        const Validation after = validate(recipeFromJson(fixed, "fixed"));
        const Finding* again = findFinding(after, "R15", "");
        QVERIFY(!again || !again->fixit);
    }
}

void TestRules::catalogue()
{
    const auto& cat = ruleCatalogue();
    QVERIFY(cat.size() > 80);
    for (const auto& row : rules_detail::ruleRows()) {
        const RuleInfo* r = findRule(row.id);
        QVERIFY2(r, row.id);
        QVERIFY(!r->message.empty() && !r->source.empty() && !r->summary.empty() && !r->profiles.empty());
        QVERIFY(!r->variants.empty());
    }
    QCOMPARE(findRule("R99"), nullptr);
    // Per-profile differences are visible: R14's message differs at the guide's commit, R11's sources.
    const RuleInfo* r14 = findRule("R14");
    QVERIFY(r14->variants.size() >= 2);
    QVERIFY(std::any_of(r14->variants.begin(), r14->variants.end(), [](const RuleVariant& v) {
        return v.message.find("'gated_delta_net'") != std::string::npos
            && std::find(v.profiles.begin(), v.profiles.end(), Profile::Guide) != v.profiles.end();
    }));
    const RuleInfo* r30 = findRule("R30");
    QCOMPARE(r30->severity, Severity::Error);
    QVERIFY(r30->source.find("transformer_config.py:2854-2858 @ Megatron-LM d98e8a64") != std::string::npos);
    bool pin = false;
    for (const auto& v : r30->variants)
        pin = pin
            || v.source.find("transformer_config.py:2613-2617 @ Megatron-LM 2a75ac12") != std::string::npos;
    QVERIFY(pin);
    // main-only rules say so.
    const RuleInfo* r22 = findRule("R22");
    QCOMPARE(r22->profiles.size(), size_t(1));
    QCOMPARE(r22->profiles.front(), Profile::Main);
    QCOMPARE(allowedRecomputeModules(Profile::BridgePin).size(), size_t(8));
    QCOMPARE(allowedRecomputeModules(Profile::Main).size(), size_t(11));
    QCOMPARE(allowedRecomputeModules(Profile::Dev).size(), size_t(10));
}

void TestRules::labelEffects_data()
{
    QTest::addColumn<QByteArray>("patch");
    QTest::addColumn<QByteArray>("label");
    QTest::addColumn<bool>("exists");
    QTest::addColumn<bool>("effect");
    QTest::newRow("mlp dense") << QByteArray("{}") << QByteArray("mlp") << true << true;
    QTest::newRow("mlp pure MoE") << QByteArray(R"({"num_moe_experts": 8})") << QByteArray("mlp") << true
                                  << false;
    QTest::newRow("mlp one dense layer")
        << QByteArray(R"({"num_moe_experts": 8, "moe_layer_freq": [0,1,1,1,1,1,1,1]})") << QByteArray("mlp")
        << true << true;
    QTest::newRow("mlp every 2nd MoE")
        << QByteArray(R"({"num_moe_experts": 8, "moe_layer_freq": 2})") << QByteArray("mlp") << true << true;
    QTest::newRow("layernorm TE dense") << QByteArray("{}") << QByteArray("layernorm") << true << false;
    QTest::newRow("layernorm TE MoE")
        << QByteArray(R"({"num_moe_experts": 8})") << QByteArray("layernorm") << true << true;
    QTest::newRow("layernorm TE MLA")
        << QByteArray(R"({"multi_latent_attention": true})") << QByteArray("layernorm") << true << true;
    QTest::newRow("layernorm local") << QByteArray(R"({"transformer_impl": "local"})")
                                     << QByteArray("layernorm") << true << true;
    QTest::newRow("moe_act dense") << QByteArray("{}") << QByteArray("moe_act") << true << false;
    QTest::newRow("moe_act grouped") << QByteArray(R"({"num_moe_experts": 8, "moe_grouped_gemm": true})")
                                     << QByteArray("moe_act") << true << true;
    QTest::newRow("shared_experts none")
        << QByteArray(R"({"num_moe_experts": 8})") << QByteArray("shared_experts") << true << false;
    QTest::newRow("shared_experts overlapped") << QByteArray(
        R"({"num_moe_experts": 8, "moe_shared_expert_intermediate_size": 256, "moe_shared_expert_overlap": true})")
                                               << QByteArray("shared_experts") << true << false;
    QTest::newRow("shared_experts real")
        << QByteArray(R"({"num_moe_experts": 8, "moe_shared_expert_intermediate_size": 256})")
        << QByteArray("shared_experts") << true << true;
    QTest::newRow("mla_up_proj no MLA") << QByteArray("{}") << QByteArray("mla_up_proj") << true << false;
    QTest::newRow("mhc on pin") << QByteArray(R"({"profile": "bridge-pin"})") << QByteArray("mhc") << false
                                << false;
    QTest::newRow("mhc on main, on") << QByteArray(R"({"profile": "main", "enable_mhc_connections": true})")
                                     << QByteArray("mhc") << true << true;
    QTest::newRow("mhc on dev needs hyper")
        << QByteArray(R"({"profile": "dev", "enable_mhc_connections": true})") << QByteArray("mhc") << true
        << false;
    QTest::newRow("gdn on main") << QByteArray(R"({"profile": "main"})") << QByteArray("gdn") << false
                                 << false;
    QTest::newRow("core_attn fused") << QByteArray("{}") << QByteArray("core_attn") << true << true;
    QTest::newRow("core_attn hybrid without '*'")
        << QByteArray(R"({"hybrid_layer_pattern": "MEMEMEME", "num_moe_experts": 8})")
        << QByteArray("core_attn") << true << false;
    QTest::newRow("core_attn hybrid with '*'")
        << QByteArray(R"({"hybrid_layer_pattern": "M*MEMEME", "num_moe_experts": 8})")
        << QByteArray("core_attn") << true << true;
    QTest::newRow("mlp hybrid without '-'")
        << QByteArray(R"({"hybrid_layer_pattern": "M*M*M*M*"})") << QByteArray("mlp") << true << false;
    QTest::newRow("mlp hybrid with '-'")
        << QByteArray(R"({"hybrid_layer_pattern": "M*M-M*M-"})") << QByteArray("mlp") << true << true;
    QTest::newRow("layernorm hybrid MoE")
        << QByteArray(R"({"hybrid_layer_pattern": "M*MEMEME", "num_moe_experts": 8})")
        << QByteArray("layernorm") << true << true;
    QTest::newRow("layernorm hybrid without MoE")
        << QByteArray(R"({"hybrid_layer_pattern": "M*M-M*M-"})") << QByteArray("layernorm") << true << false;
    QTest::newRow("gdn_norm_out variant, no GatedDeltaNet layer")
        << QByteArray(R"({"profile": "main", "experimental_attention_variant": "gdn"})")
        << QByteArray("gdn_norm_out") << true << false;
    QTest::newRow("gdn_norm_out hybrid 'G'") << QByteArray(
        R"({"profile": "main", "experimental_attention_variant": "gdn", "hybrid_layer_pattern": "G*G-G*G-"})")
                                             << QByteArray("gdn_norm_out") << true << true;
    QTest::newRow("gdn_norm_out GPT linear_attention_freq") << QByteArray(
        R"({"profile": "guide", "experimental_attention_variant": "gated_delta_net", "linear_attention_freq": 4})")
                                                            << QByteArray("gdn_norm_out") << true << true;
}

void TestRules::labelEffects()
{
    QFETCH(QByteArray, patch);
    QFETCH(QByteArray, label);
    QFETCH(bool, exists);
    QFETCH(bool, effect);
    nlohmann::json j = nlohmann::json::parse(kBase);
    j.merge_patch(nlohmann::json::parse(patch.toStdString()));
    const LabelEffect e = recomputeLabelEffect(recipeFromJson(j), label.toStdString());
    QCOMPARE(e.exists, exists);
    QCOMPARE(e.has_effect, effect);
    QVERIFY(!e.reason.empty());
}

void TestRules::findingJsonShape()
{
    const Validation v = validate(recipeFromJson(recipeJson(
        R"({"recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 1, "cuda_graph_impl": "transformer_engine"})",
        Profile::Main)));
    QVERIFY(v.hasErrors());
    const Finding* f = findFinding(v, "R30", "");
    QVERIFY(f);
    const nlohmann::json j = findingToJson(*f);
    QCOMPARE(QByteArray(j.at("rule_id").get<std::string>().c_str()), QByteArray("R30"));
    QCOMPARE(QByteArray(j.at("severity").get<std::string>().c_str()), QByteArray("error"));
    QVERIFY(j.at("fields").is_array() && j.at("fields").size() == 2);
    QCOMPARE(
        j.at("fixit").at("patch").at("cuda_graph_impl").get<std::string>(), std::string("full_iteration"));
    QVERIFY(j.at("source").get<std::string>().find("d98e8a64") != std::string::npos);
    Recipe small;
    small.num_layers = 2;
    small.hidden_size = 64;
    small.num_attention_heads = 4;
    QVERIFY(!validate(small).hasErrors());
    QVERIFY(validate(Recipe {}).hasErrors()); // no layers, no hidden size, no heads: RS23
}

// The profile table: names unique, based_on known, one reference profile, the generated flag table of each
// profile read at the table's commit, and the facts the rules read.
void TestRules::profileTable_data()
{
    QTest::addColumn<QByteArray>("name");
    for (const ProfileInfo& p : rs::profileTable())
        QTest::newRow(p.name) << QByteArray(p.name);
}

void TestRules::profileTable()
{
    QFETCH(QByteArray, name);
    const ProfileInfo* p = findProfileInfo(name.toStdString());
    QVERIFY(p);
    QCOMPARE(QByteArray(profileName(p->id)), name);
    QCOMPARE(profileFromName(name.toStdString()), std::optional<Profile>(p->id));
    QCOMPARE(&profileInfo(p->id), p);
    QCOMPARE(std::strlen(p->megatron_commit), size_t(40));
    QCOMPARE(std::strlen(p->bridge_commit), size_t(40));
    QCOMPARE(QByteArray(megatronArgTable(p->id).commit), QByteArray(p->megatron_commit));
    QVERIFY(megatronArgTable(p->id).count > 0);
    QVERIFY(!p->based_on || findProfileInfo(p->based_on));
    QVERIFY(profileIsOrIsBasedOn(p->id, p->name));
    QCOMPARE(allowedRecomputeModules(p->id), p->recompute_labels);
    QVERIFY(!p->recompute_labels.empty());
    const bool mhc = std::find(p->recompute_labels.begin(), p->recompute_labels.end(), "mhc")
        != p->recompute_labels.end();
    QCOMPARE(mhc, !p->hyper_connections_flag.empty()); // the label exists where its switch does
    int references = 0, same = 0;
    for (const ProfileInfo& q : rs::profileTable()) {
        references += q.reference ? 1 : 0;
        same += name == q.name ? 1 : 0;
    }
    QCOMPARE(references, 1);
    QCOMPARE(same, 1);
}

// Every rule's profile list and sources name only profiles of the table ("*" = all).
void TestRules::sourcesNameKnownProfiles()
{
    QStringList bad;
    for (const auto& row : rules_detail::ruleRows())
        for (const auto& name : rules_detail::unknownProfileNames(row))
            bad << QString::fromUtf8(row.id) + QStringLiteral(": ") + QString::fromStdString(name);
    QVERIFY2(bad.isEmpty(), qPrintable(bad.join(QLatin1Char('\n'))));
    // and every row exists somewhere
    for (const auto& row : rules_detail::ruleRows()) {
        bool somewhere = false;
        for (Profile p : allProfiles())
            somewhere = somewhere || rules_detail::rowExists(row, p);
        QVERIFY2(somewhere, row.id);
    }
}

// Every profile of the table resolves a source for every rule that exists there: its own, or the nearest
// one given (cited at that commit, saying so).
void TestRules::everyProfileResolvesEverySource_data()
{
    QTest::addColumn<int>("profile");
    for (const ProfileInfo& p : rs::profileTable())
        QTest::newRow(p.name) << static_cast<int>(p.id);
}

void TestRules::everyProfileResolvesEverySource()
{
    QFETCH(int, profile);
    const Profile p = static_cast<Profile>(profile);
    QStringList missing;
    for (const auto& row : rules_detail::ruleRows()) {
        if (!rules_detail::rowExists(row, p))
            continue;
        const std::string src = rules_detail::rowSource(row, p);
        if (src.empty())
            missing << QString::fromUtf8(row.id) + QStringLiteral(": no source");
    }
    QVERIFY2(missing.isEmpty(), qPrintable(missing.join(QLatin1Char('\n'))));
}

namespace {

// The anchors of docs/rules.md as GitHub makes them from headings: lower case, punctuation dropped,
// spaces as hyphens.
QSet<QString> docsAnchors(const QString& path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly | QIODevice::Text))
        return {};
    QSet<QString> out;
    while (!f.atEnd()) {
        const QString line = QString::fromUtf8(f.readLine()).trimmed();
        if (!line.startsWith(u'#'))
            continue;
        const QString title = line.mid(line.indexOf(u' ') + 1).trimmed().toLower();
        QString slug;
        for (const QChar ch : title) {
            if (ch.isLetterOrNumber() || ch == u'-' || ch == u'_')
                slug += ch;
            else if (ch == u' ')
                slug += u'-';
        }
        out.insert(slug);
    }
    return out;
}

const QString kRulesDoc = QStringLiteral(RS_SOURCE_DIR "/docs/rules.md");

} // namespace

// Every rule's source, at every profile, is a file of the repository's readers can follow: a Megatron or
// Bridge file:line (at a commit the source names) or a section of docs/rules.md; none cites the study
// notes outside the repository.
void TestRules::sourcesPointIntoTheRepository()
{
    QStringList bad;
    const QRegularExpression fileLine(QStringLiteral(R"(^[\w./()-]+\.(py|md)(:\d|#[a-z0-9-]+))"));
    for (const auto& row : rules_detail::ruleRows()) {
        for (Profile p : allProfiles()) {
            if (!rules_detail::rowExists(row, p))
                continue;
            const QString src = QString::fromStdString(rules_detail::rowSource(row, p));
            if (src.contains(u"megatron-rules.md"_qs) || src.contains(u"recompute-guide.md"_qs))
                bad << QString::fromUtf8(row.id) + u": "_qs + src;
            // "file:line @ Megatron-LM d98e8a64 (main; note)": the commit and the note aside, each part.
            QString files = src;
            files.remove(QRegularExpression(QStringLiteral(R"( ?\([^)]*\))")));
            files.remove(QRegularExpression(QStringLiteral(R"( @ Megatron-(LM|Bridge) [0-9a-f]{8})")));
            for (const QString& part : files.split(u"; "_qs)) {
                if (!fileLine.match(part).hasMatch())
                    bad << QString::fromUtf8(row.id) + u" (" + QString::fromLatin1(profileName(p))
                            + u"): '"_qs + part + u"' is no file:line nor docs/rules.md#section"_qs;
            }
        }
    }
    bad.removeDuplicates();
    QVERIFY2(bad.isEmpty(), qPrintable(bad.join(QLatin1Char('\n'))));
}

// Every docs/rules.md#anchor a rule cites exists in docs/rules.md, and every rule id has its section.
void TestRules::docsAnchorsExist()
{
    const QSet<QString> anchors = docsAnchors(kRulesDoc);
    QVERIFY2(!anchors.isEmpty(), qPrintable(kRulesDoc + u" is missing or has no headings"_qs));
    QStringList missing;
    int cited = 0;
    const QRegularExpression link(QStringLiteral(R"(docs/rules\.md#([a-z0-9_-]+))"));
    for (const auto& row : rules_detail::ruleRows()) {
        if (!anchors.contains(QString::fromUtf8(row.id).toLower()))
            missing << QString::fromUtf8(row.id) + u": no section"_qs;
        for (Profile p : allProfiles()) {
            const QString src = QString::fromStdString(rules_detail::rowSource(row, p));
            for (auto it = link.globalMatch(src); it.hasNext();) {
                const QString anchor = it.next().captured(1);
                ++cited;
                if (!anchors.contains(anchor))
                    missing << QString::fromUtf8(row.id) + u": #"_qs + anchor;
            }
        }
    }
    missing.removeDuplicates();
    QVERIFY2(missing.isEmpty(), qPrintable(missing.join(QLatin1Char('\n'))));
    QVERIFY(cited > 0);
    // The sections the rule documentation links to among themselves exist too.
    QFile f(kRulesDoc);
    QVERIFY(f.open(QIODevice::ReadOnly | QIODevice::Text));
    const QString text = QString::fromUtf8(f.readAll());
    const QRegularExpression local(QStringLiteral(R"(\]\(#([a-z0-9_-]+)\))"));
    for (auto it = local.globalMatch(text); it.hasNext();) {
        const QString anchor = it.next().captured(1);
        QVERIFY2(anchors.contains(anchor), qPrintable(u"docs/rules.md links to #"_qs + anchor));
    }
}

QTEST_GUILESS_MAIN(TestRules)
#include "tst_rules.moc"
