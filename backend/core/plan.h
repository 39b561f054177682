// SPDX-License-Identifier: Apache-2.0
// The plan: every recompute choice Megatron can express at the recipe's profile (the [] control, selective
// label sets, full uniform and block with every recompute_num_layers), each checked by the rules (an error
// drops it, naming the rule), estimated on every rank (estimator.h) and timed (step_time.h); those whose
// every rank fits the per-rank target are ranked by predicted step time. The answer: the cheapest that fits,
// the Pareto front of memory against time, and why each other choice was dropped. Predictions only:
// `recompute plan --confirm` measures the top ones.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/calibration.h"
#include "core/comparison.h"
#include "core/recipe.h"

namespace rs {

enum class PlanVerdict {
    Chosen, // the cheapest predicted step that fits
    Fits, // fits, predicted slower than the chosen one
    // Some rank's estimate is under the target but inside the margin kept for the estimate's error: whether
    // it fits is for a measurement to say (--confirm measures those predicted cheaper than the chosen one).
    WithinError,
    OverTarget, // some rank's estimated peak is over the target
    Invalid, // a rule error
};
const char* planVerdictName(PlanVerdict v); // chosen | fits | within-error | over-target | invalid

struct PlanCandidate {
    RecomputeChoice choice;
    std::string label; // choiceSpelling
    PlanVerdict verdict = PlanVerdict::Fits;
    bool control
        = false; // the [] choice: the baseline of every delta, judged against the target as any other
    std::string rule; // Invalid: the first error's rule id
    std::string rule_message;
    int64_t peak_bytes = 0; // hottest rank
    int hottest_stage = 0;
    std::vector<int64_t> rank_peaks; // per pipeline stage
    double step_ms = 0; // predicted; anchored at the measured [] step where the plan has one
    double model_step_ms = 0; // the model's own prediction, device work and host terms
    double replay_ms = 0;
    double delta_pct = 0; // against the control's step (the measured one where anchored)
    bool on_front = false; // not dominated in (peak, step) among the valid choices
    std::optional<size_t> dominated_by; // a valid choice with no more memory and no more time
    std::string reason; // in words: why it was dropped, or why it is chosen
};

struct Plan {
    std::optional<double> target_gb;
    double margin = 0; // the fraction of the target kept free (the estimator's stated error)
    std::vector<PlanCandidate> candidates; // the control first, then the enumeration order
    std::optional<size_t> chosen;
    std::vector<size_t> front; // by peak, increasing
    std::string rates_source;
    bool provisional = false;
    // The [] control's measured steady step of this job, when given: every step time is it plus the choice's
    // predicted difference from the model's own [] (the model predicts what a choice replays better than
    // the whole step, whose host time and small kernels it does not have: docs/benchmarks.md).
    std::optional<double> measured_control_ms;
    std::vector<std::string> notes;
};

// Every choice Megatron can express at the recipe's profile: [], each set of the labels with an effect on
// the model (all subsets while there are at most 8, else up to three labels), full uniform and full block
// with every recompute_num_layers from 1 to a chunk's layers.
std::vector<RecomputeChoice> expressibleChoices(const Recipe& resolved);

// `resolved`: validate(...).resolved; `format` is the recipe's input format (its front-end rules apply).
// target_gb: none ranks every valid choice. margin: as rankCandidatesByEstimate's. measured_control_ms: the
// job's measured [] step, to anchor the step times at (Plan::measured_control_ms).
Plan planRecompute(const Recipe& resolved, InputFormat format, const CalibrationRates& rates,
    std::optional<double> target_gb, double margin, std::optional<double> measured_control_ms = std::nullopt);

// A choice's predicted change against [] over a measured [] step of `control_ms`: its predicted difference
// from the model's own [] (the plan's first candidate), in %. What a plan anchored at that step gives as
// delta_pct, and what a measurement's Δ is held to.
double anchoredDeltaPct(const Plan& p, const PlanCandidate& c, double control_ms);

// What a confirmation measures, at most n, never the control: the chosen choice first, then the
// within-error ones predicted cheaper than it (the estimate cannot say they do not fit, so a measurement
// may find a cheaper choice that does), cheapest first, then the other fitting ones by predicted step.
// With nothing chosen, the within-error ones by predicted step.
std::vector<size_t> confirmationOrder(const Plan& p, int n);

nlohmann::json planToJson(const Plan& p);

} // namespace rs
