// SPDX-License-Identifier: Apache-2.0
#include "core/advisor.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <stdexcept>
#include <tuple>

#include "core/units.h"

namespace rs {

namespace {

std::string fixed(double v, int decimals)
{
    return formatFixed(v, decimals);
}

std::string rankText(int rank)
{
    return rank < 0 ? std::string("max over ranks") : "rank " + std::to_string(rank);
}

// How far a failed run got: iteration first, then the stage within the step (the worker's stages in the
// order a step runs them).
int stageOrder(const std::string& stage)
{
    static const std::vector<std::string> order
        = { "validate", "build", "forward", "backward", "optimizer-init", "optimizer" };
    const auto it = std::find(order.begin(), order.end(), stage);
    return it == order.end() ? -1 : int(it - order.begin());
}

std::string failureText(const AdviceCandidate& c)
{
    std::string s = c.outcome.empty() ? std::string("unknown outcome") : c.outcome;
    if (!c.failure_stage.empty())
        s += " in " + c.failure_stage;
    if (c.failure_iteration)
        s += " at iteration " + std::to_string(*c.failure_iteration);
    return s;
}

// The largest measured rank peak, and its rank.
std::optional<RankPeakBytes> worstPeak(const AdviceCandidate& c)
{
    std::optional<RankPeakBytes> worst;
    for (const RankPeakBytes& p : c.rank_peaks) {
        if (!worst || p.bytes > worst->bytes)
            worst = p;
    }
    return worst;
}

bool notRunYet(const AdviceCandidate& c)
{
    return c.outcome.empty() || c.outcome == "planned";
}

bool fullRecompute(const AdviceCandidate& c)
{
    return c.label.rfind("full", 0) == 0; // "full uniform 1", "full:block:4"
}

std::string stageText(const AdviceCandidate& c)
{
    return c.estimated_stage ? " on stage " + std::to_string(*c.estimated_stage) : std::string();
}

std::string categoryText(const std::string& name)
{
    std::string s = name;
    std::replace(s.begin(), s.end(), '_', ' ');
    return s;
}

// The guide's step 3 on the control's attribution: the line, and the label to try first.
void attributePeak(const AdviceCandidate& control, int dp, Advice& advice)
{
    if (!control.peak_attribution)
        return;
    const PeakAttributionBytes& a = *control.peak_attribution;
    auto gb = [dp](std::int64_t b) { return formatGb(b, dp); };
    std::vector<std::pair<std::string, std::int64_t>> cats;
    for (const auto& c : a.categories) {
        if (c.second > 0)
            cats.push_back(c);
    }
    if (cats.empty())
        return;
    std::stable_sort(
        cats.begin(), cats.end(), [](const auto& x, const auto& y) { return x.second > y.second; });
    std::optional<std::pair<std::string, std::int64_t>> largest;
    for (const auto& r : a.regions) {
        if (r.second > 0 && (!largest || r.second > largest->second))
            largest = r;
    }
    std::string line = "the peak (" + (a.phase.empty() ? std::string("unknown phase") : a.phase) + ", "
        + gb(a.peak_bytes) + " GB) is held by: ";
    std::int64_t activations = 0;
    for (std::size_t i = 0; i < cats.size(); ++i) {
        line += (i ? ", " : "") + categoryText(cats[i].first) + " " + gb(cats[i].second) + " GB";
        if (cats[i].first == "activations") {
            activations = cats[i].second;
            if (largest)
                line += " (largest region " + largest->first + ": " + gb(largest->second) + " GB)";
        }
    }
    advice.peak_attribution = line;
    const std::int64_t base = a.peak_bytes > 0 ? a.peak_bytes : 0;
    if (largest && base > 0 && double(activations) >= kActivationShareFraction * double(base))
        advice.attribution_label = recomputeLabelOfRegion(largest->first);
    if (!advice.attribution_label.empty())
        advice.peak_attribution
            += "; try " + advice.attribution_label + " first: its region holds the most " + "activations";
}

} // namespace

const char* verdictName(Verdict v)
{
    switch (v) {
    case Verdict::Chosen:
        return "chosen";
    case Verdict::NotPassed:
        return "not-passed";
    case Verdict::NotMatched:
        return "not-matched";
    case Verdict::NoPeak:
        return "no-peak";
    case Verdict::OverTarget:
        return "over-target";
    case Verdict::NoStepTime:
        return "no-step-time";
    case Verdict::Slower:
        return "slower";
    case Verdict::SkippedByEstimate:
        return "skipped-by-estimate";
    case Verdict::NotMeasured:
        return "not-measured";
    }
    return "unknown";
}

const char* const kWorkerStepOnMoeNote
    = "step times of MoE runs by the worker are the GPU's work; a real Megatron-LM step also holds the "
      "host's "
      "time (Python, kernel launches, the token dispatcher's synchronisations: 60 % of a 4-layer 64-expert "
      "step on an H100 with Transformer Engine, docs/benchmarks.md), which can hide a replay cost: for the "
      "choice by time, measure the job's own rank (recompute sweep --job --one-rank)";

Advice adviseRecompute(const std::vector<AdviceCandidate>& candidates, double target_gb)
{
    if (!std::isfinite(target_gb) || target_gb <= 0)
        throw std::invalid_argument("target_gb: " + fixed(target_gb, 3)
            + " is not a per-rank memory target (a positive number of GB, 1 GB = 1e9 bytes)");
    Advice advice;
    advice.target_gb = target_gb;
    advice.verdicts.resize(candidates.size());
    // Compared in whole bytes, so 36.000 GB admits exactly 36,000,000,000 bytes.
    const auto targetBytes = gbToBytes(target_gb);
    // The guide's tables print 3 decimals; a sub-GB target (a CPU smoke test) needs more to say anything.
    const int dp = target_gb < 1.0 ? 6 : 3;
    auto gbText = [dp](std::int64_t bytes) { return formatGb(bytes, dp); };
    const std::string targetText = fixed(target_gb, dp) + " GB target";

    const AdviceCandidate* control = nullptr;
    for (const auto& c : candidates) {
        if (c.is_control) {
            control = &c;
            break;
        }
    }

    // A candidate not yet run is skipped when its estimate exceeds the target by more than the estimator's
    // stated error: within the error it may still fit, and only a measurement can say.
    const double skipAbove = target_gb * kBytesPerGb * (1.0 + kEstimateErrorFraction);
    const std::string errorText = formatGbShort(kEstimateErrorFraction * 100.0, 1) + " %";
    auto estimatedOver = [&](const AdviceCandidate& c) {
        return c.estimated_peak_bytes && double(*c.estimated_peak_bytes) > skipAbove;
    };

    std::vector<std::size_t> eligible;
    for (std::size_t i = 0; i < candidates.size(); ++i) {
        const AdviceCandidate& c = candidates[i];
        CandidateVerdict& v = advice.verdicts[i];
        if (notRunYet(c) && c.estimated_peak_bytes) {
            const std::string est = formatGbShort(bytesToGb(*c.estimated_peak_bytes), dp) + " GB";
            if (estimatedOver(c)) {
                v.verdict = Verdict::SkippedByEstimate;
                v.reasons.push_back("estimated " + est + " > target " + formatGbShort(target_gb, dp) + " GB ("
                    + (c.estimated_stage
                            ? "the hottest rank: stage " + std::to_string(*c.estimated_stage) + "; "
                            : std::string())
                    + "over it by more than the estimator's " + errorText + " error): skipped, not run");
            } else {
                v.verdict = Verdict::NotMeasured;
                v.reasons.push_back("not measured yet: estimated " + est + stageText(c)
                    + (double(*c.estimated_peak_bytes) > double(targetBytes)
                            ? " is over the target " + formatGbShort(target_gb, dp)
                                + " GB by less than the estimator's " + errorText
                                + " error: only a measurement can say whether it fits"
                            : " fits the target " + formatGbShort(target_gb, dp) + " GB"));
            }
            continue;
        }
        std::vector<Verdict> found;
        if (c.outcome != "pass") {
            found.push_back(Verdict::NotPassed);
            std::string reason = "did not pass: " + failureText(c);
            // The guide: a candidate that gets farther but still OOMs is diagnostic evidence, not a pass.
            if (control && control != &c && control->outcome != "pass" && control->failure_iteration
                && c.failure_iteration) {
                const auto mine = std::make_tuple(*c.failure_iteration, stageOrder(c.failure_stage));
                const auto theirs
                    = std::make_tuple(*control->failure_iteration, stageOrder(control->failure_stage));
                if (mine > theirs)
                    reason += " (gets farther than the [] control, which failed " + failureText(*control)
                        + ", but a candidate that still fails is not a pass)";
            }
            // A peak read before the failure says nothing about the peak the full step needs.
            const auto partial = worstPeak(c);
            if (partial && partial->bytes <= targetBytes)
                reason += "; its " + gbText(partial->bytes) + " GB on " + rankText(partial->rank)
                    + " before it stopped is under the target but is not the peak of a completed step";
            v.reasons.push_back(reason);
        }
        if (!c.matched) {
            found.push_back(Verdict::NotMatched);
            std::string reason = "not matched to the control, not compared";
            for (std::size_t k = 0; k < c.unmatched_reasons.size(); ++k)
                reason += (k == 0 ? ": " : "; ") + c.unmatched_reasons[k];
            v.reasons.push_back(reason);
        }
        const auto worst = worstPeak(c);
        if (worst) {
            v.worst_peak_bytes = worst->bytes;
            v.worst_rank = worst->rank;
            if (worst->bytes > targetBytes) {
                v.over_target_gb = bytesToGb(worst->bytes - targetBytes);
                found.push_back(Verdict::OverTarget);
                v.reasons.push_back("over the " + targetText + " on " + rankText(worst->rank) + " by "
                    + fixed(*v.over_target_gb, dp) + " GB (" + gbText(worst->bytes) + " GB)");
            }
        } else if (c.outcome == "pass") {
            found.push_back(Verdict::NoPeak);
            v.reasons.push_back("no peak allocated was measured: whether it fits is unknown");
        }
        if (found.empty() && !c.steady_step_ms) {
            found.push_back(Verdict::NoStepTime);
            v.reasons.push_back("fits (" + gbText(worst->bytes) + " GB on " + rankText(worst->rank)
                + ") but no steady step time was measured: its replay cost is unknown");
        }
        if (found.empty())
            eligible.push_back(i);
        else
            v.verdict = found.front();
    }

    // Cheapest = lowest steady step time; ties go to the smaller peak, then to the earlier candidate.
    auto key = [&](std::size_t i) {
        return std::make_tuple(*candidates[i].steady_step_ms, *advice.verdicts[i].worst_peak_bytes, i);
    };
    if (!eligible.empty()) {
        const std::size_t best = *std::min_element(
            eligible.begin(), eligible.end(), [&](auto a, auto b) { return key(a) < key(b); });
        advice.chosen = best;
        const AdviceCandidate& b = candidates[best];
        const double bestMs = *b.steady_step_ms;
        const std::int64_t bestPeak = *advice.verdicts[best].worst_peak_bytes;
        for (std::size_t i : eligible) {
            CandidateVerdict& v = advice.verdicts[i];
            const AdviceCandidate& c = candidates[i];
            const std::string fits = "fits (" + gbText(*v.worst_peak_bytes) + " GB on "
                + rankText(*v.worst_rank) + ", " + fixed(bytesToGb(targetBytes - *v.worst_peak_bytes), dp)
                + " GB under the target)";
            if (i == best) {
                v.verdict = Verdict::Chosen;
                v.reasons.push_back(fits + "; " + fixed(bestMs, 2) + " ms, the lowest steady step time of "
                    + std::to_string(eligible.size()) + " that fit");
                continue;
            }
            v.verdict = Verdict::Slower;
            v.slower_pct = bestMs > 0 ? (*c.steady_step_ms - bestMs) / bestMs * 100.0 : 0.0;
            if (*c.steady_step_ms > bestMs)
                v.reasons.push_back(fits + " but slower than " + b.label + " by " + fixed(*v.slower_pct, 2)
                    + "% (" + fixed(*c.steady_step_ms, 2) + " vs " + fixed(bestMs, 2) + " ms)");
            else
                v.reasons.push_back(fits + " and as fast as " + b.label + " (" + fixed(*c.steady_step_ms, 2)
                    + " ms) but with a larger peak (" + gbText(*v.worst_peak_bytes) + " vs "
                    + gbText(bestPeak) + " GB)");
        }
        advice.summary = "use " + b.label + ": " + gbText(bestPeak) + " GB on "
            + rankText(*advice.verdicts[best].worst_rank) + " fits the " + targetText + " at "
            + fixed(bestMs, 2) + " ms per step, the lowest measured replay cost that fits";
        // A peak known for fewer ranks than the job had is not the per-rank peak the target is about.
        if (b.ranks_expected) {
            std::set<int> ranks;
            bool maxOverRanks = false;
            for (const auto& p : b.rank_peaks) {
                ranks.insert(p.rank);
                maxOverRanks = maxOverRanks || p.rank < 0;
            }
            if (!maxOverRanks && int(ranks.size()) < *b.ranks_expected) {
                std::string list;
                for (int r : ranks)
                    list += (list.empty() ? "" : ", ") + std::to_string(r);
                advice.notes.push_back("the peak of " + b.label + " is known for rank(s) " + list + " of "
                    + std::to_string(*b.ranks_expected) + " only: other ranks may peak higher");
            }
        }
    } else {
        // Nothing fits: the closest measured peak, preferring candidates that passed and are matched.
        auto tier = [&](std::size_t i) {
            const AdviceCandidate& c = candidates[i];
            return c.matched ? (c.outcome == "pass" ? 0 : 1) : 2;
        };
        for (std::size_t i = 0; i < candidates.size(); ++i) {
            if (!advice.verdicts[i].worst_peak_bytes)
                continue;
            if (!advice.closest
                || std::make_tuple(tier(i), *advice.verdicts[i].worst_peak_bytes) < std::make_tuple(
                       tier(*advice.closest), *advice.verdicts[*advice.closest].worst_peak_bytes))
                advice.closest = i;
        }
        advice.summary = "nothing fits the " + targetText;
        if (advice.closest) {
            const CandidateVerdict& v = advice.verdicts[*advice.closest];
            const AdviceCandidate& c = candidates[*advice.closest];
            advice.summary += "; closest: " + c.label + " (" + gbText(*v.worst_peak_bytes) + " GB on "
                + rankText(*v.worst_rank);
            if (v.over_target_gb)
                advice.summary += ", " + fixed(*v.over_target_gb, dp) + " GB over";
            if (c.outcome != "pass")
                advice.summary += ", " + failureText(c);
            if (!c.matched)
                advice.summary += ", not matched";
            advice.summary += ")";
        } else {
            advice.summary += "; no candidate has a measured peak";
        }
    }
    // The estimate beside each measured candidate, with its error against the measurement.
    for (std::size_t i = 0; i < candidates.size(); ++i) {
        const AdviceCandidate& c = candidates[i];
        CandidateVerdict& v = advice.verdicts[i];
        if (!c.estimated_peak_bytes || notRunYet(c))
            continue;
        std::string r
            = "estimated " + formatGbShort(bytesToGb(*c.estimated_peak_bytes), dp) + " GB" + stageText(c);
        if (v.worst_peak_bytes && *v.worst_peak_bytes > 0) {
            v.estimate_error_pct
                = double(*c.estimated_peak_bytes - *v.worst_peak_bytes) / double(*v.worst_peak_bytes) * 100.0;
            r += " (" + std::string(*v.estimate_error_pct >= 0 ? "+" : "")
                + formatFixed(*v.estimate_error_pct, 1) + " % against the measured "
                + gbText(*v.worst_peak_bytes) + " GB)";
        }
        if (estimatedOver(c) && v.worst_peak_bytes && *v.worst_peak_bytes <= targetBytes)
            r += "; the estimate said it would not fit, the measurement decides";
        v.reasons.push_back(r);
    }

    // The guide's procedure order: the control, then selective before full, the highest estimated peak that
    // is not skipped first (the narrowest boundary), then those without an estimate, then the skipped ones.
    {
        std::vector<std::size_t> kept, skipped;
        for (std::size_t i = 0; i < candidates.size(); ++i)
            (advice.verdicts[i].verdict == Verdict::SkippedByEstimate ? skipped : kept).push_back(i);
        auto keptKey = [&](std::size_t i) {
            const AdviceCandidate& c = candidates[i];
            return std::make_tuple(c.is_control ? 0 : 1, fullRecompute(c) ? 1 : 0,
                c.estimated_peak_bytes ? 0 : 1, -c.estimated_peak_bytes.value_or(0), i);
        };
        std::stable_sort(kept.begin(), kept.end(), [&](auto a, auto b) { return keptKey(a) < keptKey(b); });
        std::stable_sort(skipped.begin(), skipped.end(), [&](auto a, auto b) {
            return *candidates[a].estimated_peak_bytes < *candidates[b].estimated_peak_bytes;
        });
        advice.order = kept;
        advice.order.insert(advice.order.end(), skipped.begin(), skipped.end());
        for (std::size_t i : kept) {
            if (advice.verdicts[i].verdict == Verdict::NotMeasured) {
                advice.next = i;
                break;
            }
        }
        if (advice.next) {
            const AdviceCandidate& n = candidates[*advice.next];
            advice.summary += (advice.chosen ? "; not measured yet, next: " : "; measure next: ") + n.label
                + " (estimated " + formatGbShort(bytesToGb(*n.estimated_peak_bytes), dp) + " GB)";
        }
        if (!skipped.empty()) {
            std::string list;
            for (std::size_t i : skipped)
                list += (list.empty() ? "" : ", ") + candidates[i].label;
            advice.notes.push_back("skipped by the estimate (over the " + targetText + " by more than the "
                + errorText + " error): " + list);
        }
    }
    if (std::any_of(
            candidates.begin(), candidates.end(), [](const AdviceCandidate& c) { return c.worker_on_moe; }))
        advice.notes.push_back(kWorkerStepOnMoeNote);
    if (control)
        attributePeak(*control, dp, advice);
    if (!control)
        advice.notes.push_back(
            "no [] control among the candidates: the comparison is not the guide's matched one");
    return advice;
}

} // namespace rs
