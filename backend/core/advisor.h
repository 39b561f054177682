// SPDX-License-Identifier: Apache-2.0
// The recompute advisor: from the candidates of one matched comparison (the [] control and the runs that
// changed only the recompute choice), choose the cheapest passing candidate whose every rank's peak
// allocated memory fits a per-rank target, and say for every other candidate why it was not chosen.
// The guide: "the correct result is the smallest measured replay cost that satisfies the per-rank memory
// target, not the longest module list", and "a candidate that gets farther but still OOMs" is not a pass.
// With the estimator's hottest-rank peak per candidate (core/estimator.h) the advisor also orders the
// candidates as the guide's procedure tries them and skips, with the reason, those not yet measured that
// the estimate says cannot fit: over the target by more than the estimator's stated error.
// Pure C++: the CLI and the studio fill the candidates from the measurement store.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/recompute_labels.h"

namespace rs {

// A measured peak of one rank. rank -1: the maximum over ranks, without knowing which rank held it.
struct RankPeakBytes {
    int rank = -1;
    std::int64_t bytes = 0; // peak allocated (GB = 1e9 bytes, as the guide's tables)
};

// The estimator's stated error (docs/estimator.md, issue 12: within 5 % of the real per-rank peak). A
// candidate is skipped by its estimate only when the estimate exceeds the target by more than this.
constexpr double kEstimateErrorFraction = 0.05;

// What held a run's peak, measured (the stream's peak_attribution at the phase whose peak was the run's
// highest): the live bytes by category and the saved activations by region label, summed over layers.
struct PeakAttributionBytes {
    std::string phase; // forward, backward, optimizer-init, optimizer
    std::int64_t peak_bytes = 0; // the allocator's peak at that phase
    // category -> bytes, in the stream's order (parameters, main_parameters, gradient_buffer,
    // optimizer_states, activations, backward, workspace, other)
    std::vector<std::pair<std::string, std::int64_t>> categories;
    // region -> activation bytes summed over layers (core_attn, mlp, input_layernorm, embedding, ...)
    std::vector<std::pair<std::string, std::int64_t>> regions;
};

// Activations hold "a real share" of the peak from this fraction on: then the label of their largest
// region is the candidate to try first (the guide's step 3, attribute the peak).
constexpr double kActivationShareFraction = 0.10;

struct AdviceCandidate {
    std::int64_t run_id = 0; // the stored run; 0 when not stored
    std::string
        label; // the guide's module set label: "[]", "moe_act", "layernorm, moe_act", "full uniform 1"
    // pass | oom | nonfinite | invalid | error | aborted | running; "" or "planned": not run yet (a
    // sweep's candidate), decided by its estimate alone
    std::string outcome;
    std::string failure_stage; // build, forward, backward, optimizer-init, optimizer ("" on pass)
    std::optional<int> failure_iteration;
    std::vector<RankPeakBytes> rank_peaks; // every rank that was measured
    std::optional<int> ranks_expected; // world size or GPU count, when known (to say when ranks are missing)
    std::optional<double> steady_step_ms;
    bool matched = true; // matched to the control (only the recompute choice differs)
    std::vector<std::string> unmatched_reasons; // why not, one per differing field
    bool is_control = false;
    // The estimator's predicted peak of the hottest rank for this candidate's recompute choice
    // (MemoryEstimate::peak_bytes / RankedCandidate::peak_bytes) and the pipeline stage that holds it.
    std::optional<std::int64_t> estimated_peak_bytes;
    std::optional<int> estimated_stage;
    // Measured by the worker (its step time is the GPU's work) on a model with MoE layers: the real job's
    // step also holds the host's time there (stepTimeOfWorkerOnMoe below).
    bool worker_on_moe = false;
    // The measured peak attribution (rank 0 / the first rank stored), when the run has one.
    std::optional<PeakAttributionBytes> peak_attribution;
};

enum class Verdict {
    Chosen,
    NotPassed, // outcome is not pass: an OOM that gets farther is still not a pass
    NotMatched, // differs from the control in more than the recompute choice: not comparable
    NoPeak, // passed but no peak allocated was measured: whether it fits is unknown
    OverTarget, // some rank's peak is above the target
    NoStepTime, // fits but no steady step time was measured: its replay cost is unknown
    Slower, // fits but costs more step time than the chosen one (or ties and has a larger peak)
    SkippedByEstimate, // not run: its estimate exceeds the target by more than the estimator's error
    NotMeasured, // not run yet; its estimate fits: a candidate to measure
};
const char* verdictName(Verdict v); // "chosen", "not-passed", "not-matched", "no-peak", "over-target",
                                    // "no-step-time", "slower", "skipped-by-estimate", "not-measured"

struct CandidateVerdict {
    Verdict verdict = Verdict::NotPassed;
    // Every reason that applies, the deciding one first, in words ("did not pass: oom in forward at
    // iteration 2", "over the 36.000 GB target on rank 0 by 0.618 GB (36.618 GB)").
    std::vector<std::string> reasons;
    std::optional<std::int64_t> worst_peak_bytes; // the largest measured rank peak
    std::optional<int> worst_rank; // its rank (-1: max over ranks)
    std::optional<double> over_target_gb; // worst peak minus the target, when over
    std::optional<double> slower_pct; // vs the chosen candidate's steady step time
    std::optional<double> estimate_error_pct; // (estimated - measured) / measured peak, when both are known
};

struct Advice {
    double target_gb = 0;
    std::optional<std::size_t> chosen; // index into the candidates
    // When nothing fits: the candidate closest to the target (passing and matched first).
    std::optional<std::size_t> closest;
    std::vector<CandidateVerdict> verdicts; // one per candidate, in input order
    // One line: what to use, or that nothing fits and what came closest. GB with 3 decimals as the guide's
    // tables, 6 when the target is under 1 GB.
    std::string summary;
    std::vector<std::string> notes; // caveats (peaks known for fewer ranks than the job had, no control)
    // The guide's procedure order (Quick Decision Guide 2-5: the [] control, then the narrowest boundary
    // the estimate lets fit, broader replay only after, full recompute last): every candidate not skipped
    // by its estimate, the control first, selective before full, then by estimated peak from the highest
    // (the least memory taken back, so the least replayed), those without an estimate after, in input
    // order; then the skipped ones, closest to the target first. Indices into the candidates.
    std::vector<std::size_t> order;
    // The first candidate of `order` not yet measured: what to run next (none when all are measured).
    std::optional<std::size_t> next;
    // The guide's step 3 on the control's measured attribution: "the peak (forward, 62.000 GB) is held by:
    // activations 40.000 GB (largest region core_attn: 22.550 GB), optimizer states ..." ("" without one).
    std::string peak_attribution;
    // When activations hold a real share of that peak: the label whose region holds most of them, the
    // candidate to try first ("" otherwise or when the largest region maps to no label).
    std::string attribution_label;
};

// Throws std::invalid_argument when target_gb is not a positive finite number.
Advice adviseRecompute(const std::vector<AdviceCandidate>& candidates, double target_gb);

// Why a choice by the worker's step times on MoE is not the real job's (said in Advice::notes when a
// candidate is worker_on_moe): measured on real Megatron-LM + TE, a small MoE step is mostly host time
// (docs/benchmarks.md, "Why the worker's MoE step is shorter").
extern const char* const kWorkerStepOnMoeNote;

} // namespace rs
