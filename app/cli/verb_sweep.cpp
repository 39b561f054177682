// SPDX-License-Identifier: Apache-2.0
// `recompute sweep`: the guide's matched runs on this host's worker: the explicit [] control first, then
// one run per recompute choice, each changing only the recompute choice and linked to the control; then
// the comparison table and, with a target, the advice.
#include <algorithm>
#include <iostream>

#include <QDateTime>
#include <QDir>
#include <QEventLoop>
#include <QFileInfo>
#include <QSysInfo>
#include <QTimer>

#include "advice_output.h"
#include "cli_session.h"
#include "core/advisor.h"
#include "core/comparison.h"
#include "core/estimator.h"
#include "core/recipe_input.h"
#include "core/rules.h"
#include "core/step_stats.h"
#include "core/units.h"
#include "job_sweep.h"
#include "session/job_run.h"
#include "session/job_session.h"
#include "session/run_session.h"
#include "storage/log_import.h"
#include "storage/report.h"
#include "storage/store.h"
#include "verb_common.h"
#include "verbs.h"

using namespace Qt::StringLiterals;

namespace {

// "moe_act" | "layernorm,moe_act" | "full:uniform:1" | "full:block:2"; throws with a message naming the set.
rs::RecomputeChoice parseModuleSet(const QString& text)
{
    try {
        return rs::parseRecomputeChoice(text.toStdString());
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(std::string("--modules: ") + e.what());
    }
}

QString label(const rs::RecomputeChoice& c)
{
    return QString::fromStdString(c.label());
}

// Prints the rule errors; true when there are none.
bool validated(const rs::Recipe& recipe, rs::InputFormat format, const QString& label)
{
    const rs::Validation v = rs::validate(recipe, format);
    if (!v.hasErrors())
        return true;
    std::cerr << "recompute sweep: [" << label.toStdString() << "] has rule errors, not run:\n";
    for (const auto& f : v.findings) {
        if (f.severity == rs::Severity::Error)
            std::cerr << "  " << f.rule_id << " error: " << f.message << "\n";
    }
    return false;
}

using EstimateSkip = rs::session::EstimateSkip;

// The session's skip rule (session::skipsByEstimate), its failure said on stderr.
std::vector<std::optional<QString>> skipsByEstimate(const rs::Recipe& base, rs::InputFormat format,
    const std::vector<rs::RecomputeChoice>& choices, std::optional<double> targetGb, rs::Layout layout)
{
    QString error;
    auto out = rs::session::skipsByEstimate(base, format, choices, targetGb, layout, &error);
    if (!error.isEmpty())
        std::cerr << "recompute sweep: no estimate (" << error.toStdString()
                  << "): no candidate is skipped by it\n";
    return out;
}

void sayEstimateSkip(const EstimateSkip& skip)
{
    std::cerr << "recompute sweep: [" << skip.label.toStdString()
              << "] skipped by its estimate, not run: " << skip.reason.toStdString()
              << " (--no-skip-by-estimate runs it)\n";
}

int sweepMain(const std::vector<std::string>& argv)
{
    rs::cli::ParsedArgs args;
    if (const auto done = rs::cli::parseArgs("sweep", argv, &args))
        return *done;
    rs::RecipeInput input;
    if (const auto done = rs::cli::readRunRecipe("sweep", args, &input))
        return *done;
    std::optional<int> steadyIters, warmupIters;
    rs::cli::RunSessionOptions options;
    std::optional<double> target = input.recipe.memory_target_gb;
    std::vector<rs::RecomputeChoice> sets;
    bool job = false; // the user's own training command, not the worker
    rs::cli::JobSweepSettings js; // --job's options
    bool skipByEstimate = true;
    options.reuseCandidates = true;
    try {
        std::string problem;
        if (!rs::cli::readRunLength(args, &warmupIters, &steadyIters, &problem)
            || !rs::cli::readWorkerOptions(args, &options, &problem))
            throw std::invalid_argument(problem);
        if (const auto it = args.groups.find("modules"); it != args.groups.end()) {
            for (const auto& group : it->second) {
                if (group.empty())
                    throw std::invalid_argument(
                        "--modules needs one or more SETs (e.g. moe_act layernorm,moe_act)");
                for (const auto& set : group)
                    sets.push_back(parseModuleSet(QString::fromStdString(set)));
            }
        }
        options.reuseControl = !args.has("rerun-control") && !args.has("rerun");
        options.reuseCandidates = !args.has("rerun");
        job = args.has("job");
        if (!rs::cli::readJobOptions(args, options, &js, &problem))
            throw std::invalid_argument(problem);
        skipByEstimate = !args.has("no-skip-by-estimate");
        if (const auto n = rs::cli::intOption(args, "repeats-max", 1, &problem))
            options.repeatsMax = *n;
        if (args.has("interval-target")) {
            const std::string v = args.value("interval-target");
            bool ok = false;
            const double pct = QString::fromStdString(v).remove(u'%').toDouble(&ok);
            if (!ok || !std::isfinite(pct) || pct <= 0 || pct >= 100)
                problem = "--interval-target: '" + v
                    + "' is not a percentage of the median (a number above 0 and below 100, e.g. 2)";
            else
                options.intervalTargetPct = pct;
        }
        if (const auto gb = rs::cli::targetGbOption(args, &problem))
            target = gb;
        if (const auto n = rs::cli::intOption(args, "repeats", 1, &problem))
            options.repeats = *n;
        if (!problem.empty())
            throw std::invalid_argument(problem);
        if (options.repeatsMax > 0 && options.repeatsMax < options.repeats)
            throw std::invalid_argument("--repeats-max " + std::to_string(options.repeatsMax)
                + " is below --repeats " + std::to_string(options.repeats));
    } catch (const std::exception& e) {
        return rs::cli::usageError("sweep", e.what());
    }

    // The recipe carries the run length, so every run of the sweep has the same one (a match condition).
    rs::Recipe base = input.recipe;
    rs::cli::applyRunLength(base, warmupIters, steadyIters);

    // The guide's control, built by the same core function as the launch page's (one recipe hash for both).
    const rs::Recipe controlRecipe = rs::controlRecipe(base);
    if (sets.empty()) {
        // The guide: one label at a time, and only labels that act on this architecture.
        // A label the rules refuse on this model (RT30: mlp with linear biases never finishes a step) is
        // left out and said, rather than refusing the whole sweep.
        QStringList refused;
        for (const auto& l : rs::allowedRecomputeModules(base.profile)) {
            if (!rs::recomputeLabelEffect(controlRecipe, l).has_effect)
                continue;
            const rs::RecomputeChoice set = parseModuleSet(QString::fromStdString(l));
            const rs::Validation v = rs::validate(rs::candidateRecipe(base, set), input.format);
            if (const rs::Finding* error = v.firstError())
                refused << QString::fromStdString(l + " (" + error->rule_id + ")");
            else
                sets.push_back(set);
        }
        QStringList names;
        for (const auto& s : sets)
            names << label(s);
        std::cerr << "recompute sweep: no --modules given: one run per label with an effect on this model: "
                  << names.join(u" | "_s).toStdString() << "\n";
        if (!refused.isEmpty())
            std::cerr << "recompute sweep: left out, refused by the rules on this model: "
                      << refused.join(u", "_s).toStdString() << " (recompute explain RULE)\n";
    }
    // The same choice twice would be two runs of one thing.
    std::vector<rs::RecomputeChoice> unique;
    for (const auto& s : sets) {
        if (std::any_of(
                unique.begin(), unique.end(), [&](const rs::RecomputeChoice& o) { return o.sameAs(s); }))
            std::cerr << "recompute sweep: [" << s.label() << "] given twice, run once\n";
        else
            unique.push_back(s);
    }

    if (job) {
        js.target = target;
        js.repeats = options.repeats;
        js.repeatsMax = options.repeatsMax;
        js.intervalTargetPct = options.intervalTargetPct;
        js.skipByEstimate = skipByEstimate;
        js.reuseControl = options.reuseControl;
        js.reuseCandidates = options.reuseCandidates;
        return rs::cli::runJobSweep("sweep", input.recipe, input.format, unique, js).exitCode;
    }

    if (!validated(controlRecipe, input.format, u"[]"_s)) {
        std::cerr << "recompute sweep: the [] control of this recipe does not validate: nothing was run\n";
        return 1;
    }
    // Each candidate is the control with only its recompute choice set (rs::candidateRecipe); those the
    // estimate says cannot fit the target are not run (what the worker allocates: the worker layout).
    QVector<rs::Recipe> runnable;
    int skipped = 0;
    QVector<EstimateSkip> estimateSkips;
    const std::vector<std::optional<QString>> overTarget = skipByEstimate
        ? skipsByEstimate(base, input.format, unique, target, rs::Layout::Worker)
        : std::vector<std::optional<QString>>(unique.size());
    for (std::size_t i = 0; i < unique.size(); ++i) {
        const auto& s = unique[i];
        if (overTarget[i]) {
            estimateSkips.push_back({ label(s), *overTarget[i] });
            sayEstimateSkip(estimateSkips.back());
            continue;
        }
        const rs::Recipe r = rs::candidateRecipe(base, s);
        if (validated(r, input.format, label(s)))
            runnable << r;
        else
            ++skipped;
    }

    rs::storage::Store store;
    if (!rs::cli::openStore("sweep", args, &store))
        return 2;

    rs::cli::InterruptScope interrupts;
    options.verb = u"sweep"_s;
    options.format = input.format;
    options.controlFirst = true;
    options.provenance = u"recompute sweep "_s + QString::fromStdString(input.origin);
    options.onStored = [&store](const rs::session::SessionJob& job) {
        std::cout << rs::cli::storedRunLine(store, job.runId).toStdString() << (job.reused ? " (reused)" : "")
                  << "\n"
                  << std::flush;
    };
    std::cerr << "recompute sweep: the [] control, then " << runnable.size() << " recompute choice(s)"
              << (options.repeats > 1 ? " " + std::to_string(options.repeats) + " times each" : std::string())
              << ", " << base.train_iters << " iterations each (" << base.warmup_iters << " warm-up)\n";
    const rs::cli::RunSessionResult session = rs::cli::runSession(
        store, runnable.isEmpty() ? QVector<rs::Recipe> { controlRecipe } : runnable, options);
    if (session.refused)
        return 1;
    if (session.controlReused && session.controlRunId)
        std::cout << rs::cli::storedRunLine(store, *session.controlRunId).toStdString() << " (reused)\n"
                  << std::flush;
    if (session.startFailed) {
        const auto failed = std::find_if(session.jobs.begin(), session.jobs.end(),
            [](const rs::session::SessionJob& j) { return j.aborted && !j.reason.isEmpty() && j.runId; });
        if (failed != session.jobs.end() && !failed->isControl)
            std::cerr << "recompute sweep: the worker did not start for [" << failed->label.toStdString()
                      << "]; the sweep stops\n";
        return 2;
    }
    if (!session.controlRunId) {
        std::cerr << "recompute sweep: the [] control was not stored\n";
        return 2;
    }
    const qint64 controlId = *session.controlRunId;
    const QVector<qint64> ids = session.candidateRuns();
    // Repeats of the [] control (a session that repeats until the interval is narrow) pool with it.
    const QVector<qint64> moreControls = session.moreControlRuns();
    const bool interrupted = session.interrupted;

    std::cout << "\n"
              << rs::storage::formatReport(
                     rs::storage::buildReport(store, controlId, ids), rs::storage::ReportFormat::Markdown)
                     .toStdString();
    const auto rows = store.compare(controlId, ids);
    std::cout << "\n" << rs::cli::stepTimeTable(store, rows, moreControls).constData();
    if (!estimateSkips.isEmpty())
        std::cout << "\n" << rs::cli::estimateSkipTable(estimateSkips).constData();
    bool fits = true;
    if (target) {
        // Never chosen on a difference inside the noise: ties go to the narrower boundary.
        const rs::cli::StoredAdvice advice = rs::cli::adviseOnComparison(store, rows, *target, moreControls);
        std::cout << "\n" << rs::cli::adviceWithSignificanceText(advice).constData();
        fits = advice.advice.chosen.has_value();
    }
    std::cout << "stored in " << store.path().toStdString() << " (control run " << controlId << ")\n";
    if (interrupted) {
        std::cerr << "recompute sweep: interrupted; " << ids.size() << " of "
                  << runnable.size() * options.repeats << " recompute choice(s) were run\n";
        return 130;
    }
    return skipped > 0 || !fits || session.controlRefused ? 1 : 0;
}

} // namespace

RS_REGISTER_VERB("sweep", sweepMain);
