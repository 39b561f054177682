// SPDX-License-Identifier: Apache-2.0
// The model's resolved shape and its parallel layout, derived from a recipe once, as Megatron derives
// them: the estimator (estimator.cpp) and the worker (engine/model.cpp, engine/layout_rank.cpp) read these
// instead of each reading the recipe's fields again, so the two never disagree on a width, a layer's kind
// or a stage's layers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/pipeline_layout.h"
#include "core/recipe.h"

namespace rs {

// The deepest model the estimator and the worker take (each holds an entry per layer; the deepest published
// models have a few hundred): RS36 refuses more, and the estimate gives none beyond it.
inline constexpr int kMaxLayers = 65536;

// MambaMixer's causal convolution width: its d_conv argument, default 4 (megatron/core/ssm/mamba_mixer.py);
// the hybrid stack spec builds the mixer without it and no config field, Megatron-LM flag or Bridge field
// sets it at any profile.
inline constexpr int kMambaConvWidth = 4;
// MambaMixer's expand argument (d_inner = expand x hidden when mamba_num_heads is None), likewise fixed.
inline constexpr int kMambaExpand = 2;
// The GatedDeltaNet kernel's chunk (gdn.py _setup_variant_attrs: chunk_size = 64; fla's
// chunk_gated_delta_rule keeps an [T, heads, 64] matrix per layer).
inline constexpr int kGdnChunk = 64;

// The widths Megatron Core builds (TransformerConfig's defaults where a field is unset).
struct ModelShape {
    int64_t hidden = 0;
    int64_t ffn = 0; // ffn_hidden_size, default 4 x hidden
    int64_t heads = 0;
    int64_t query_groups = 0; // num_query_groups, default num_attention_heads
    int64_t kv_channels = 0; // default hidden / heads
    int64_t moe_ffn = 0; // moe_ffn_hidden_size, default ffn
    int64_t shared_ffn = 0; // moe_shared_expert_intermediate_size, 0 without
    int64_t experts = 0;
    // The width the routed experts and the dispatcher work at: moe_latent_size under latent MoE, else
    // hidden. Megatron tests moe_latent_size for truth in the layer (moe_layer.py: 0 builds no
    // projections), so 0 reads as off here; RS23 / M9 refuse it.
    int64_t moe_latent = 0; // moe_latent_size, 0 without
    int64_t routed_width = 0; // moe_latent or hidden
    int64_t vocab = 0; // padded: a multiple of make_vocab_size_divisible_by x TP
    // MambaMixer (mamba_mixer.py __init__): nheads x headdim = d_inner; in_proj packs z, x, B, C, dt.
    int64_t mamba_heads = 0, mamba_head_dim = 0, mamba_d_inner = 0, mamba_groups = 0, mamba_state = 0;
    int64_t mamba_in_proj = 0; // 2 d_inner + 2 groups x state + heads
    int64_t mamba_conv_dim = 0; // d_inner + 2 groups x state (x, B, C)
    // GatedDeltaNet (gated_delta_net/common.py _GDNBase): q, k on the key heads, v and the gate on the value
    // heads; in_proj packs q, k, v, z, beta, alpha.
    int64_t gdn_key_heads = 0, gdn_value_heads = 0, gdn_key_dim = 0, gdn_value_dim = 0;
    int64_t gdn_qk = 0, gdn_v = 0; // key heads x key dim, value heads x value dim
    int64_t gdn_in_proj = 0; // 2 qk + 2 v + 2 value heads
    int64_t gdn_conv_dim = 0; // 2 qk + v
    // DSA (dsa.py DSAIndexer): the indexer's heads and head dim, the keys each query keeps (0 where unset).
    int64_t dsa_index_heads = 0, dsa_index_head_dim = 0, dsa_topk = 0;
    // q_layernorm / k_layernorm on the query and key heads (qk_layernorm; MLA normalises its latents
    // instead, multi_latent_attention.py).
    bool qk_head_norms = false;
};
ModelShape modelShape(const Recipe& r);

// --- which layer is which ---
// A layer's sequence mixer and its feed-forward part. A GPT layer is attention (or GatedDeltaNet, where
// experimental_attention_variant and linear_attention_freq say) followed by a dense MLP or an MoE; a
// hybrid stack's layer is one of them alone (hybrid_layer_specs.py: 'M' MambaLayer, '*' a TransformerLayer
// with self-attention only, 'G' one with GatedDeltaNet only, '-' MLPLayer, 'E' MoETransformerLayer).
// A GPT model with experimental_attention_variant dsa has DSA layers (every layer: the layer specs of
// experimental_attention_variant_module_specs.py): an absorbed-MLA attention whose core is DSAttention
// (dsa.py), Dsa where the layer computes its own top-k with its indexer, DsaSkipTopk where it reuses an
// earlier layer's (is_dsa_skip_topk_layer: dsa_indexer_topk_freq > 1), which builds no indexer.
enum class LayerMixer { None, Attention, Mamba, GatedDeltaNet, Unmodelled, Dsa, DsaSkipTopk };
enum class LayerFfn { None, Dense, Moe };
struct LayerKind {
    LayerMixer mixer = LayerMixer::Attention;
    LayerFfn ffn = LayerFfn::Dense;
    char symbol = 0; // the hybrid pattern's symbol; 0 in a GPT model
    int id() const { return static_cast<int>(mixer) * 3 + static_cast<int>(ffn); }
    bool operator==(const LayerKind& o) const { return mixer == o.mixer && ffn == o.ffn; }
};
inline constexpr int kLayerKindIds = 21;
inline bool isDsaMixer(LayerMixer m)
{
    return m == LayerMixer::Dsa || m == LayerMixer::DsaSkipTopk;
}
// A layer whose mixer is self-attention (standard or MLA, or DSA on absorbed MLA): where the attention
// labels (core_attn, mla_up_proj, the input norm's layernorm) act.
inline bool isAttentionMixer(LayerMixer m)
{
    return m == LayerMixer::Attention || m == LayerMixer::Dsa || m == LayerMixer::DsaSkipTopk;
}

// Megatron's parse of hybrid_layer_pattern (hybrid_layer_allocation.py parse_hybrid_pattern,
// select_pipeline_segment): the main pattern, its '|' segments, the MTP pattern and its depth.
struct HybridPattern {
    std::string main; // without '|'
    std::vector<std::string> segments; // split at '|' (one when there is none)
    std::string mtp; // the pattern after '/', "" without MTP
    int mtp_depths = 0;
};
HybridPattern parseHybridPattern(const std::string& pattern);
// The layer symbols a profile's Symbols class accepts (hybrid_layer_allocation.py VALID_LAYERS).
std::string validHybridSymbols(Profile p);
bool isHybrid(const Recipe& r); // hybrid_layer_pattern set
// The main pattern's layer count (get_hybrid_total_layer_count); num_layers for a GPT model.
int hybridLayerCount(const Recipe& r);
// Is global layer `layer` a GatedDeltaNet layer of a GPT model (linear_attention_freq: 1 = linear)?
bool isLinearAttentionLayer(const Recipe& r, int layer);
// A GPT model whose layers are DSA (experimental_attention_variant dsa; a hybrid stack's 'D' is RS38's).
bool isDsaModel(const Recipe& r);
// Does global layer `layer` (0-based) reuse an earlier layer's top-k (dsa.py is_dsa_skip_topk_layer on the
// 1-based layer number, with dsa_indexer_topk_freq and dsa_indexer_skip_topk_offset), and which layer
// computes the top-k it reuses (source_dsa_compute_layer; the layer itself where it computes one)?
bool isDsaSkipTopkLayer(const Recipe& r, int layer);
int dsaSourceLayer(const Recipe& r, int layer);
LayerKind layerKind(const Recipe& r, int layer);
// Every layer's kind, in order (num_layers of them; at most kMaxLayers).
std::vector<LayerKind> layerKinds(const Recipe& r);
// A layer kind in words: "Mamba", "attention + MoE", "MoE".
std::string layerKindName(const LayerKind& k);

// Multi-token prediction (Megatron Core's MultiTokenPredictionBlock, multi_token_prediction.py at d98e8a64):
// each depth re-embeds the tokens rolled by one, normalises them (enorm) and the previous depth's output
// (hnorm), projects their concatenation [s, b, 2h] to h (eh_proj, column-parallel), runs its layers and a
// final layernorm; the stage with the loss computes the depth's logits and cross-entropy with the shared
// output layer (gpt_model.py _postprocess, process_mtp_loss).
struct MtpShape {
    // The depths the forward runs: config.mtp_num_layers once the front end has read the pattern
    // (Megatron-LM's validate_args and Bridge's HybridModelProvider.finalize take a hybrid stack's from its
    // '/' parts, except Bridge's with mtp_use_repeated_layer, which keeps mtp_num_layers).
    int depths = 0;
    // The MTP layers with parameters of their own: one under mtp_use_repeated_layer (one layer run at every
    // depth: MultiTokenPredictionBlock._build_layers), else one per depth.
    int built = 0;
    // One depth's layers: a GPT model's is the last decoder layer's kind (gpt_layer_specs.py
    // get_gpt_mtp_block_spec takes the block spec's last layer; Bridge's mtp_block_spec re-derives it on a
    // stage without decoder layers), a DSA one computing its own top-k (the layer is number 1 of its depth:
    // transformer_layer.py:357, dsa.py is_dsa_skip_topk_layer); a hybrid stack's the MTP pattern's symbols.
    std::vector<LayerKind> layers;
    std::string pattern; // a hybrid stack's MTP pattern; "" in a GPT model
};
// A hybrid stack's MTP pattern is the part after '/' of hybrid_layer_pattern, else
// mtp_hybrid_override_pattern joined to it as the front ends join it: mtp_num_layers copies when it is above
// 0 (arguments.py:774-784 at d98e8a64; hybrid_provider.py:198-211 at Bridge 067f987d, which joins at least
// one under mtp_use_repeated_layer); without a pattern HybridModel builds no MTP (hybrid_model.py:220-230).
MtpShape mtpShape(const Recipe& r);

// Megatron-LM pads the vocabulary to a multiple of make_vocab_size_divisible_by x TP
// (megatron/training/tokenizer/tokenizer.py _vocab_size_with_padding).
int64_t paddedVocabSize(const Recipe& r);

// Is global layer `layer` an MoE layer (moe_layer_freq: every N-th layer, or a 0/1 pattern; in a hybrid
// stack its 'E' symbols)?
bool isMoeLayer(const Recipe& r, int layer);
int moeLayerCount(const Recipe& r); // how many of num_layers are (in 64 bits: no wrap near INT_MAX)

// The parallel sizes of one job: Megatron's world (TP x CP x DP x PP), expert-TP and expert-DP, and the
// micro-batches one step accumulates per DP rank.
struct ParallelSizes {
    int tp = 1, cp = 1, ep = 1, etp = 1, pp = 1, vpp = 1, dp = 1, edp = 1;
    int world = 1;
    bool sp = false; // sequence parallelism (TP > 1 only)
    int micro_batches = 1; // global_batch_size / (micro_batch_size x DP)
};
// The precision-aware optimizer as Megatron Core builds it: under the distributed optimizer only
// (optimizer/__init__.py refuses it otherwise). The moments are then in exp_avg(_sq)_dtype.
bool precisionAwareOptimizer(const Recipe& r);
// Transformer Engine's FusedAdam keeps the master weights (in main_params_dtype), unless fp8 other than
// delayed scaling leaves an fp32 main_params_dtype to Megatron's own copy (optimizer_config.py
// use_precision_aware_optimizer_no_fp8_or_ds_fp8).
bool teKeepsMasterWeights(const Recipe& r);
// And keeps them as int16 remainders beside bf16 parameters: fp32 main_params_dtype with
// store_param_remainders (distrib_optimizer.py).
bool masterWeightsAsRemainders(const Recipe& r);
// Expert-TP is the recipe's expert_tensor_parallel_size where set; unset, Megatron's default TP, which must
// fit TP x EP x PP into the world; where it does not, the recipe can only have run with expert-TP 1.
ParallelSizes parallelSizes(const Recipe& r);
// Global ranks in Megatron's default "tp-cp-ep-dp-pp" order (parallel_state.py): the pipeline stage varies
// slowest, so stage s is ranks s x (TP x CP x DP) to (s + 1) x (TP x CP x DP) - 1.
int stageOfRank(const ParallelSizes& p, int rank);
int firstRankOfStage(const ParallelSizes& p, int stage);

// The layers Megatron's even split divides among pipeline chunks: num_layers, plus one for the embedding and
// one for the loss where the recipe counts them (account_for_embedding_in_pipeline_split,
// account_for_loss_in_pipeline_split; transformer_block.py get_num_layers_to_build). In 64 bits.
long long pipelineSplitLayers(const Recipe& r);

// Is the split Megatron's even one: no first / last stage sizes, and no layout on a GPT model (a hybrid stack
// takes its layers from its pattern, whatever the layout says)?
bool isEvenPipelineSplit(const Recipe& r);

// The recipe's pipeline_model_parallel_layout, parsed (pipeline_layout.h); nullopt without one (or with text
// that does not parse, which the readers refuse: pipelineSplitProblem says so).
std::optional<PipelineLayout> pipelineLayoutOf(const Recipe& r);

// The layers of one pipeline stage (pipeline rank), chunk by chunk, as Megatron builds them, in its order of
// precedence:
// - a hybrid stack: HybridModel's select_pipeline_segment (hybrid_layer_allocation.py): '|' segments
//   (segment v x PP + p is chunk v of stage p), else num_layers_in_first / last_pipeline_stage, else the even
//   split; a layout is validated by TransformerConfig but not used for the layers;
// - pipeline_model_parallel_layout: stage v x PP + p of the layout is chunk v of stage p, and its decoder
//   layers are the next ones in the flat order (pipeline_parallel_layer_layout.py get_layer_offset,
//   get_num_layers_to_build); the stage that holds its 'E' builds the embedding, the one with 'L' the
//   output layer and loss, and its 'm' are the MTP layers;
// - num_layers_in_first / last_pipeline_stage: the first / last stage that many, the others the rest evenly,
//   each stage's layers split evenly over its chunks (transformer_block.py get_num_layers_to_build,
//   transformer_layer.py get_transformer_layer_offset);
// - else the even split: num_layers (+1 for the embedding, +1 for the loss where the split accounts for
//   them) / PP per stage, / VPP per chunk, chunk v of stage p starting at v x (L / vpp) + p x (L / (pp x
//   vpp)) (one fewer where the embedding counts), the first chunk of the first stage one layer fewer for the
//   embedding and the last chunk of the last stage one fewer for the loss where they count.
// Where Megatron refuses the split, this is what its arithmetic would give (a layer may be missing or twice):
// pipelineSplitProblem says so, and the rules give Megatron's message.
struct PipelineStage {
    int stage = 0;
    std::vector<int> layers; // global layer index of each of the stage's decoder layers
    std::vector<int> chunk; // the virtual-pipeline chunk of each
    bool first = true; // builds the embedding (the layout's 'E'; else stage 0)
    bool last = true; // builds the output layer and the loss (the layout's 'L'; else the last stage)
    // The multi-token-prediction depths this stage runs (mtpShape: the layout's 'm', else every depth on the
    // last stage, multi_token_prediction.py mtp_on_this_rank), all on one chunk: the stage's last (Megatron
    // asserts it, MultiTokenPredictionBlock.__init__), or the layout's. The estimate and the step time count
    // them; the worker builds none and refuses such a recipe.
    int mtp_layers = 0;
    int mtp_chunk = 0;
    std::string ranges; // "0-1, 8-9"; "" for a stage without decoder layers
};
PipelineStage pipelineStage(const Recipe& r, int stage);
// Every stage, 0 to PP - 1 (one pass over a layout, not one per stage).
std::vector<PipelineStage> pipelineStages(const Recipe& r);
// Why the split is not one Megatron builds with every decoder layer on exactly one chunk of PP x VPP, the
// embedding on the first chunk of stage 0 and the loss on the last chunk of the last stage (with the rule
// that gives Megatron's own message); "" when it is. The estimate refuses a split with a problem instead of
// estimating stages with layers missing.
std::string pipelineSplitProblem(const Recipe& r);
// The most decoder layers any one model chunk holds: what recompute_num_layers is counted against (it
// applies per chunk, transformer_block.py); num_layers / PP / VPP under the even split.
int largestChunkLayers(const Recipe& r);

// --- parameter-efficient fine-tuning ---
// The linear modules of the layers the estimate builds, by the attribute name Megatron Core's layer specs
// give them, which is what Bridge's ModuleMatcher compares peft.target_modules with (peft/module_matcher.py
// at 067f987d: a module matches when its name equals a target; the name is the same in attention, the MLP,
// the routed and shared experts, the Mamba and GatedDeltaNet mixers). One bit each.
enum LoraLinear : uint32_t {
    kLoraQkv = 1u << 0, // linear_qkv (attention, fused with the input norm under TE)
    kLoraProj = 1u << 1, // linear_proj (attention's output, MLA's too)
    kLoraFc1 = 1u << 2, // linear_fc1 (dense MLP, routed experts, shared experts)
    kLoraFc2 = 1u << 3, // linear_fc2
    kLoraQProj = 1u << 4, // MLA without Q compression
    kLoraQDown = 1u << 5, // MLA's linear_q_down_proj, linear_q_up_proj, linear_kv_down_proj,
    kLoraQUp = 1u << 6, //   linear_kv_up_proj
    kLoraKvDown = 1u << 7,
    kLoraKvUp = 1u << 8,
    kLoraInProj = 1u << 9, // in_proj (Mamba, GatedDeltaNet)
    kLoraOutProj = 1u << 10, // out_proj (Mamba, GatedDeltaNet)
    // A frozen linear no target name reaches here (latent MoE's fc1_latent_proj / fc2_latent_proj, MTP's
    // eh_proj and the output layer in its loss).
    kLoraUnnamed = 1u << 31,
};
struct LoraModuleName {
    const char* name;
    LoraLinear bit;
};
const std::vector<LoraModuleName>& loraModuleNames();
// peft is set (Bridge freezes the model and trains adapters only).
bool isPeft(const Recipe& r);
// The bits of peft.target_modules that name a module of the table; 0 without PEFT.
uint32_t loraTargets(const Recipe& r);
// The bits of the linear modules this model's layers have (what a target can match).
uint32_t loraLinearsOfModel(const Recipe& r);
// peft.target_modules entries of the table that no layer of this model has (comma-separated; "" none).
std::string loraTargetsNotInModel(const Recipe& r);
// peft.target_modules entries outside the table: other modules (the router, the output layer), wildcards.
std::string loraTargetsNotModelled(const Recipe& r);

} // namespace rs
