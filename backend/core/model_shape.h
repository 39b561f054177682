// SPDX-License-Identifier: Apache-2.0
// The model's resolved shape and its parallel layout, derived from a recipe once, as Megatron derives
// them: the estimator (estimator.cpp) and the worker (engine/model.cpp, engine/layout_rank.cpp) read these
// instead of each reading the recipe's fields again, so the two never disagree on a width, a layer's kind
// or a stage's layers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/recipe.h"

namespace rs {

// The deepest model the estimator and the worker take (each holds an entry per layer; the deepest published
// models have a few hundred): RS36 refuses more, and the estimate gives none beyond it.
inline constexpr int kMaxLayers = 65536;

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
    int64_t vocab = 0; // padded: a multiple of make_vocab_size_divisible_by x TP
};
ModelShape modelShape(const Recipe& r);

// Megatron-LM pads the vocabulary to a multiple of make_vocab_size_divisible_by x TP
// (megatron/training/tokenizer/tokenizer.py _vocab_size_with_padding).
int64_t paddedVocabSize(const Recipe& r);

// Is global layer `layer` an MoE layer (moe_layer_freq: every N-th layer, or a 0/1 pattern)?
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
// expert_tensor_parallel_size is not a recipe field: Megatron's default is TP, which must fit TP x EP x
// PP into the world; where it does not, the recipe can only have run with expert-TP 1.
ParallelSizes parallelSizes(const Recipe& r);
// Global ranks in Megatron's default "tp-cp-ep-dp-pp" order (parallel_state.py): the pipeline stage varies
// slowest, so stage s is ranks s x (TP x CP x DP) to (s + 1) x (TP x CP x DP) - 1.
int stageOfRank(const ParallelSizes& p, int rank);
int firstRankOfStage(const ParallelSizes& p, int stage);

// The layers Megatron divides among pipeline chunks: num_layers, plus one for the embedding and one for the
// loss where the recipe counts them in the split (account_for_embedding_in_pipeline_split,
// account_for_loss_in_pipeline_split: fields kept as given, read from the Bridge override or the
// Megatron-LM flag; transformer_block.py get_num_layers_to_build). In 64 bits.
long long pipelineSplitLayers(const Recipe& r);

// The layers of one pipeline stage, chunk by chunk (Megatron's offset: chunk v of stage p starts at
// v x (L / vpp) + p x (L / (pp x vpp))).
struct PipelineStage {
    int stage = 0;
    std::vector<int> layers; // global layer index of each of the stage's layers
    std::vector<int> chunk; // the virtual-pipeline chunk of each
    bool first = true, last = true;
    std::string ranges; // "0-1, 8-9"
};
PipelineStage pipelineStage(const Recipe& r, int stage);

} // namespace rs
