// SPDX-License-Identifier: Apache-2.0
// `recompute plan`: every recompute choice Megatron can express at the recipe's profile, estimated on every
// rank and timed by the step-time model (core/plan.h), before anything runs; with --confirm N the chosen
// choice and those a measurement may yet prefer (rs::confirmationOrder) are measured by the worker through
// the sweep's session (the [] control first, the repeats until the interval is narrow), the prediction is
// printed beside the measurement, and the advisor chooses among the measured.
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include <QFileInfo>

#include "advice_output.h"
#include "cli_session.h"
#include "core/advisor.h"
#include "core/calibration.h"
#include "core/comparison.h"
#include "core/plan.h"
#include "core/recipe_input.h"
#include "core/rules.h"
#include "core/step_time.h"
#include "core/units.h"
#include "job_sweep.h"
#include "shipped_calibrations.h"
#include "storage/store.h"
#include "verb_common.h"
#include "verbs.h"
#include "worker_options.h"

using namespace Qt::StringLiterals;

namespace {

void printPlan(const rs::Plan& p)
{
    std::cout << "rates: " << p.rates_source << "\n";
    if (p.target_gb)
        std::cout << "target: " << rs::formatGb(rs::gbToBytes(*p.target_gb)) << " GB per rank, "
                  << int(p.margin * 100 + 0.5) << " % kept free for the estimate's error\n";
    if (p.chosen) {
        const auto& c = p.candidates[*p.chosen];
        std::printf("cheapest that fits: %s  %.1f ms (%+.2f %% against []), peak %s GB on stage %d\n",
            c.label.c_str(), c.step_ms, c.delta_pct, rs::formatGb(c.peak_bytes).c_str(), c.hottest_stage);
    } else if (p.target_gb) {
        // Within the margin only: the estimate cannot say they do not fit, a run can (--confirm).
        const std::vector<size_t> within = rs::confirmationOrder(p, int(p.candidates.size()));
        if (within.empty()) {
            std::cout << "nothing fits the target on every rank\n";
        } else {
            const auto& c = p.candidates[within.front()];
            std::printf("nothing fits with the margin; %zu within the estimate's error of the target, the "
                        "cheapest predicted %s  %.1f ms (%+.2f %% against []), peak %s GB: --confirm N "
                        "measures them\n",
                within.size(), c.label.c_str(), c.step_ms, c.delta_pct, rs::formatGb(c.peak_bytes).c_str());
        }
    }
    std::cout << "\nPareto front (peak memory against predicted step time):\n";
    std::printf("  %-32s %12s %11s %10s\n", "choice", "peak GB", "step ms", "vs []");
    for (size_t i : p.front) {
        const auto& c = p.candidates[i];
        std::printf("  %-32s %12s %11.1f %+9.2f%%%s\n", c.label.c_str(), rs::formatGb(c.peak_bytes).c_str(),
            c.step_ms, c.delta_pct, p.chosen && i == *p.chosen ? "  <- chosen" : "");
    }
    std::cout << "\nevery choice:\n";
    for (const auto& c : p.candidates) {
        if (c.verdict == rs::PlanVerdict::Invalid) {
            std::printf(
                "  %-32s %-11s %s\n", c.label.c_str(), rs::planVerdictName(c.verdict), c.reason.c_str());
            continue;
        }
        std::printf("  %-32s %-11s %10s GB %9.1f ms %+8.2f%%  %s\n", c.label.c_str(),
            rs::planVerdictName(c.verdict), rs::formatGb(c.peak_bytes).c_str(), c.step_ms, c.delta_pct,
            c.reason.c_str());
    }
    for (const auto& n : p.notes)
        std::cout << "note: " << n << "\n";
}

// Each measured choice beside its prediction: the peak (estimated, measured), the model's step and the
// measured one (median of the stored run), and the change against [] both ways. Once the [] control is
// measured, the predicted change is the choice's predicted difference from the model's own [] over the
// measured [] step (Plan::measured_control_ms): the model predicts what a choice replays, not the host time
// and small kernels of the whole step.
void printAgainstMeasurement(const rs::storage::Store& store, const rs::Plan& plan, qint64 controlId,
    const std::vector<std::pair<std::string, qint64>>& measuredRuns)
{
    const auto measured = [&store](qint64 id) -> std::optional<double> {
        const auto run = store.run(id);
        return run ? run->steadyStepMs : std::nullopt;
    };
    const auto peakGb = [&store](qint64 id) -> std::string {
        const auto run = store.run(id);
        return run && run->peakAllocated ? rs::formatGb(*run->peakAllocated) : std::string("-");
    };
    const auto text = [](std::optional<double> v, const char* format) {
        return v ? QString::asprintf(format, *v).toStdString() : std::string("-");
    };
    const rs::PlanCandidate& control = plan.candidates.front();
    const std::optional<double> c0 = measured(controlId);
    const double base = c0 && *c0 > 0 ? *c0 : control.model_step_ms;
    std::cout << "\nprediction against measurement (peak allocated; steady step, median of the stored run"
              << (c0 ? "; predicted change: the model's difference over the measured [] step" : "") << "):\n";
    std::printf("  %-32s %10s %10s %12s %12s %12s %12s %10s\n", "choice", "est. GB", "meas. GB", "model ms",
        "measured ms", "pred. vs []", "meas. vs []", "miss (pts)");
    std::printf("  %-32s %10s %10s %12.1f %12s\n", "[]", rs::formatGb(control.peak_bytes).c_str(),
        peakGb(controlId).c_str(), control.model_step_ms, text(c0, "%.1f").c_str());
    for (const auto& [label, runId] : measuredRuns) {
        const rs::PlanCandidate* pc = nullptr;
        for (const auto& c : plan.candidates)
            if (c.label == label)
                pc = &c;
        const auto m = measured(runId);
        const std::optional<double> dm = m && c0 ? std::optional<double>(100 * (*m / *c0 - 1)) : std::nullopt;
        const std::optional<double> dp
            = pc && base > 0 ? std::optional<double>(rs::anchoredDeltaPct(plan, *pc, base)) : std::nullopt;
        std::printf("  %-32s %10s %10s %12.1f %12s %12s %12s %10s\n", label.c_str(),
            pc ? rs::formatGb(pc->peak_bytes).c_str() : "-", peakGb(runId).c_str(),
            pc ? pc->model_step_ms : 0.0, text(m, "%.1f").c_str(), text(dp, "%+.2f%%").c_str(),
            text(dm, "%+.2f%%").c_str(),
            dm && dp ? QString::asprintf("%+.2f", *dp - *dm).toStdString().c_str() : "-");
    }
}

// --confirm N --job: the user's own training command (a Megatron-LM line, or Bridge overrides with
// --job-launcher), the [] control first, then the chosen choices, as `recompute sweep --job` runs them.
int confirmWithJob(const rs::cli::ParsedArgs& args, const rs::RecipeInput& input, const rs::Plan& plan,
    const std::vector<size_t>& top, std::optional<double> target)
{
    rs::cli::JobSweepSettings js;
    rs::cli::WorkerOptions where;
    std::string problem;
    if (!rs::cli::readWorkerOptions(args, &where, &problem)
        || !rs::cli::readJobOptions(args, where, &js, &problem))
        return rs::cli::usageError("plan", problem);
    if (const auto m = rs::cli::intOption(args, "repeats-max", 1, &problem))
        js.repeatsMax = *m;
    if (!problem.empty())
        return rs::cli::usageError("plan", problem);
    js.target = target;
    js.skipByEstimate = false; // the plan kept only choices whose every rank's estimate fits
    // `top` holds Chosen and Fits choices other than []: the session runs the [] control first anyway.
    std::vector<rs::RecomputeChoice> choices;
    for (size_t i : top)
        choices.push_back(plan.candidates[i].choice);
    const rs::cli::JobSweepResult r = rs::cli::runJobSweep("plan", input.recipe, input.format, choices, js);
    if (!r.controlRunId)
        return r.exitCode;
    rs::storage::Store store;
    QString error;
    if (!store.open(js.db, &error)) {
        std::cerr << "recompute plan: " << error.toStdString() << "\n";
        return 2;
    }
    printAgainstMeasurement(store, plan, *r.controlRunId, r.measured);
    return r.exitCode;
}

// --confirm N: the chosen choice, the within-error ones predicted cheaper and the next that fit
// (rs::confirmationOrder), at most N, each against the [] control; with a target, the advisor then
// chooses among the measurements.
int confirm(const rs::cli::ParsedArgs& args, const rs::RecipeInput& input, const rs::Recipe& base,
    const rs::Plan& plan, int n, std::optional<double> target)
{
    const std::vector<size_t> top = rs::confirmationOrder(plan, n);
    if (top.empty()) {
        std::cerr << (plan.chosen && plan.candidates[*plan.chosen].control
                ? "recompute plan: --confirm: only [] fits (no recompute needed), nothing to compare it "
                  "with\n"
                : "recompute plan: --confirm: no choice fits, nothing to measure\n");
        return 1;
    }
    if (args.has("job"))
        return confirmWithJob(args, input, plan, top, target);
    rs::cli::RunSessionOptions options;
    std::optional<int> warmupIters, steadyIters;
    std::string problem;
    if (!rs::cli::readRunLength(args, &warmupIters, &steadyIters, &problem)
        || !rs::cli::readWorkerOptions(args, &options, &problem))
        return rs::cli::usageError("plan", problem);
    if (const auto m = rs::cli::intOption(args, "repeats-max", 1, &problem))
        options.repeatsMax = *m;
    if (!problem.empty())
        return rs::cli::usageError("plan", problem);
    options.verb = u"plan"_s;
    options.format = input.format;
    options.controlFirst = true;
    options.reuseCandidates = true;
    options.provenance = u"recompute plan --confirm "_s + QString::fromStdString(input.origin);
    QVector<rs::Recipe> recipes;
    for (size_t i : top) {
        rs::Recipe r = rs::candidateRecipe(base, plan.candidates[i].choice);
        rs::cli::applyRunLength(r, warmupIters, steadyIters);
        recipes << r;
    }
    if (!rs::cli::refuseRuleErrors(u"plan"_s, recipes, input.format))
        return 1;
    rs::storage::Store store;
    if (!rs::cli::openStore("plan", args, &store))
        return 2;
    const rs::cli::RunSessionResult session = rs::cli::runSession(store, recipes, options);
    if (session.refused || session.startFailed || !session.controlRunId)
        return 2;
    std::vector<std::pair<std::string, qint64>> measuredRuns;
    for (const auto& job : session.jobs) {
        if (!job.isControl && job.runId)
            measuredRuns.emplace_back(rs::choiceSpelling(rs::recipeChoice(job.recipe)), job.runId);
    }
    printAgainstMeasurement(store, plan, *session.controlRunId, measuredRuns);
    if (!target)
        return 0;
    // The measured peaks decide what fits: the advisor chooses among the measured choices as a sweep
    // does (never on a difference inside the noise), so a within-error choice that measures under the
    // target can be the answer.
    const auto rows = store.compare(*session.controlRunId, session.candidateRuns());
    const rs::cli::StoredAdvice advice
        = rs::cli::adviseOnComparison(store, rows, *target, session.moreControlRuns());
    std::cout << "\nmeasured:\n" << rs::cli::adviceWithSignificanceText(advice).constData();
    return advice.advice.chosen ? 0 : 1;
}

// The names of the records shipped with the program, as an error lists them.
std::string shippedNames()
{
    QStringList names;
    for (const rs::ShippedCalibration& c : rs::shippedCalibrations())
        names << c.name;
    return names.join(u", "_s).toStdString();
}

// --rates: a file, else a record shipped with the program by name; a path that names no file reads as one
// (the reader says it cannot), a bare word that is neither is refused with the names there are.
rs::CalibrationRates readRatesArgument(const std::string& value)
{
    const QString v = QString::fromStdString(value);
    const bool bare = !v.contains(u'/') && !v.endsWith(QLatin1String(".json"));
    if (QFileInfo::exists(v) || !bare)
        return rs::readCalibrationFile(value);
    for (const rs::ShippedCalibration& c : rs::shippedCalibrations())
        if (c.name == v)
            return c.rates;
    throw rs::CalibrationError("file",
        "'" + value + "' is neither a file nor a record shipped with the program (" + shippedNames() + ")");
}

// The predicted step of one planned choice, term by term: the step-time model run again on that choice's
// recipe (planRecompute keeps only the totals).
rs::StepTimeEstimate stepTermsOf(const rs::Recipe& resolved, rs::InputFormat format,
    const rs::CalibrationRates& rates, const rs::PlanCandidate& c)
{
    return rs::estimateStepTime(
        rs::validate(rs::candidateRecipe(resolved, c.choice), format).resolved, rates);
}

void printStepTerms(const rs::StepTimeEstimate& e)
{
    const rs::RankStepTime& r = e.ranks.at(size_t(e.slowest));
    std::cout << "\nstep time of " << e.choice << ", term by term (" << r.scope
              << "; predicted, not measured):\n";
    for (const rs::TimeTerm& t : r.terms) {
        char line[96];
        std::snprintf(line, sizeof line, "  %-9s %-28s %9.2f ms%s", t.phase.c_str(), t.name.c_str(), t.ms,
            t.host_bound_ms > t.ms / 2 ? " (host)" : "      ");
        std::cout << line << "  " << t.source << "\n";
    }
    char total[64];
    std::snprintf(total, sizeof total, "  %-38s %9.2f ms", "step", r.step_ms);
    std::cout << total << "\n";
}

int planMain(const std::vector<std::string>& argv)
{
    rs::cli::ParsedArgs args;
    if (const auto done = rs::cli::parseArgs("plan", argv, &args))
        return *done;
    if (!args.has("rates"))
        return rs::cli::usageError("plan",
            "--rates FILE|NAME is needed: the device's calibration record (recompute-bench --calibrate --out "
            "FILE writes one), or a record shipped with the program by name ("
                + shippedNames() + ")");
    rs::CalibrationRates rates;
    try {
        rates = readRatesArgument(args.value("rates"));
    } catch (const rs::CalibrationError& e) {
        return rs::cli::inputError("plan", "--rates: " + std::string(e.what()));
    }
    std::string problem;
    std::optional<int> confirmN;
    if (args.has("confirm")) {
        confirmN = rs::cli::intOption(args, "confirm", 1, &problem);
        if (!problem.empty())
            return rs::cli::usageError("plan", problem);
    }
    if (args.has("job") && !confirmN)
        return rs::cli::usageError("plan",
            "--job goes with --confirm N: the plan itself runs nothing; --confirm N --job runs your training "
            "command for the chosen choice, those a measurement may yet prefer and the [] control");
    rs::RecipeInput input;
    if (const auto done = rs::cli::readRunRecipe("plan", args, &input))
        return *done;
    const rs::Validation v = rs::validate(input.recipe, input.format);
    if (v.hasErrors()) {
        std::cerr << "recompute plan: " << input.origin
                  << ": the recipe has rule errors (recompute validate)\n";
        return 1;
    }
    std::optional<double> target = input.recipe.memory_target_gb;
    if (const auto t = rs::cli::targetGbOption(args, &problem))
        target = t;
    if (!problem.empty())
        return rs::cli::usageError("plan", problem);
    const std::optional<double> controlMs = rs::cli::controlMsOption(args, &problem);
    if (!problem.empty())
        return rs::cli::usageError("plan", problem);
    const rs::Plan plan = rs::planRecompute(
        v.resolved, input.format, rates, target, target ? rs::kEstimateErrorFraction : 0.0, controlMs);
    if (plan.candidates.empty())
        return rs::cli::inputError("plan", input.origin + ": no recompute choice could be planned");
    if (plan.candidates.front().verdict == rs::PlanVerdict::Invalid)
        return rs::cli::inputError("plan", input.origin + ": " + plan.candidates.front().reason);
    // Term by term (--json, --terms): the chosen choice's step, else (no target, or nothing fits) the
    // control's.
    const auto explained = [&] {
        return stepTermsOf(v.resolved, input.format, rates, plan.candidates[plan.chosen.value_or(0)]);
    };
    if (args.has("json")) {
        nlohmann::json out = rs::planToJson(plan);
        out["input"] = input.origin;
        out["step_terms"] = rs::stepTimeToJson(explained());
        std::cout << out.dump(2) << "\n";
    } else {
        for (const std::string& n : input.setup_notes)
            std::cout << "recipe: " << n << "\n";
        printPlan(plan);
        if (args.has("terms"))
            printStepTerms(explained());
    }
    if (confirmN)
        return confirm(args, input, v.resolved, plan, *confirmN, target);
    return target && !plan.chosen ? 1 : 0;
}

} // namespace

RS_REGISTER_VERB("plan", planMain);
