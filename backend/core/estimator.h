// SPDX-License-Identifier: Apache-2.0
// The memory estimator: every rank's (every pipeline stage's) allocated bytes per phase, before any run, for
// the recipe's own recompute choice or any other. It counts tensors, not rules of thumb: per transformer
// layer the tensors each region saves for backward (docs/estimator.md lists every term, its source and its
// assumptions), the persistent state around them (parameters, main parameters, the gradient buffer, the
// optimizer's moments) and the transient peaks (logits and cross-entropy, unfused attention scores, the
// replay of a checkpointed region in backward).
//
// Two layouts:
// - Layout::Megatron: what Megatron-LM / Megatron Core allocate on a GPU (bf16 parameters, DDP's persistent
//   contiguous gradient buffer, fp32 main parameters and Adam moments, sharded over data parallelism by the
//   distributed optimizer, micro-batches per step, pipeline stages with their in-flight micro-batches);
// - Layout::Worker: what recompute-bench allocates for one rank of the layout on one device (backend/engine:
//   the rank's TP / SP / CP / EP shares, its gradient buffer and optimizer shard, the pipeline stage run by
//   the worker's schedule, LibTorch 1.13's own saved tensors on CPU); its hottest rank is the one the
//   worker runs by default (the Megatron layout's hottest stage). Every figure says which layout it is for.
//
// Standard library and nlohmann/json only; fast enough to run on every edit for every choice at once
// (bench/bench_estimate.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/comparison.h"
#include "core/recipe.h"

namespace rs {

enum class Layout { Megatron, Worker };
const char* layoutName(Layout l); // "megatron", "worker"
std::optional<Layout> layoutFromName(const std::string& name);

// DeepSeek sparse attention (a GPT model with experimental_attention_variant dsa): "" where the Megatron
// layout models the path Megatron takes for this recipe (the cuDNN / FlashMLA kernels with the sparse
// indexer loss or none), else why it does not (the PyTorch reference path, TileLang, the dense loss, shapes
// FlashMLA declines); "" for a model without DSA. The estimate refuses with this sentence; RS38 says it.
std::string dsaPathNotModelled(const Recipe& r);

// One term of an estimate: its category, bytes, where the figure comes from and what it assumes.
struct MemoryTerm {
    std::string category; // parameters | main_parameters | gradients | optimizer_states | activations |
                          // transient | other
    std::string name;
    int64_t bytes = 0;
    std::string source; // "Korthikanti et al. 2022, Table 2" or the Megatron / worker file it follows
    std::string note; // assumptions, and what the term leaves out
};

// One phase of one step on one rank: its peak and what the peak is made of.
struct PhaseEstimate {
    std::string phase; // forward | backward | optimizer | optimizer-init
    int64_t peak_bytes = 0;
    std::vector<MemoryTerm> terms; // sums to peak_bytes
    // Of peak_bytes: the private memory pool of Megatron's local CUDA graphs (cuda_graph_impl local), device
    // memory the caching allocator's allocated counters do not see once the graphs are captured. 0 without.
    int64_t graph_pool_bytes = 0;
    int64_t category(const std::string& name) const;
};

struct RankEstimate {
    int stage = 0; // pipeline stage (rank within the pipeline; every TP/CP/DP rank of a stage is alike)
    std::string scope; // "stage 0: layers 0-7 of 32, embedding"
    int in_flight_micro_batches = 1;
    int64_t peak_bytes = 0;
    std::string peak_phase;
    // What torch.cuda.max_memory_allocated (Megatron's `max allocated`) reads from iteration 2 on: the
    // largest phase peak less its graph_pool_bytes. peak_bytes without local CUDA graphs.
    int64_t max_allocated_bytes = 0;
    std::vector<PhaseEstimate> phases; // forward, backward, optimizer, optimizer-init
    // The parameters this rank's optimizer step updates: all of its stage's, or its shard under the
    // distributed optimizer (dense / (DP x CP), experts / expert-DP). The step-time model's optimizer work.
    double optimizer_params = 0;
    double parameters = 0; // the stage's parameters (every TP rank of it holds this many)
    double parameter_tensors = 0; // and how many tensors hold them
    // Those with a gradient: all of them, or under PEFT the adapters alone (the rest frozen).
    double trained_parameters = 0;
    double trained_parameter_tensors = 0;
    // The first iteration's peak: its forward and backward run before the first optimizer step creates
    // Adam's moments, so they hold everything but the optimizer_states; its step is optimizer-init.
    // What Megatron-LM reports "after iteration 1"; peak_bytes is "from iteration 2 on".
    int64_t first_iteration_peak_bytes = 0;
    std::string first_iteration_phase;
    const PhaseEstimate* phase(const std::string& name) const;
    const PhaseEstimate& peak() const;
};

struct MemoryEstimate {
    Layout layout = Layout::Megatron;
    std::string choice; // the recompute choice's label: "[]", "core_attn,moe_act", "full:uniform:1"
    int64_t peak_bytes = 0; // the hottest rank's peak (from the second iteration on)
    int64_t max_allocated_bytes = 0; // the hottest rank's max_allocated_bytes
    int64_t first_iteration_peak_bytes = 0; // the largest first-iteration peak of any rank
    int hottest = 0; // index into ranks
    std::vector<RankEstimate> ranks; // one per pipeline stage, in stage order
    std::vector<std::string> assumptions; // what holds for every term (dtype, parallel layout, defaults)
    // Why there is no estimate (ranks empty): sizes the estimate does not take (no layer, more than
    // kMaxLayers, more pipeline chunks than layers, a parallel size below 1). "" when estimated.
    std::string not_estimated;
};

// Estimates a resolved recipe (rules::validate(...).resolved) under its own recompute settings.
MemoryEstimate estimateMemory(const Recipe& resolved, Layout layout = Layout::Megatron);
// The global rank the worker and a one-rank real job run by default: the first rank of the pipeline stage
// whose peak is the highest in the Megatron layout (every TP, CP and DP rank of a stage holds the same).
int hottestRankOfLayout(const Recipe& resolved);

// A recompute choice: selective modules, full uniform/block with recompute_num_layers, or none.
// Every choice the recipe's model can take: [], each label with an effect on this architecture
// (allowedRecomputeModules + recomputeLabelEffect), full uniform 1, full block with every layer of a chunk.
std::vector<RecomputeChoice> recomputeChoices(const Recipe& r);
// Does the estimate have a region for this recompute label (the label table asks, recompute_labels.h)?
bool estimatorModelsLabel(std::string_view label);

// Bytes one layer keeps for backward under the recipe's recompute choice (selective labels only; full
// recompute keeps a layer's input), per micro-batch and rank: a GPT layer with a dense and with an MoE MLP,
// and each kind of layer the recipe has (model_shape.h layerKinds), in the order they first occur.
struct LayerActivations {
    int64_t dense = 0;
    int64_t moe = 0;
    std::vector<std::pair<std::string, int64_t>> by_kind; // layerKindName, bytes
};
LayerActivations activationsPerLayer(const Recipe& resolved, Layout layout = Layout::Megatron);

// The estimate as JSON: {layout, choice, peak_allocated_bytes, hottest_stage, ranks: [...], assumptions}.
nlohmann::json estimateToJson(const MemoryEstimate& e);

// Orders candidates (recompute choices applied to one recipe) for a sweep or the advisor, and names those
// the estimate says cannot fit the per-rank target (target_gb, 1 GB = 1e9 bytes; none: all fit).
struct RankedCandidate {
    size_t index = 0; // into the candidates given
    std::string label;
    int64_t peak_bytes = 0; // hottest rank
    int hottest_stage = 0;
    bool fits = true;
    std::string skip_reason; // empty when it fits
};
// Fitting candidates first, in the order given (the caller's preference, e.g. the narrowest label first),
// then those over the target, by estimated peak, each with its reason. margin: the fraction of the target
// kept free for what the estimate leaves out (0.0 by default).
std::vector<RankedCandidate> rankCandidatesByEstimate(const Recipe& resolved,
    const std::vector<RecomputeChoice>& candidates, std::optional<double> target_gb,
    Layout layout = Layout::Megatron, double margin = 0.0);

} // namespace rs
