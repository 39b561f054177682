// SPDX-License-Identifier: Apache-2.0
// Sound step-time comparisons (issue 15): every steady step time with its spread, Δ time against the
// control with its interval, and a verdict that calls a difference inside the noise "not significant".
//
// Methods (distribution-free, deterministic: no random numbers, so one set of measurements always gives
// one answer):
// - The steady step time of a choice is the MEDIAN of its steady iteration times (every repeat of the
//   choice pooled). Its interval is the order-statistic (binomial) interval of the median: the k-th
//   smallest and k-th largest time, with k the largest for which P(Binomial(n, 1/2) < k) <= (1 - level)/2.
//   Its coverage is exact for any continuous distribution and at least `level`; with fewer than 6
//   iterations no k reaches 95 %, and the interval is [min, max] with its own (lower) coverage, said.
// - Δ time (candidate - control) is the Hodges-Lehmann shift: the median of every pairwise difference.
//   Its interval is the Mann-Whitney (Wilcoxon rank-sum) interval of the shift: the k-th smallest and
//   k-th largest pairwise difference, k from the exact distribution of U (n*m <= 2500) or its normal
//   approximation with continuity correction. No interval exists when even the most extreme
//   arrangement is not rare enough (too few iterations); the verdict is then "not significant".
// - The verdict: the Δ interval lies wholly below 0 → faster, wholly above → slower, else not significant.
// Iterations of one launch share its conditions (clocks, neighbours on the GPU), so they can understate
// the spread between launches; repeats (another launch of the same choice) add theirs to the pool, and a
// verdict stands only when the launches' own medians agree with it beyond their spread (launchVerdict:
// Student's t on the log launch medians, the one parametric step, since a handful of launches is too few for
// a rank test at 95 %).
//
// The guide's rule for a tie: "the correct first candidate is the narrowest boundary implicated", so a
// difference that is not significant goes to the narrower recompute boundary (boundaryWidth below), never
// to the one that happened to measure faster. Pure C++.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/comparison.h"

namespace rs {

struct StepStats {
    int n = 0; // steady iterations
    double median_ms = 0;
    std::optional<double> low_ms, high_ms; // the interval of the median (nullopt: n < 2)
    double coverage = 0; // its exact coverage (>= the level asked for when n is large enough)
    // (high - low) / 2 / median * 100; nullopt without an interval.
    std::optional<double> halfWidthPct() const;
};

// nullopt when `steady_ms` has no finite positive value. Values that are not finite or not positive are
// left out.
std::optional<StepStats> stepStats(std::vector<double> steady_ms, double level = 0.95);

enum class Significance { Faster, Slower, NotSignificant };
const char* significanceName(Significance s); // "faster" | "slower" | "not significant"

struct TimeDelta {
    double delta_ms = 0; // Hodges-Lehmann shift, candidate - control
    std::optional<double> low_ms, high_ms; // its interval; nullopt: too few iterations for one
    double pct = 0; // delta_ms / control median * 100
    std::optional<double> low_pct, high_pct;
    double coverage = 0;
    Significance verdict = Significance::NotSignificant;
};

// Δ time of `candidate` against `control` (their steady iteration times); nullopt when either has none.
std::optional<TimeDelta> timeDelta(
    const std::vector<double>& candidate, const std::vector<double>& control, double level = 0.95);

// Iterations of one launch share its conditions (a neighbour's load, the clocks), so a difference they call
// significant may be one launch's luck. The spread between launches of the same choice says how large that
// luck is: the standard deviation of the log of each launch's median step time about its choice's mean,
// pooled over every choice of the comparison (so two launches each of three choices give 3 degrees of
// freedom). df 0: no choice has two launches, nothing is known.
struct LaunchSpread {
    double sd_log = 0;
    int df = 0;
};
LaunchSpread launchSpread(const std::vector<std::vector<double>>& runMediansPerChoice);
// The quantile of Student's t distribution with `df` degrees of freedom (p in (0, 1), df >= 1).
double studentTQuantile(double p, int df);
// The iterations' verdict stands only when the launches agree: the difference of the mean log launch medians
// of the two sides lies beyond Student's t interval at `level` from the pooled launch spread (a pooled-
// variance two-sample t on launches, deterministic); otherwise it is not significant. Without launch medians
// on either side, or without a spread (df 0), the iterations' verdict stands.
Significance launchVerdict(const TimeDelta& d, const std::vector<double>& candidateRunMedians,
    const std::vector<double>& controlRunMedians, const LaunchSpread& spread, double level = 0.95);

// The product's one Δ step time (issue 29: the runs table, the launch page, the reports and the advisor all
// show it): timeDelta of a candidate's steady iterations against its control's, in % of the control's
// median. A run with no stored iterations (the guide's tables, a log without per-iteration times) gives its
// stored steady step time as its one sample (stepSamples), so the shift is then the plain difference, with
// no interval. Its name, for column headers, and its definition, for their tooltips:
inline constexpr const char* kStepDeltaName = "Δ time (HL)";
inline constexpr const char* kStepDeltaDefinition
    = "Δ step time against the control: the Hodges-Lehmann shift (the median of every pairwise difference of "
      "the steady iteration times) in % of the control's median, with its 95 % Mann-Whitney interval; "
      "\"not significant\" when the interval holds 0. A run that keeps no iteration times counts its stored "
      "steady step time as its one sample.";
// One run's samples for timeDelta: its steady iteration times, or, when there are none, its stored steady
// step time alone (nothing when it has neither).
std::vector<double> stepSamples(std::vector<double> steadyIterations, std::optional<double> storedStepMs);

// "+12.3 % [+8.1, +16.0] (95 %), slower" / "+0.4 % [-2.1, +3.0] (95 %), not significant".
std::string deltaText(const TimeDelta& d);
// "+12.30% [+8.10, +16.00]", "+0.40% [-2.10, +3.00] not significant", "+12.30%" (no interval): a table cell.
std::string deltaCell(const TimeDelta& d);
// "512.30 ms [505.10, 520.00] (n 20, 95 %)".
std::string statsText(const StepStats& s);

// How wide a recompute boundary is, for the guide's tie rule (smaller = narrower): [] nothing replayed
// (0); selective labels by what they replay: the output-discard moe_act and layernorm (1 each),
// core_attn / mla_up_proj / gdn_norm_out (2), shared_experts (3), the whole dense mlp (4), the whole moe
// (5), a label not listed (3); a set is the sum of its labels; full recompute replays whole layers and
// is wider than any selective set (100 + recompute_num_layers).
int boundaryWidth(const RecomputeChoice& choice);

// One choice that fits, for chooseBySignificance.
struct TimedChoice {
    RecomputeChoice choice;
    std::vector<double> steady_ms; // every steady iteration of every repeat
    std::vector<double> run_medians = {}; // each launch's own median (launchVerdict); empty: unknown
};

struct SignificantChoice {
    std::optional<std::size_t> chosen; // index into the choices
    std::optional<std::size_t> fastest; // the lowest median
    // Per choice: its Δ against the fastest (nullopt for the fastest itself and choices without times).
    std::vector<std::optional<TimeDelta>> vs_fastest;
    // Per choice, why it was or was not chosen, in words.
    std::vector<std::string> reasons;
};

// The guide's choice among candidates that all fit: the fastest by median, unless another is not
// significantly slower than it (timeDelta, then launchVerdict) and has a narrower boundary; then the
// narrowest of those (equal widths: the lower median, then the earlier one). Choices without steady times are
// never chosen.
SignificantChoice chooseBySignificance(const std::vector<TimedChoice>& choices, double level = 0.95);

} // namespace rs
