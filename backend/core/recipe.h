// SPDX-License-Identifier: Apache-2.0
// The recipe: one training configuration as Megatron Core names it, plus the few settings of our own
// (attention backend, rules profile, memory target, run length). Field names are Megatron's own, so a
// recipe file reads without a glossary; defaults are Megatron's (TransformerConfig / ModelParallelConfig
// at the profile's commit) unless a comment says otherwise.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace rs {

// Which Megatron Core revision's rules apply (docs/rules.md "Profiles"; the table is profiles.h).
enum class Profile {
    BridgePin, // 2a75ac12: the Megatron Core that Megatron Bridge HEAD pins
    Guide, // 24bad8e6: the revision of the guide's Moonlight / Nemotron measurements
    Main, // d98e8a64
    Dev, // d48bd6be: development branch (mhc / gdn labels, full recompute under EP overlap)
};

// How the recipe reached us: the Megatron-LM CLI rules (M1-M6) apply only to flags, the Bridge rules
// (B1-B9) only to Hydra overrides; a JSON recipe gets Megatron Core's own rules alone.
enum class InputFormat { Json, BridgeOverrides, MegatronFlags };

struct Recipe {
    static constexpr int kSchemaVersion = 1;

    std::string name; // free text, ours; shown in reports

    // --- model shape ---
    int num_layers = 0;
    int hidden_size = 0;
    std::optional<int> ffn_hidden_size; // None: 4 * hidden_size (TransformerConfig.__post_init__)
    int num_attention_heads = 0;
    std::optional<int> num_query_groups; // None: = num_attention_heads (MHA)
    std::optional<int> kv_channels; // None: hidden_size / num_attention_heads
    int seq_length = 4096;
    int micro_batch_size = 1;
    std::optional<int> global_batch_size;
    // Megatron-LM's create_attention_mask_in_dataloader (--no-create-attention-mask-in-dataloader; default
    // True): the dataset builds the bool [b, 1, s, s] mask and get_batch moves it to the GPU. Bridge's
    // dataset.skip_getting_attention_mask_from_dataset is its negation, True by default (its
    // GPTDatasetConfig; training/config.py:251 at 067f987d), so a Bridge job moves no mask.
    bool create_attention_mask_in_dataloader = true;
    std::string normalization = "LayerNorm"; // LayerNorm | RMSNorm
    bool gated_linear_unit = false; // true + activation_func silu = SwiGLU
    std::string activation_func = "gelu"; // gelu | silu | squared_relu (relu(x)^2: Nemotron-H)
    // The fused bias + activation (megatron/core/fusions/fused_bias_{swiglu,geglu,gelu}.py): a custom
    // autograd function that keeps only FC1's output and recomputes the activation in backward.
    // TransformerConfig False; Megatron-LM's flags derive it (--no-bias-swiglu-fusion /
    // --no-bias-gelu-fusion, both on by default; off without linear biases for GeLU).
    bool bias_activation_fusion = false;
    // The routed experts' squared ReLU weighted by the router's probabilities in one autograd function
    // (experts.py weighted_squared_relu_impl): it keeps FC1's output and the probabilities only.
    bool use_fused_weighted_squared_relu = false;
    // The loss: Megatron's fused vocab-parallel cross-entropy (cross_entropy_loss_fusion) in Megatron's
    // own jit form ("native", an fp32 softmax as the unfused one) or Transformer Engine's Triton kernel
    // ("te", which writes the gradient into the 16-bit logits in place: no fp32 copy).
    // TransformerConfig: False / "native"; Bridge's providers: True.
    bool cross_entropy_loss_fusion = false;
    std::string cross_entropy_fusion_impl = "native"; // native | te
    int vocab_size = 32000; // the tokenizer's vocabulary; padded as Megatron pads it (below)
    int make_vocab_size_divisible_by = 128; // Megatron-LM: padded to a multiple of this x TP

    // --- what the front end builds around the layers (defaults: TransformerConfig / GPTModel; a recipe
    // read from Megatron-LM flags or Bridge overrides starts from that front end's own defaults) ---
    bool add_bias_linear = true;
    bool add_qkv_bias = false;
    // TransformerConfig.qk_layernorm: a norm over each query and key head (Qwen3, GLM-4.5, OLMoE). Under MLA
    // the latent norms are taken as on whatever it says (every Bridge MLA recipe sets it).
    bool qk_layernorm = false;
    std::string position_embedding_type = "learned_absolute"; // learned_absolute | rope | mrope | none
    std::optional<int> max_position_embeddings; // None: seq_length (learned absolute needs a table)
    double rotary_percent = 1.0;
    int rotary_base = 10000;
    bool untie_embeddings_and_output_weights = false; // false: the output layer reuses the embedding
    bool attention_softmax_in_fp32 = true; // TransformerConfig True; Megatron-LM's flag default is False
    bool apply_query_key_layer_scaling = false;
    // Megatron's fused scaled-masked-softmax kernel for unfused attention (FusedScaleMaskSoftmax;
    // fusedMaskedSoftmaxApplies in attention_softmax.h says when it runs). TransformerConfig False;
    // Megatron-LM's flags True (--no-masked-softmax-fusion); Bridge's GPTModelProvider True.
    bool masked_softmax_fusion = false;
    // Each weight's gradient added into its fp32 main_grad inside the wgrad GEMM (Transformer Engine's
    // fuse_wgrad_accumulation, apex's fused_weight_gradient_mlp_cuda) instead of by DDP's hook after it
    // (model_parallel_config.py; False there, True in Megatron-LM's flags and Bridge's providers).
    bool gradient_accumulation_fusion = false;

    // --- multi-latent attention (MLATransformerConfig defaults) ---
    bool multi_latent_attention = false;
    std::optional<int> q_lora_rank = 512; // None: no Q compression
    int kv_lora_rank = 512;
    int qk_head_dim = 128;
    int qk_pos_emb_head_dim = 64;
    int v_head_dim = 128;
    std::optional<std::string> experimental_attention_variant; // gdn, gdn2, gated_delta_net, dsa ...
    // DeepSeek sparse attention (experimental_attention_variant dsa: every layer a DSAttention on absorbed
    // MLA; TransformerConfig's dsa_* fields and defaults, transformer_config.py). The indexer's heads, head
    // dim and top-k have no default (None: Megatron cannot build the indexer); a layer computes its own top-k
    // every dsa_indexer_topk_freq layers from dsa_indexer_skip_topk_offset (dsa.py is_dsa_skip_topk_layer)
    // and the others reuse it; the indexer's KL loss trains it where dsa_indexer_loss_coeff > 0.
    std::optional<int> dsa_indexer_n_heads;
    std::optional<int> dsa_indexer_head_dim;
    std::optional<int> dsa_indexer_topk;
    int dsa_indexer_topk_freq = 1;
    int dsa_indexer_skip_topk_offset = 0;
    std::optional<double> dsa_indexer_loss_coeff;
    bool dsa_indexer_use_sparse_loss = false;
    std::string dsa_kernel_backend = "none"; // none | tilelang | cudnn

    // --- GatedDeltaNet layers (TransformerConfig's linear_* fields): in a GPT model where
    // experimental_attention_variant is a GatedDeltaNet one and linear_attention_freq picks the layers, in a
    // hybrid stack at its 'G' symbols ---
    // None (empty), N (every N-th layer attention, the rest GatedDeltaNet), or a 0/1 list (1: GatedDeltaNet,
    // 0: attention), as experimental_attention_variant_module_specs.py get_linear_attention_pattern reads it.
    std::vector<int> linear_attention_freq;
    int linear_conv_kernel_dim = 4;
    int linear_key_head_dim = 128;
    int linear_value_head_dim = 128;
    int linear_num_key_heads = 16;
    int linear_num_value_heads = 32;

    // --- hybrid stacks (Megatron Core's HybridModel; Bridge's HybridModelProvider / MambaModelProvider) ---
    // One symbol per layer (hybrid_layer_allocation.py Symbols): M Mamba, G GatedDeltaNet, * attention,
    // - MLP, E MoE, and D, +, C, H, W (DSA, MLA, DeepSeek-V4 attention), which the estimate and the worker
    // do not build; '|' separates pipeline segments, '/' starts the MTP layers. None: a GPT model.
    // Megatron-LM's --hybrid-override-pattern and Bridge's hybrid_override_pattern (deprecated spellings)
    // read into it; num_layers follows it (model_shape.h hybridLayerCount).
    std::optional<std::string> hybrid_layer_pattern;
    bool is_hybrid_model = false;
    // MambaMixer (megatron/core/ssm/mamba_mixer.py): nheads x headdim = d_inner; the causal conv's width
    // is the mixer's d_conv argument (4), which no config field, flag or Bridge field sets (kMambaConvWidth
    // in model_shape.h).
    std::optional<int> mamba_num_heads; // None: hidden_size x expand (2) / mamba_head_dim
    int mamba_head_dim = 64;
    int mamba_state_dim = 128;
    int mamba_num_groups = 8;
    int mamba_chunk_size = 128; // Bridge's field (the mixer's chunk_size); the SSD scan's chunk length

    // --- mixture of experts ---
    std::optional<int> num_moe_experts; // None: dense model
    int moe_router_topk = 2;
    std::optional<int> moe_ffn_hidden_size; // None: ffn_hidden_size
    bool moe_grouped_gemm = false;
    std::optional<int> moe_shared_expert_intermediate_size;
    bool moe_shared_expert_overlap = false;
    // Latent MoE (TransformerConfig.moe_latent_size; None: off): the routed experts work in this narrower
    // width between fc1_latent_proj (hidden -> latent, before dispatch) and fc2_latent_proj (latent ->
    // hidden, after combine), so tokens are dispatched and experts sized at it; router and shared experts
    // stay at hidden_size (moe_layer.py, experts.py). Bridge's NemotronHBridge reads the HF key of the same
    // name (nemotron_h_bridge.py provider_bridge).
    std::optional<int> moe_latent_size;
    // 1: every layer is MoE; N: every N-th; a pattern list of 0/1 gives it layer by layer
    // (e.g. one dense first layer: [0,1,1,...]).
    std::vector<int> moe_layer_freq = { 1 };
    std::string moe_token_dispatcher_type = "allgather"; // allgather | alltoall | flex
    std::optional<double> moe_input_jitter_eps;
    // Multi-token prediction (multi_token_prediction.py): mtp_num_layers depths after the decoder, each a
    // layer of the last decoder layer's kind (a hybrid stack: the pattern after '/'). mtp_use_repeated_layer
    // builds one such layer and runs it every depth; mtp_hybrid_override_pattern is the MTP pattern's
    // deprecated spelling, which Megatron-LM's validate_args and Bridge's HybridModelProvider.finalize join
    // to a pattern without '/' (model_shape.h mtpShape).
    std::optional<int> mtp_num_layers;
    bool mtp_use_repeated_layer = false;
    std::optional<std::string> mtp_hybrid_override_pattern;
    double moe_aux_loss_coeff = 0.0;
    std::string moe_router_load_balancing_type = "aux_loss"; // aux_loss | seq_aux_loss | sinkhorn | none
    std::optional<double> moe_expert_capacity_factor; // None: dropless

    // --- hyper-connections (main: enable_mhc_connections; dev: enable_hyper_connections) ---
    bool enable_mhc_connections = false;
    bool enable_hyper_connections = false;
    std::optional<int> mhc_recompute_layer_num;

    // --- parallelism ---
    int tensor_model_parallel_size = 1;
    int pipeline_model_parallel_size = 1;
    std::optional<int> virtual_pipeline_model_parallel_size;
    int context_parallel_size = 1;
    int expert_model_parallel_size = 1;
    // The routed experts' own tensor parallelism (TransformerConfig.expert_tensor_parallel_size). None:
    // Megatron's default, TP (parallel_state.py); Bridge's finalize makes it 1 when EP > 1 (rule B12).
    std::optional<int> expert_tensor_parallel_size;
    bool sequence_parallel = false;
    int data_parallel_size = 1; // world size / (TP x PP x CP): shards the distributed optimizer
    // The pipeline split where it is not the even one (TransformerConfig's fields; model_shape.h
    // pipelineStage reads them as Megatron does, in this order of precedence). Megatron Core's layout, in its
    // string form ("Et|(tt|)*30mL": pipeline_layout.h); a list-form layout is read into it. Its stages are PP
    // x VPP chunks, so it gives VPP where that is unset.
    std::optional<std::string> pipeline_model_parallel_layout;
    // The decoder layers of the first / the last pipeline stage, the rest split evenly over the others
    // (Megatron-LM: --decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers).
    std::optional<int> num_layers_in_first_pipeline_stage;
    std::optional<int> num_layers_in_last_pipeline_stage;
    // The even split counts the embedding / the loss as one layer each (the first / the last stage builds one
    // decoder layer fewer).
    bool account_for_embedding_in_pipeline_split = false;
    bool account_for_loss_in_pipeline_split = false;
    // A pipeline stage frees a chunk's output once sent, keeping only its autograd node
    // (schedules.py deallocate_output_tensor). ModelParallelConfig False; Megatron-LM sets True
    // (core_transformer_config_from_args, no flag); Bridge's GPTModelProvider True.
    bool deallocate_pipeline_outputs = false;

    // --- the training job's memory layout (DistributedDataParallelConfig / OptimizerConfig) ---
    bool use_distributed_optimizer = false;
    // The DDP gradient buffer's dtype: fp32 when grad_reduce_in_fp32 (Megatron-LM turns it on under bf16
    // unless --main-grads-dtype says otherwise), else the parameters' dtype.
    bool grad_reduce_in_fp32 = false;
    std::string main_grads_dtype = "fp32"; // fp32 | bf16 (--main-grads-dtype)
    std::string main_params_dtype = "fp32"; // fp32 | fp16 (--main-params-dtype)
    // The precision-aware optimizer's state (OptimizerConfig; Transformer Engine's FusedAdam keeps it): the
    // moments in these dtypes, and with bf16 parameters the fp32 master weight as its 16 low bits only
    // (store_param_remainders, MCore's default True), the high 16 being the parameter itself.
    std::string exp_avg_dtype = "fp32"; // fp32 | fp16 | bf16 | fp8 (--exp-avg-dtype)
    std::string exp_avg_sq_dtype = "fp32"; // fp32 | fp16 | bf16 | fp8 (--exp-avg-sq-dtype)
    bool store_param_remainders = true;
    bool use_precision_aware_optimizer = false;
    // Ours: which Adam runs the step. `fused`: Transformer Engine's or Apex's FusedAdam (no temporaries).
    // `torch`: torch.optim.AdamW's multi-tensor path, Megatron's fallback when neither is installed
    // (megatron/core/optimizer/__init__.py): the square roots of every second moment at once, an fp32
    // temporary as large as the rank's main parameters during the step. Megatron-LM flags with
    // `--transformer-impl local` default to `torch` (no Transformer Engine assumed).
    std::string adam_implementation = "fused"; // fused | torch

    // --- precision ---
    bool bf16 = false;
    bool fp16 = false;
    std::optional<std::string> fp8; // e4m3 | hybrid
    std::string fp8_recipe = "delayed"; // delayed | tensorwise | blockwise | mxfp8 (MCore default: delayed)
    std::optional<std::string> fp4; // e2m1 / nvfp4
    std::optional<std::string> mixed_precision; // Bridge recipe name; overwrites fp8/fp8_recipe/fp4 (B8)
    std::optional<std::string> te_version; // when known: R18 compares it with 2.6.0dev0
    // The parameters themselves in fp8 (DistributedDataParallelConfig.fp8_param_gather, --fp8-param-gather;
    // needs the distributed optimizer): TE then keeps no separate fp8 copy of each weight.
    bool fp8_param_gather = false;

    // --- attention implementation ---
    std::string attention_backend = "fused"; // ours: fused | flash | unfused
    std::string transformer_impl = "transformer_engine"; // transformer_engine | local
    double attention_dropout = 0.1;
    double hidden_dropout = 0.1;

    // --- CUDA graphs ---
    std::string cuda_graph_impl = "none"; // none | local | transformer_engine | full_iteration
    std::optional<std::vector<std::string>> cuda_graph_modules; // None: the dataclass default "full" → []
    std::optional<std::vector<std::string>> cuda_graph_scope; // deprecated spelling (R26)
    bool enable_cuda_graph = false; // deprecated (R25)
    bool external_cuda_graph = false; // deprecated (R25)
    bool use_te_rng_tracker = false; // B5

    // --- offloading ---
    bool cpu_offloading = false;
    int cpu_offloading_num_layers = 0;
    bool fine_grained_activation_offloading = false;
    std::vector<std::string> offload_modules;

    // --- recompute ---
    std::optional<std::string> recompute_granularity; // None | full | selective
    std::optional<std::vector<std::string>> recompute_modules; // None: ["core_attn"] (R10); []: control
    std::optional<std::string> recompute_method; // uniform | block
    std::optional<int> recompute_num_layers;
    bool distribute_saved_activations = false;
    bool moe_layer_recompute = false; // deprecated flag (R19)

    // --- parameter-efficient fine-tuning (Bridge's ConfigContainer.peft: peft/lora.py at 067f987d) ---
    // "lora": Bridge freezes every parameter of the model (PEFT.freeze_model) and wraps each linear module
    // whose name is in peft.target_modules with a LoRA adapter (linear_in [dim x in], linear_out [out x
    // dim], output scaled by alpha / dim), the only parameters that train. None: the whole model trains.
    std::optional<std::string> peft; // None | lora (Bridge: peft; its recipe functions' peft_scheme)
    int peft_dim = 32; // peft.dim: the adapters' rank
    int peft_alpha = 32; // peft.alpha
    double peft_dropout = 0.0; // peft.dropout: on the adapter's input ("pre", Bridge's default)
    std::vector<std::string> peft_target_modules
        = { "linear_qkv", "linear_proj", "linear_fc1", "linear_fc2" }; // peft.target_modules

    // --- overlap ---
    bool delay_wgrad_compute = false;
    bool overlap_moe_expert_parallel_comm = false; // Bridge: comm_overlap.overlap_moe_expert_parallel_comm
    bool check_for_nan_in_loss = true; // Bridge: rerun_state_machine.check_for_nan_in_loss (B3)

    // --- ours: rules profile and run settings ---
    Profile profile = Profile::BridgePin;
    std::optional<double> memory_target_gb; // per-rank target for the advisor
    // The GPUs' CUDA compute capability, major x 10 + minor (80 A100, 90 H100 / H200, 100 B200 / GB200): what
    // the job's software sizes by it (Transformer Engine's cuBLAS workspaces, estimator.cpp). 90 unless said:
    // Hopper, the GPUs this product's users train on. A Bridge recipe by name takes it from the GPU its name
    // states (gpus.h).
    int gpu_compute_capability = 90;
    int warmup_iters = 3;
    int train_iters = 10;
    std::optional<std::string>
        checkpoint_activations_flag; // set only when --checkpoint-activations was read (M1)
    bool recompute_activations = false; // --recompute-activations (M2)

    // --- ours: how the recipe was read, and what is kept to be written back ---
    // The front end whose defaults the recipe started from: Json (TransformerConfig's, as above),
    // MegatronFlags (Megatron-LM's argparse defaults and validate_args), BridgeOverrides (Megatron Bridge's
    // GPTModelProvider and ConfigContainer); frontEndDefaults() in recipe_json.h gives each.
    InputFormat front_end = InputFormat::Json;
    // Bridge overrides that no field models, verbatim and in order (KEY=VALUE, ++KEY=VALUE, ~KEY).
    std::vector<std::string> extra_overrides;
    // Megatron-LM argv words that no field models: each kept flag followed by its values, in order.
    std::vector<std::string> extra_flags;
    // What ran the flags: launcher, its options and the script (torchrun --nproc-per-node 8 pretrain_gpt.py).
    std::vector<std::string> launch_command;
    // Recipe keys the user set (sorted, unique): written back even when they equal the front end's
    // default. Neither equality nor the recipe hash looks at it.
    std::vector<std::string> explicit_keys;

    bool operator==(const Recipe& other) const;
    bool operator!=(const Recipe& other) const { return !(*this == other); }
};

const char* profileName(Profile profile);
std::optional<Profile> profileFromName(const std::string& name);
const std::vector<Profile>& allProfiles();

} // namespace rs
