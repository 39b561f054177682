// SPDX-License-Identifier: Apache-2.0
// One rank of a parallel layout (issue 14): which rank of the recipe's job the worker runs on its one
// device, that rank's share of the model and of the work as Megatron Core gives it, and the order in which
// the pipeline schedule runs its micro-batches. The collectives of the real job become local operations
// that produce tensors of the same shapes (model.cpp), so the rank's memory and compute are the real
// rank's; communication time is not measured.
//
// Rank order is Megatron's default "tp-cp-ep-dp-pp" (parallel_state.py): the TP rank varies fastest, the
// pipeline stage slowest; experts use tp(=expert-TP)-ep-dp-pp. Every TP, CP and DP rank of one pipeline
// stage holds the same shapes (MoE routing is assumed uniform: every EP rank receives as many routed
// tokens as it sends), so only the stage tells ranks apart.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/recipe.h"

namespace rs::engine {

struct LayoutRank {
    int rank = 0; // global rank in the layout
    int world = 1; // TP x CP x DP x PP
    int tp = 1, cp = 1, ep = 1, etp = 1, pp = 1, vpp = 1, dp = 1, edp = 1;
    bool sp = false; // sequence parallelism (TP > 1 only)
    int tp_rank = 0, cp_rank = 0, dp_rank = 0, ep_rank = 0, stage = 0;
    bool first_stage = true, last_stage = true;
    std::vector<int> layers; // global layer index of each of the stage's layers
    std::vector<int> chunk; // virtual-pipeline chunk of each
    int micro_batches = 1; // per step: global_batch_size / (micro_batch_size x DP)
    int in_flight = 1; // (chunk-)micro-batches whose activations the schedule keeps at once
    std::string chosen_by; // "hottest rank by the estimator" | "requested"
    std::string scope; // "stage 0 of 4: layers 0-1, 8-9 of 16, embedding"

    std::string describe() const; // one line for the stream's note
};

// The rank `requested` (a global rank of the layout), or by default the hottest one: the first rank of
// the pipeline stage the estimator (core/estimator.h, Megatron layout) names. Throws EngineError (field
// "rank_of_layout") for a rank outside the layout, (field of the size) for sizes that do not divide.
LayoutRank layoutRank(const Recipe& resolved, std::optional<int> requested = std::nullopt);

// One step of a pipeline schedule on this rank.
struct ScheduleOp {
    bool forward = true;
    int micro_batch = 0;
    int chunk = 0; // model chunk (virtual pipeline)
};

// Megatron's schedules (pipeline_parallel/schedules.py) for stage `stage` of `pp`: PP 1 runs forward then
// backward per micro-batch; 1F1B warms up with min(PP - stage - 1, m) forwards, then alternates, then
// cools down; interleaved (vpp > 1) warms up with (PP - stage - 1) x 2 + (vpp - 1) x PP chunk-forwards,
// micro-batches in groups of PP, chunks in order forward and in reverse backward.
std::vector<ScheduleOp> pipelineSchedule(int pp, int vpp, int stage, int micro_batches);

// The largest number of forwards run and not yet backwarded at any point of a schedule.
int maxInFlight(const std::vector<ScheduleOp>& schedule);

} // namespace rs::engine
