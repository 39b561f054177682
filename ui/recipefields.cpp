// SPDX-License-Identifier: Apache-2.0
#include "recipefields.h"

#include <algorithm>

namespace rs::ui {

namespace {
using K = FieldKind;
}

const std::vector<FieldSpec>& recipeFields()
{
    // Order is display order. Tips name Megatron's meaning in a line; the domain guide has the rest.
    static const std::vector<FieldSpec> fields = {
        // --- Model ---
        { "name", "Model", "", K::Text, "Name", "Free text, ours: shown in reports and the runs table.", {} },
        { "num_layers", "Model", "Shape", K::Int, "num_layers", "Transformer layers in the whole model.",
            {} },
        { "hidden_size", "Model", "Shape", K::Int, "hidden_size", "Model width.", {} },
        { "ffn_hidden_size", "Model", "Shape", K::OptionalInt, "ffn_hidden_size",
            "Dense MLP width. None: 4 × hidden_size (TransformerConfig.__post_init__).", {} },
        { "num_attention_heads", "Model", "Shape", K::Int, "num_attention_heads", "Attention heads.", {} },
        { "num_query_groups", "Model", "Shape", K::OptionalInt, "num_query_groups",
            "GQA groups. None: = num_attention_heads (multi-head attention).", {} },
        { "kv_channels", "Model", "Shape", K::OptionalInt, "kv_channels",
            "Head dimension. None: hidden_size / num_attention_heads.", {} },
        { "seq_length", "Model", "Shape", K::Int, "seq_length", "Sequence length in tokens.", {} },
        { "micro_batch_size", "Model", "Shape", K::Int, "micro_batch_size", "Sequences per micro-batch.",
            {} },
        { "global_batch_size", "Model", "Shape", K::OptionalInt, "global_batch_size",
            "Sequences per optimizer step over all data-parallel ranks.", {} },
        { "create_attention_mask_in_dataloader", "Model", "Shape", K::Bool,
            "create_attention_mask_in_dataloader",
            "The dataloader's bool [b, 1, s, s] mask on the GPU: Megatron-LM's default; a Bridge job "
            "skips it (dataset.skip_getting_attention_mask_from_dataset).",
            {} },
        { "normalization", "Model", "Shape", K::Choice, "normalization", "LayerNorm or RMSNorm.",
            { "LayerNorm", "RMSNorm" } },
        { "gated_linear_unit", "Model", "Shape", K::Bool, "gated_linear_unit",
            "Gated MLP; with activation_func=silu this is SwiGLU.", {} },
        { "activation_func", "Model", "Shape", K::Choice, "activation_func", "MLP activation.",
            { "gelu", "silu", "squared_relu" } },
        { "vocab_size", "Model", "Shape", K::Int, "vocab_size",
            "Ours: the size of the worker's loss head; no recompute choice depends on it.", {} },
        { "num_moe_experts", "Model", "Mixture of experts", K::OptionalInt, "num_moe_experts",
            "Routed experts per MoE layer. None: a dense model.", {} },
        { "moe_router_topk", "Model", "Mixture of experts", K::Int, "moe_router_topk",
            "Experts each token is routed to.", {} },
        { "moe_ffn_hidden_size", "Model", "Mixture of experts", K::OptionalInt, "moe_ffn_hidden_size",
            "Expert MLP width. None: ffn_hidden_size.", {} },
        { "moe_grouped_gemm", "Model", "Mixture of experts", K::Bool, "moe_grouped_gemm",
            "Grouped-GEMM experts (TEGroupedMLP); moe_act recompute needs it (R12).", {} },
        { "moe_shared_expert_intermediate_size", "Model", "Mixture of experts", K::OptionalInt,
            "moe_shared_expert_intermediate_size", "Shared-expert width. None: no shared expert.", {} },
        { "moe_shared_expert_overlap", "Model", "Mixture of experts", K::Bool, "moe_shared_expert_overlap",
            "Overlap the shared expert with dispatch; shared_experts recompute cannot be used with it (R16).",
            {} },
        { "moe_latent_size", "Model", "Mixture of experts", K::OptionalInt, "moe_latent_size",
            "Latent MoE: the routed experts' width (tokens dispatched at it, projected from and back to "
            "hidden_size). None: off.",
            {} },
        { "moe_layer_freq", "Model", "Mixture of experts", K::IntList, "moe_layer_freq",
            "1: every layer is MoE; N: every N-th; a list of 0/1 gives it layer by layer, e.g. [0,1,1,...] "
            "for one dense first layer.",
            {} },
        { "moe_token_dispatcher_type", "Model", "Mixture of experts", K::Choice, "moe_token_dispatcher_type",
            "Token dispatcher; EP overlap needs alltoall or flex.", { "allgather", "alltoall", "flex" } },
        { "moe_input_jitter_eps", "Model", "Mixture of experts", K::OptionalDouble, "moe_input_jitter_eps",
            "Router input jitter. Not supported with graphed moe recompute (R34).", {} },
        { "mtp_num_layers", "Model", "Mixture of experts", K::OptionalInt, "mtp_num_layers",
            "Multi-token-prediction depths after the decoder, each a layer of the last decoder layer's kind.",
            {} },
        { "mtp_use_repeated_layer", "Model", "Mixture of experts", K::Bool, "mtp_use_repeated_layer",
            "One MTP layer, run at every depth: one layer's parameters.", {} },
        // Hybrid stacks (Megatron Core's HybridModel; Bridge's HybridModelProvider / MambaModelProvider).
        { "hybrid_layer_pattern", "Model", "Hybrid (Mamba, GatedDeltaNet)", K::OptionalText,
            "hybrid_layer_pattern",
            "One symbol a layer: M Mamba, G GatedDeltaNet, * attention, - MLP, E MoE; '|' between pipeline "
            "segments. None: a GPT model. num_layers follows it.",
            {} },
        { "mtp_hybrid_override_pattern", "Model", "Hybrid (Mamba, GatedDeltaNet)", K::OptionalText,
            "mtp_hybrid_override_pattern",
            "One MTP depth's layers: the deprecated spelling of the pattern after '/', joined to a pattern "
            "without one.",
            {} },
        { "mamba_num_heads", "Model", "Hybrid (Mamba, GatedDeltaNet)", K::OptionalInt, "mamba_num_heads",
            "Mamba heads. None: 2 × hidden_size / mamba_head_dim.", {} },
        { "mamba_head_dim", "Model", "Hybrid (Mamba, GatedDeltaNet)", K::Int, "mamba_head_dim",
            "Mamba head width; heads × head width is the mixer's inner width.", {} },
        { "mamba_state_dim", "Model", "Hybrid (Mamba, GatedDeltaNet)", K::Int, "mamba_state_dim",
            "SSM state size (B and C width per group).", {} },
        { "mamba_num_groups", "Model", "Hybrid (Mamba, GatedDeltaNet)", K::Int, "mamba_num_groups",
            "B/C groups of the Mamba mixer.", {} },
        { "mamba_chunk_size", "Model", "Hybrid (Mamba, GatedDeltaNet)", K::Int, "mamba_chunk_size",
            "The SSD scan's chunk length.", {} },
        { "linear_attention_freq", "Model", "Hybrid (Mamba, GatedDeltaNet)", K::IntList,
            "linear_attention_freq",
            "GatedDeltaNet in a GPT model (experimental_attention_variant gdn): N (every N-th layer "
            "attention) or a 0/1 list (1: GatedDeltaNet). Empty: None.",
            {} },
        { "linear_num_key_heads", "Model", "Hybrid (Mamba, GatedDeltaNet)", K::Int, "linear_num_key_heads",
            "GatedDeltaNet key heads.", {} },
        { "linear_num_value_heads", "Model", "Hybrid (Mamba, GatedDeltaNet)", K::Int,
            "linear_num_value_heads", "GatedDeltaNet value heads.", {} },
        { "linear_key_head_dim", "Model", "Hybrid (Mamba, GatedDeltaNet)", K::Int, "linear_key_head_dim", "",
            {} },
        { "linear_value_head_dim", "Model", "Hybrid (Mamba, GatedDeltaNet)", K::Int, "linear_value_head_dim",
            "", {} },
        { "linear_conv_kernel_dim", "Model", "Hybrid (Mamba, GatedDeltaNet)", K::Int,
            "linear_conv_kernel_dim", "GatedDeltaNet's causal conv width.", {} },
        { "enable_mhc_connections", "Model", "Hyper-connections", K::Bool, "enable_mhc_connections",
            "mHC hyper-connections (main).", {} },
        { "enable_hyper_connections", "Model", "Hyper-connections", K::Bool, "enable_hyper_connections",
            "Hyper-connections (dev branch spelling).", {} },
        { "mhc_recompute_layer_num", "Model", "Hyper-connections", K::OptionalInt, "mhc_recompute_layer_num",
            "Layers per unified mhc recompute group.", {} },

        // --- Parallelism ---
        { "tensor_model_parallel_size", "Parallelism", "", K::Int, "tensor_model_parallel_size (TP)", "",
            {} },
        { "pipeline_model_parallel_size", "Parallelism", "", K::Int, "pipeline_model_parallel_size (PP)", "",
            {} },
        { "virtual_pipeline_model_parallel_size", "Parallelism", "", K::OptionalInt,
            "virtual_pipeline_model_parallel_size (VPP)",
            "Model chunks per pipeline rank; full recompute counts layers per chunk.", {} },
        { "context_parallel_size", "Parallelism", "", K::Int, "context_parallel_size (CP)",
            "Under CP an attention checkpoint can replay communication as well as compute.", {} },
        { "expert_model_parallel_size", "Parallelism", "", K::Int, "expert_model_parallel_size (EP)", "",
            {} },
        { "sequence_parallel", "Parallelism", "", K::Bool, "sequence_parallel",
            "Needs TP > 1; Bridge turns it off silently when TP = 1 (B1). MoE under TP needs it (RT16).",
            {} },
        { "pipeline_model_parallel_layout", "Parallelism", "Pipeline split", K::OptionalText,
            "pipeline_model_parallel_layout",
            "Megatron Core's layout: E embedding, t decoder layer, m MTP layer, L loss, '|' between stages, "
            "X*N and (...)*N repeat, e.g. Et|(tt|)*30mL. Its stages are PP × VPP chunks (stage v × PP + p is "
            "chunk v of rank p). None: the even split.",
            {} },
        { "num_layers_in_first_pipeline_stage", "Parallelism", "Pipeline split", K::OptionalInt,
            "num_layers_in_first_pipeline_stage",
            "Decoder layers of the first pipeline stage; the others split the rest evenly. Not with a "
            "layout.",
            {} },
        { "num_layers_in_last_pipeline_stage", "Parallelism", "Pipeline split", K::OptionalInt,
            "num_layers_in_last_pipeline_stage",
            "Decoder layers of the last pipeline stage; the others split the rest evenly. Not with a layout.",
            {} },
        { "account_for_embedding_in_pipeline_split", "Parallelism", "Pipeline split", K::Bool,
            "account_for_embedding_in_pipeline_split",
            "The even split counts the embedding as a layer: the first stage builds one decoder layer fewer.",
            {} },
        { "account_for_loss_in_pipeline_split", "Parallelism", "Pipeline split", K::Bool,
            "account_for_loss_in_pipeline_split",
            "The even split counts the loss as a layer: the last stage builds one decoder layer fewer.", {} },
        { "data_parallel_size", "Parallelism", "Memory layout", K::Int, "data_parallel_size (DP)",
            "World size / (TP × PP × CP): the micro-batches per step and the distributed optimizer's shards.",
            {} },
        { "use_distributed_optimizer", "Parallelism", "Memory layout", K::Bool, "use_distributed_optimizer",
            "fp32 main parameters and Adam moments sharded over DP (experts over expert-DP).", {} },
        { "grad_reduce_in_fp32", "Parallelism", "Memory layout", K::Bool, "grad_reduce_in_fp32",
            "fp32 DDP gradient buffer (Megatron-LM turns it on under bf16); off: the parameters' dtype.",
            {} },
        { "deallocate_pipeline_outputs", "Parallelism", "Memory layout", K::Bool,
            "deallocate_pipeline_outputs",
            "Free each sent chunk output, keep its autograd node. False in ModelParallelConfig, True from "
            "Megatron-LM and Bridge.",
            {} },

        // --- Precision ---
        { "bf16", "Precision", "", K::Bool, "bf16", "", {} },
        { "fp16", "Precision", "", K::Bool, "fp16", "", {} },
        { "fp8", "Precision", "", K::OptionalChoice, "fp8", "FP8 format. None: no FP8.",
            { "e4m3", "hybrid" } },
        { "fp8_recipe", "Precision", "", K::Choice, "fp8_recipe",
            "MCore default: delayed, which does not support moe_act / layernorm recompute (R17).",
            { "delayed", "tensorwise", "blockwise", "mxfp8" } },
        { "fp4", "Precision", "", K::OptionalChoice, "fp4", "FP4 format. None: no FP4.",
            { "e2m1", "nvfp4" } },
        { "mixed_precision", "Precision", "", K::OptionalChoice, "mixed_precision",
            "Bridge recipe name; it overwrites fp8, fp8_recipe and fp4 before validation (B8).", {} },
        { "te_version", "Precision", "", K::OptionalText, "te_version",
            "Transformer Engine version when known; R18 compares it with 2.6.0dev0.", {} },

        // --- Attention backend ---
        { "attention_backend", "Attention backend", "", K::Choice, "attention_backend",
            "Ours: fused (TE), flash, or unfused (materialised scores). Fused and flash already "
            "rematerialise "
            "attention internals, so core_attn must earn its place against [].",
            { "fused", "flash", "unfused" } },
        { "transformer_impl", "Attention backend", "", K::Choice, "transformer_impl", "",
            { "transformer_engine", "local" } },
        { "attention_dropout", "Attention backend", "", K::Double, "attention_dropout",
            "Default 0.1; not supported with graphed attention recompute (R32).", {} },
        { "hidden_dropout", "Attention backend", "", K::Double, "hidden_dropout",
            "Default 0.1; not supported with graphed MLP/MoE recompute (R33).", {} },
        { "multi_latent_attention", "Attention backend", "Multi-latent attention", K::Bool,
            "multi_latent_attention", "MLA; mla_up_proj recompute needs it (R13).", {} },
        { "q_lora_rank", "Attention backend", "Multi-latent attention", K::OptionalInt, "q_lora_rank",
            "None: no Q compression.", {} },
        { "kv_lora_rank", "Attention backend", "Multi-latent attention", K::Int, "kv_lora_rank", "", {} },
        { "qk_head_dim", "Attention backend", "Multi-latent attention", K::Int, "qk_head_dim", "", {} },
        { "qk_pos_emb_head_dim", "Attention backend", "Multi-latent attention", K::Int, "qk_pos_emb_head_dim",
            "", {} },
        { "v_head_dim", "Attention backend", "Multi-latent attention", K::Int, "v_head_dim", "", {} },
        { "experimental_attention_variant", "Attention backend", "Multi-latent attention", K::OptionalChoice,
            "experimental_attention_variant", "gdn / gdn2 (gated delta net; gdn_norm_out needs it), dsa.",
            { "gdn", "gdn2", "gated_delta_net", "dsa" } },
        { "dsa_indexer_n_heads", "Attention backend", "DeepSeek sparse attention", K::OptionalInt,
            "dsa_indexer_n_heads", "The indexer's heads (dsa); Megatron has no default.", {} },
        { "dsa_indexer_head_dim", "Attention backend", "DeepSeek sparse attention", K::OptionalInt,
            "dsa_indexer_head_dim", "The indexer's head dimension (dsa); Megatron has no default.", {} },
        { "dsa_indexer_topk", "Attention backend", "DeepSeek sparse attention", K::OptionalInt,
            "dsa_indexer_topk", "Keys each query attends to (dsa); Megatron has no default.", {} },
        { "dsa_indexer_topk_freq", "Attention backend", "DeepSeek sparse attention", K::Int,
            "dsa_indexer_topk_freq",
            "1: every layer computes its top-k; N: every N-th does, the others reuse it.", {} },
        { "dsa_indexer_skip_topk_offset", "Attention backend", "DeepSeek sparse attention", K::Int,
            "dsa_indexer_skip_topk_offset", "Where the top-k sharing starts (dsa_indexer_topk_freq > 1).",
            {} },
        { "dsa_indexer_loss_coeff", "Attention backend", "DeepSeek sparse attention", K::OptionalDouble,
            "dsa_indexer_loss_coeff", "The indexer's KL loss; None or 0: no indexer loss.", {} },
        { "dsa_indexer_use_sparse_loss", "Attention backend", "DeepSeek sparse attention", K::Bool,
            "dsa_indexer_use_sparse_loss", "The KL loss over the top-k keys only.", {} },
        { "dsa_kernel_backend", "Attention backend", "DeepSeek sparse attention", K::Choice,
            "dsa_kernel_backend", "none: Megatron's PyTorch path; cudnn: cuDNN / FlashMLA fused kernels.",
            { "none", "tilelang", "cudnn" } },

        // --- Recompute ---
        { "recompute_granularity", "Recompute", "", K::OptionalChoice, "recompute_granularity",
            "selective: the labels below; full: whole layers by recompute_method; None: no recompute.",
            { "selective", "full" } },
        { "recompute_modules", "Recompute", "", K::RecomputeModules, "recompute_modules",
            "Unset means Megatron's default [\"core_attn\"] (R10); [] is the explicit no-recompute control.",
            {} },
        { "recompute_method", "Recompute", "", K::OptionalChoice, "recompute_method",
            "Full granularity only: uniform checkpoints groups of recompute_num_layers; block checkpoints "
            "the "
            "first recompute_num_layers layers of each chunk.",
            { "uniform", "block" } },
        { "recompute_num_layers", "Recompute", "", K::OptionalInt, "recompute_num_layers",
            "Full granularity only; per model chunk.", {} },
        { "distribute_saved_activations", "Recompute", "", K::Bool, "distribute_saved_activations",
            "Full recompute only: keep 1/TP of the checkpointed input.", {} },
        { "moe_layer_recompute", "Recompute", "", K::Bool, "moe_layer_recompute",
            "Deprecated flag; it adds 'moe' (R19).", {} },
        { "recompute_activations", "Recompute", "", K::Bool, "recompute_activations",
            "Megatron-LM's --recompute-activations: sets selective granularity (M2).", {} },
        { "cpu_offloading", "Recompute", "Offloading", K::Bool, "cpu_offloading",
            "An alternative to recompute; cannot be combined with it (R03) nor with PP > 1 (R02).", {} },
        { "cpu_offloading_num_layers", "Recompute", "Offloading", K::Int, "cpu_offloading_num_layers", "",
            {} },
        { "fine_grained_activation_offloading", "Recompute", "Offloading", K::Bool,
            "fine_grained_activation_offloading", "", {} },
        { "offload_modules", "Recompute", "Offloading", K::TextList, "offload_modules", "", {} },

        // --- CUDA graphs ---
        { "cuda_graph_impl", "CUDA graphs", "", K::Choice, "cuda_graph_impl",
            "Full recompute with CUDA graphs needs full_iteration (R30).",
            { "none", "local", "transformer_engine", "full_iteration" } },
        { "cuda_graph_modules", "CUDA graphs", "", K::OptionalTextList, "cuda_graph_modules",
            "attn, mlp, moe, moe_router, moe_preprocess, mamba. Empty ([]) captures the whole layer; a "
            "checkpoint must lie wholly inside or outside the graph scope.",
            {} },
        { "cuda_graph_scope", "CUDA graphs", "", K::OptionalTextList, "cuda_graph_scope",
            "Deprecated spelling of cuda_graph_modules (R26).", {} },
        { "use_te_rng_tracker", "CUDA graphs", "", K::Bool, "use_te_rng_tracker",
            "Bridge needs it with CUDA graphs (B5).", {} },
        { "enable_cuda_graph", "CUDA graphs", "", K::Bool, "enable_cuda_graph", "Deprecated (R25).", {} },
        { "external_cuda_graph", "CUDA graphs", "", K::Bool, "external_cuda_graph", "Deprecated (R25).", {} },

        // --- Fine-tuning (Bridge's peft section) ---
        { "peft.scheme", "Fine-tuning", "", K::OptionalChoice, "peft",
            "Bridge: peft. lora freezes the model and trains LoRA adapters on the target modules "
            "(peft/lora.py); None trains every parameter. Megatron-LM has no LoRA.",
            {} },
        { "peft.dim", "Fine-tuning", "", K::Int, "peft.dim", "The adapters' rank (RS41).", {} },
        { "peft.alpha", "Fine-tuning", "", K::Int, "peft.alpha", "The adapters' output scale is alpha / dim.",
            {} },
        { "peft.dropout", "Fine-tuning", "", K::Double, "peft.dropout",
            "Dropout on each adapter's input: it keeps the dropped copy and its mask.", {} },
        { "peft.target_modules", "Fine-tuning", "", K::TextList, "peft.target_modules",
            "Linear modules by name (linear_qkv, linear_proj, linear_fc1, linear_fc2, MLA's and Mamba's "
            "projections); empty: every linear module (B11, RS40).",
            {} },

        // --- Overlap ---
        { "comm_overlap.overlap_moe_expert_parallel_comm", "Overlap", "", K::Bool,
            "overlap_moe_expert_parallel_comm",
            "Bridge: comm_overlap.overlap_moe_expert_parallel_comm. Whole-moe recompute and full recompute "
            "are incompatible with it (R36/B4).",
            {} },
        { "delay_wgrad_compute", "Overlap", "", K::Bool, "delay_wgrad_compute", "Needs EP overlap (R37).",
            {} },
        { "rerun_state_machine.check_for_nan_in_loss", "Overlap", "", K::Bool, "check_for_nan_in_loss",
            "Bridge: rerun_state_machine.check_for_nan_in_loss; must be off with full-iteration CUDA graphs "
            "(B3).",
            {} },

        // --- Run settings ---
        { "profile", "Run settings", "", K::Profile, "Rules profile",
            "Which Megatron Core revision's rules and labels apply.", {} },
        { "memory_target_gb", "Run settings", "", K::OptionalDouble, "memory_target_gb",
            "Per-rank memory target (GB); drawn on the trade-off chart.", {} },
        { "gpu_compute_capability", "Run settings", "", K::Int, "gpu_compute_capability",
            "The GPUs' CUDA compute capability, major × 10 + minor: 80 A100, 90 H100 / H200 (the "
            "default), 100 B200 / GB200. The estimate sizes Transformer Engine's cuBLAS workspaces by it.",
            {} },
        { "warmup_iters", "Run settings", "", K::Int, "warmup_iters", "Iterations before steady state.", {} },
        { "train_iters", "Run settings", "", K::Int, "train_iters", "Iterations in all.", {} },
    };
    return fields;
}

const FieldSpec* findField(const std::string& key)
{
    const auto& fields = recipeFields();
    auto it = std::find_if(fields.begin(), fields.end(), [&](const FieldSpec& f) { return key == f.key; });
    return it == fields.end() ? nullptr : &*it;
}

QStringList fieldGroups()
{
    QStringList groups;
    for (const auto& f : recipeFields()) {
        const QString g = QString::fromLatin1(f.group);
        if (!groups.contains(g))
            groups << g;
    }
    return groups;
}

std::string formKeyForFindingField(const std::string& findingField)
{
    if (findField(findingField))
        return findingField;
    // A finding may name a nested Bridge key by its leaf or spell a dotted key with "model." in front.
    std::string leaf = findingField;
    if (leaf.rfind("model.", 0) == 0)
        leaf = leaf.substr(6);
    if (findField(leaf))
        return leaf;
    const auto dot = leaf.rfind('.');
    if (dot != std::string::npos)
        leaf = leaf.substr(dot + 1);
    for (const auto& f : recipeFields()) {
        const std::string key = f.key;
        const auto kdot = key.rfind('.');
        if (kdot != std::string::npos && key.substr(kdot + 1) == leaf)
            return key;
        if (key == leaf)
            return key;
    }
    return {};
}

nlohmann::json jsonValueAt(const nlohmann::json& recipeJson, const std::string& dottedKey)
{
    if (recipeJson.contains(dottedKey))
        return recipeJson.at(dottedKey);
    const nlohmann::json* node = &recipeJson;
    std::size_t start = 0;
    while (true) {
        const auto dot = dottedKey.find('.', start);
        const std::string part
            = dottedKey.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        if (!node->is_object() || !node->contains(part))
            return nullptr;
        node = &node->at(part);
        if (dot == std::string::npos)
            return *node;
        start = dot + 1;
    }
}

void setJsonValueAt(nlohmann::json& recipeJson, const std::string& dottedKey, const nlohmann::json& value)
{
    if (dottedKey.find('.') == std::string::npos || recipeJson.contains(dottedKey)) {
        recipeJson[dottedKey] = value;
        return;
    }
    nlohmann::json* node = &recipeJson;
    std::size_t start = 0;
    while (true) {
        const auto dot = dottedKey.find('.', start);
        const std::string part
            = dottedKey.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        if (dot == std::string::npos) {
            (*node)[part] = value;
            return;
        }
        if (!(*node)[part].is_object())
            (*node)[part] = nlohmann::json::object();
        node = &(*node)[part];
        start = dot + 1;
    }
}

void applyRecipePatch(nlohmann::json& recipeJson, const nlohmann::json& patch)
{
    if (!patch.is_object())
        return;
    for (auto it = patch.begin(); it != patch.end(); ++it) {
        const std::string& key = it.key();
        if (it.value().is_object() && recipeJson.contains(key) && recipeJson[key].is_object()) {
            applyRecipePatch(recipeJson[key], it.value());
            continue;
        }
        // A leaf name of a nested Bridge key (e.g. "overlap_moe_expert_parallel_comm") goes where the
        // recipe JSON keeps it.
        if (!recipeJson.contains(key) && key.find('.') == std::string::npos) {
            const std::string formKey = formKeyForFindingField(key);
            if (!formKey.empty() && formKey != key) {
                setJsonValueAt(recipeJson, formKey, it.value());
                continue;
            }
        }
        setJsonValueAt(recipeJson, key, it.value());
    }
}

} // namespace rs::ui
