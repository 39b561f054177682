// SPDX-License-Identifier: Apache-2.0
// The step-time model: every rank's (every pipeline stage's) predicted step time for a recompute choice,
// before any run. Work, not rules of thumb: per layer the regions Megatron Core runs (the norms, the
// attention projections, core attention, MLA's up-projections, the dense MLP, the router, the token
// permutation, the experts as one grouped GEMM, their activation, the combine, the shared experts, the
// Mamba and GatedDeltaNet mixers), each region's forward FLOPs and bytes from the model's resolved shapes
// (model_shape.h, the estimator's), its backward from the forward (a product's two gradients; flash
// attention's five products to two; an elementwise op's three tensors to two), and the replay of the
// regions the recompute choice checkpoints (the label table's `replays`, recompute_labels.h; full recompute
// replays whole layers), turned into time by the rates a calibration record measured on the device
// (calibration.h) and the kernels each region launches (the host's share where a layer runs faster on the
// device than the host can queue it). Then the schedule: micro-batches, the pipeline's bubble
// (p - 1) / (m x v) of 1F1B and the interleaved schedule, and the optimizer step's bytes (the estimate's
// persistent state, estimator.h). Every term says where it comes from, as the memory estimate's do.
//
// Not modelled, and said in every estimate: communication (TP / SP / CP / EP collectives, the gradient
// reduce and the parameter gather), which one GPU does not run; load imbalance between experts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/calibration.h"
#include "core/estimator.h"
#include "core/recipe.h"

namespace rs {

// One term of a step time: a region's work in one phase, summed over the stage's layers and micro-batches.
struct TimeTerm {
    std::string phase; // forward | backward | replay | schedule | optimizer
    std::string name; // the region ("core_attn", "moe_experts") or the schedule's term ("pipeline bubble")
    double ms = 0;
    double flops = 0;
    double bytes = 0;
    double kernels = 0;
    double host_bound_ms = 0; // the share of `ms` spent where the host, not the device, set the pace
    std::string source; // the formula and the rate it used
};

struct RankStepTime {
    int stage = 0;
    std::string scope; // "stage 0: layers 0-7 of 32, embedding"
    double step_ms = 0; // this rank's step: its micro-batches, the bubble, its optimizer step
    double compute_ms = 0; // forward and backward of every micro-batch, replays included
    double replay_ms = 0; // of which the recompute choice's replays
    double bubble_ms = 0;
    double optimizer_ms = 0;
    std::vector<TimeTerm> terms; // sums to step_ms
};

// What an FP8 recipe's prediction is not (an assumption of its estimate and a note of its plan): the record
// has no FP8 rate.
inline constexpr const char* kFp8NotTimed = "fp8: Transformer Engine's FP8 products are timed at the "
                                            "record's 16-bit rates and its quantizing passes "
                                            "are not timed (this calibration record has no FP8 GEMM rate; "
                                            "recompute-bench --calibrate measures one on "
                                            "a GPU that runs FP8): the predicted steps are the bf16 job's";
// ... and where the record has FP8 GEMM rates.
inline constexpr const char* kFp8Timed
    = "fp8: Transformer Engine's FP8 products at the record's FP8 GEMM rate and its cast-transposes at the "
      "elementwise rate; not yet checked against a real FP8 step";

struct StepTimeEstimate {
    std::string choice; // choiceSpelling of the recipe's recompute choice
    double step_ms = 0; // the job's step: its slowest rank's (the pipeline runs at that pace)
    int slowest = 0; // index into ranks
    double replay_ms = 0; // the slowest rank's replays
    std::vector<RankStepTime> ranks; // one per pipeline stage, in stage order
    std::string rates_source; // the calibration's device, dtype and source
    bool provisional = false; // the rates were not measured on the device they name
    std::vector<std::string> assumptions;
    std::string not_estimated; // the memory estimate's reason, when there is none
};

// Predicts a resolved recipe's step under its own recompute choice. `memory`: its memory estimate in the
// Megatron layout (the optimizer step's bytes come from it); computed when null.
StepTimeEstimate estimateStepTime(
    const Recipe& resolved, const CalibrationRates& rates, const MemoryEstimate* memory = nullptr);

nlohmann::json stepTimeToJson(const StepTimeEstimate& e);

} // namespace rs
