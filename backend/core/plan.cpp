// SPDX-License-Identifier: Apache-2.0
#include "core/plan.h"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "core/estimator.h"
#include "core/model_shape.h"
#include "core/recompute_labels.h"
#include "core/rules.h"
#include "core/step_time.h"
#include "core/units.h"

namespace rs {

const char* planVerdictName(PlanVerdict v)
{
    switch (v) {
    case PlanVerdict::Chosen:
        return "chosen";
    case PlanVerdict::Fits:
        return "fits";
    case PlanVerdict::WithinError:
        return "within-error";
    case PlanVerdict::OverTarget:
        return "over-target";
    case PlanVerdict::Invalid:
        return "invalid";
    }
    return "";
}

std::vector<RecomputeChoice> expressibleChoices(const Recipe& r)
{
    std::vector<RecomputeChoice> out;
    out.push_back(RecomputeChoice {}); // []
    std::vector<std::string> labels;
    for (const auto& label : allowedRecomputeModules(r.profile)) {
        const LabelEffect e = recomputeLabelEffect(r, label);
        if (e.exists && e.has_effect && estimatorModelsLabel(label))
            labels.push_back(label);
    }
    const size_t n = labels.size();
    const size_t most = n <= 8 ? n : 3;
    for (uint32_t mask = 1; mask < (1u << std::min<size_t>(n, 16)); ++mask) {
        if (size_t(__builtin_popcount(mask)) > most)
            continue;
        RecomputeChoice c;
        for (size_t i = 0; i < n; ++i)
            if (mask & (1u << i))
                c.modules.push_back(labels[i]);
        out.push_back(c);
    }
    // Full recompute: recompute_num_layers from 1 to the largest chunk's layers (RS03: more changes nothing).
    const int chunk_layers = std::max(1, largestChunkLayers(r));
    for (const char* method : { "uniform", "block" })
        for (int k = 1; k <= chunk_layers; ++k) {
            RecomputeChoice c;
            c.granularity = "full";
            c.method = method;
            c.num_layers = k;
            out.push_back(c);
        }
    return out;
}

namespace {

// A dominates b: no more memory, no more time, less of one.
bool dominates(const PlanCandidate& a, const PlanCandidate& b)
{
    return a.peak_bytes <= b.peak_bytes && a.step_ms <= b.step_ms
        && (a.peak_bytes < b.peak_bytes || a.step_ms < b.step_ms);
}

std::string pct(double v)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%+.2f %%", v);
    return buf;
}

} // namespace

Plan planRecompute(const Recipe& r, InputFormat format, const CalibrationRates& rates,
    std::optional<double> target_gb, double margin, std::optional<double> measured_control_ms)
{
    Plan plan;
    plan.target_gb = target_gb;
    plan.margin = margin;
    if (measured_control_ms && *measured_control_ms > 0)
        plan.measured_control_ms = measured_control_ms;
    plan.provisional = rates.provisional;
    plan.rates_source = rates.device + ", " + rates.dtype + (rates.provisional ? ", PROVISIONAL" : "");
    // What a rank may use: the target less the margin (no target: anything).
    const int64_t target = target_gb ? gbToBytes(*target_gb) : std::numeric_limits<int64_t>::max();
    const int64_t limit
        = target_gb ? int64_t(double(target) * (1.0 - margin)) : std::numeric_limits<int64_t>::max();
    for (const RecomputeChoice& choice : expressibleChoices(r)) {
        PlanCandidate c;
        c.choice = choice;
        c.label = choiceSpelling(choice);
        c.control = choice.granularity == "selective" && choice.modules.empty();
        const Validation v = validate(candidateRecipe(r, choice), format);
        if (const Finding* error = v.firstError()) {
            c.verdict = PlanVerdict::Invalid;
            c.rule = error->rule_id;
            c.rule_message = error->message;
            c.reason = "invalid: rule " + c.rule + ": " + c.rule_message;
            plan.candidates.push_back(c);
            continue;
        }
        const MemoryEstimate m = estimateMemory(v.resolved, Layout::Megatron);
        if (!m.not_estimated.empty()) {
            c.verdict = PlanVerdict::Invalid;
            c.reason = "not estimated: " + m.not_estimated;
            plan.candidates.push_back(c);
            continue;
        }
        c.peak_bytes = m.peak_bytes;
        c.hottest_stage = m.ranks[size_t(m.hottest)].stage;
        for (const auto& rk : m.ranks)
            c.rank_peaks.push_back(rk.peak_bytes);
        const StepTimeEstimate t = estimateStepTime(v.resolved, rates, &m);
        c.step_ms = c.model_step_ms = t.step_ms;
        c.replay_ms = t.replay_ms;
        if (c.peak_bytes > target) {
            c.verdict = PlanVerdict::OverTarget;
            c.reason = "does not fit: stage " + std::to_string(c.hottest_stage) + " needs "
                + formatGb(c.peak_bytes) + " GB, " + formatGb(c.peak_bytes - target) + " GB over the "
                + formatGb(target) + " GB target";
        } else if (c.peak_bytes > limit) {
            c.verdict = PlanVerdict::WithinError;
            c.reason = "within the estimate's error of the target: stage " + std::to_string(c.hottest_stage)
                + " needs " + formatGb(c.peak_bytes) + " GB of the " + formatGb(target) + " GB target, "
                + formatGb(c.peak_bytes - limit) + " GB into the " + std::to_string(int(margin * 100 + 0.5))
                + " % kept free; a measurement says whether it fits";
        }
        plan.candidates.push_back(c);
    }
    // Anchored: the measured [] step plus each choice's predicted difference from the model's own [].
    const double model_control_ms = plan.candidates.front().model_step_ms;
    if (plan.measured_control_ms && plan.candidates.front().verdict != PlanVerdict::Invalid)
        for (auto& c : plan.candidates)
            if (c.verdict != PlanVerdict::Invalid)
                c.step_ms = *plan.measured_control_ms + (c.model_step_ms - model_control_ms);
    const double control_ms = plan.candidates.front().step_ms;
    for (auto& c : plan.candidates)
        if (c.verdict != PlanVerdict::Invalid && control_ms > 0)
            c.delta_pct = 100.0 * (c.step_ms / control_ms - 1);
    // The Pareto front of the valid choices; a dominated one names the first that dominates it.
    for (size_t i = 0; i < plan.candidates.size(); ++i) {
        auto& c = plan.candidates[i];
        if (c.verdict == PlanVerdict::Invalid)
            continue;
        for (size_t j = 0; j < plan.candidates.size() && !c.dominated_by; ++j)
            if (j != i && plan.candidates[j].verdict != PlanVerdict::Invalid
                && dominates(plan.candidates[j], c))
                c.dominated_by = j;
        // Equal in both: the first listed stays on the front.
        for (size_t j = 0; j < i && !c.dominated_by; ++j)
            if (plan.candidates[j].verdict != PlanVerdict::Invalid
                && plan.candidates[j].peak_bytes == c.peak_bytes && plan.candidates[j].step_ms == c.step_ms)
                c.dominated_by = j;
        c.on_front = !c.dominated_by;
        if (c.on_front)
            plan.front.push_back(i);
    }
    std::sort(plan.front.begin(), plan.front.end(), [&plan](size_t a, size_t b) {
        return plan.candidates[a].peak_bytes < plan.candidates[b].peak_bytes;
    });
    // The cheapest predicted step among those that fit (the control too: no recompute needed).
    for (size_t i = 0; i < plan.candidates.size(); ++i) {
        const auto& c = plan.candidates[i];
        if (c.verdict != PlanVerdict::Fits)
            continue;
        if (!plan.chosen || c.step_ms < plan.candidates[*plan.chosen].step_ms)
            plan.chosen = i;
    }
    for (size_t i = 0; i < plan.candidates.size(); ++i) {
        auto& c = plan.candidates[i];
        if (plan.chosen && i == *plan.chosen) {
            c.verdict = PlanVerdict::Chosen;
            c.reason = "the cheapest predicted step that fits (" + pct(c.delta_pct) + " against [])";
            continue;
        }
        if (c.verdict == PlanVerdict::WithinError && plan.chosen
            && c.step_ms < plan.candidates[*plan.chosen].step_ms)
            c.reason += "; predicted " + pct(100.0 * (c.step_ms / plan.candidates[*plan.chosen].step_ms - 1))
                + " against " + plan.candidates[*plan.chosen].label + ": --confirm measures it";
        if (c.verdict == PlanVerdict::Fits) {
            if (c.dominated_by)
                c.reason = "dominated by " + plan.candidates[*c.dominated_by].label
                    + " (no more memory, no "
                      "more time)";
            else if (plan.chosen)
                c.reason = "fits, predicted "
                    + pct(100.0 * (c.step_ms / plan.candidates[*plan.chosen].step_ms - 1)) + " slower than "
                    + plan.candidates[*plan.chosen].label;
        }
    }
    plan.notes.push_back("predicted, not measured: step times from the rates of " + rates.device + " ("
        + rates.dtype + (rates.provisional ? ", a PROVISIONAL record, not a measurement" : "")
        + "); communication is not modelled");
    if (plan.measured_control_ms && model_control_ms > 0) {
        char buf[240];
        std::snprintf(buf, sizeof buf,
            "anchored at the measured [] step, %.1f ms: each choice's step is it plus the predicted "
            "difference "
            "from the model's own [] (%.1f ms, %+.1f %% against the measurement)",
            *plan.measured_control_ms, model_control_ms,
            100.0 * (model_control_ms / *plan.measured_control_ms - 1));
        plan.notes.push_back(buf);
    }
    if (r.fp8 && !r.fp8->empty())
        plan.notes.push_back(rates.fp8_matmul.empty() ? kFp8NotTimed : kFp8Timed);
    if (!plan.chosen && target_gb)
        plan.notes.push_back("no choice fits the target on every rank");
    return plan;
}

double anchoredDeltaPct(const Plan& p, const PlanCandidate& c, double control_ms)
{
    return 100.0 * (c.model_step_ms - p.candidates.front().model_step_ms) / control_ms;
}

std::vector<size_t> confirmationOrder(const Plan& p, int n)
{
    const double chosen_ms
        = p.chosen ? p.candidates[*p.chosen].step_ms : std::numeric_limits<double>::infinity();
    std::vector<size_t> cheaper, fits;
    for (size_t i = 0; i < p.candidates.size(); ++i) {
        const PlanCandidate& c = p.candidates[i];
        if (c.control || (p.chosen && i == *p.chosen))
            continue;
        if (c.verdict == PlanVerdict::WithinError && c.step_ms < chosen_ms)
            cheaper.push_back(i);
        else if (c.verdict == PlanVerdict::Fits)
            fits.push_back(i);
    }
    const auto byStep
        = [&p](size_t a, size_t b) { return p.candidates[a].step_ms < p.candidates[b].step_ms; };
    std::stable_sort(cheaper.begin(), cheaper.end(), byStep);
    std::stable_sort(fits.begin(), fits.end(), byStep);
    std::vector<size_t> out;
    if (p.chosen && !p.candidates[*p.chosen].control)
        out.push_back(*p.chosen);
    out.insert(out.end(), cheaper.begin(), cheaper.end());
    out.insert(out.end(), fits.begin(), fits.end());
    if (out.size() > size_t(std::max(n, 0)))
        out.resize(size_t(std::max(n, 0)));
    return out;
}

nlohmann::json planToJson(const Plan& p)
{
    nlohmann::json cands = nlohmann::json::array();
    for (const auto& c : p.candidates) {
        nlohmann::json j = { { "choice", c.label }, { "verdict", planVerdictName(c.verdict) },
            { "control", c.control }, { "reason", c.reason }, { "on_front", c.on_front } };
        if (c.verdict == PlanVerdict::Invalid) {
            j["rule"] = c.rule;
        } else {
            j["peak_allocated_bytes"] = c.peak_bytes;
            j["hottest_stage"] = c.hottest_stage;
            j["rank_peaks"] = c.rank_peaks;
            j["step_ms"] = c.step_ms;
            j["model_step_ms"] = c.model_step_ms;
            j["replay_ms"] = c.replay_ms;
            j["delta_pct"] = c.delta_pct;
            if (c.dominated_by)
                j["dominated_by"] = p.candidates[*c.dominated_by].label;
        }
        cands.push_back(j);
    }
    nlohmann::json front = nlohmann::json::array();
    for (size_t i : p.front)
        front.push_back(p.candidates[i].label);
    nlohmann::json out = { { "rates", p.rates_source }, { "provisional", p.provisional },
        { "margin", p.margin }, { "candidates", cands }, { "front", front }, { "notes", p.notes } };
    out["target_gb"] = p.target_gb ? nlohmann::json(*p.target_gb) : nlohmann::json();
    out["measured_control_ms"]
        = p.measured_control_ms ? nlohmann::json(*p.measured_control_ms) : nlohmann::json();
    out["chosen"] = p.chosen ? nlohmann::json(p.candidates[*p.chosen].label) : nlohmann::json();
    return out;
}

} // namespace rs
