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

QString oneLine(const rs::storage::Store& store, qint64 runId)
{
    const auto run = store.run(runId);
    if (!run)
        return u"run %1 was not stored"_s.arg(runId);
    QString s = u"run %1 (%2): %3"_s.arg(run->id).arg(run->moduleSetLabel(), run->outcome);
    if (!run->failureStage.isEmpty())
        s += u" in "_s + run->failureStage;
    s += u", peak allocated %1"_s.arg(QString::fromStdString(rs::formatGbUnit(run->peakAllocated)));
    if (run->steadyStepMs)
        s += u", %1 ms/step"_s.arg(*run->steadyStepMs, 0, 'f', 2);
    return s;
}

// A candidate the estimate says cannot fit the memory target, not run.
struct EstimateSkip {
    QString label;
    QString reason;
};

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

// The sweep's report of what its estimate kept from running.
QByteArray estimateSkipTable(const QVector<EstimateSkip>& skips)
{
    if (skips.isEmpty())
        return {};
    QString s = u"Skipped by the estimate (not run; --no-skip-by-estimate runs them):\n"_s;
    int width = 10;
    for (const EstimateSkip& k : skips)
        width = std::max(width, int(k.label.size()));
    for (const EstimateSkip& k : skips)
        s += u"  %1  skipped by estimate  %2\n"_s.arg(k.label, -width).arg(k.reason);
    return s.toUtf8();
}

struct JobSweepSettings {
    QString db;
    std::optional<double> target;
    int iters = 10; // --job-iters
    int repeats = 1, repeatsMax = 0;
    double intervalTargetPct = 2.0;
    QString logDir;
    std::vector<std::string> bridgeLauncher;
    QString sshHost;
    QStringList sshOptions;
    std::optional<rs::launch::SlurmSettings> slurm; // --slurm-*: each run a Slurm batch job
    bool skipByEstimate = true; // --no-skip-by-estimate: false
    bool reuseControl = true, reuseCandidates = true; // --rerun-control, --rerun: false
    std::optional<rs::session::OneRankOfLayout> oneRank; // --one-rank [--rank-of-layout N]
};

// `recompute sweep --job`: the user's own command, once per choice (the [] control first), each run's
// output streamed into the log importer, stored as an imported run linked to the control, then compared
// as worker runs are (session::JobSession, the studio's loop too). This prints what the session says.
int jobSweep(const rs::Recipe& base, rs::InputFormat format, const std::vector<rs::RecomputeChoice>& choices,
    const JobSweepSettings& set)
{
    rs::session::JobSessionOptions o;
    o.iters = set.iters;
    o.bridgeLauncher = set.bridgeLauncher;
    o.job.sshHost = set.sshHost;
    o.job.sshOptions = set.sshOptions;
    o.job.slurm = set.slurm;
    o.logDir = set.logDir;
    o.repeats = set.repeats;
    o.repeatsMax = set.repeatsMax;
    o.intervalTargetPct = set.intervalTargetPct;
    o.reuseControl = set.reuseControl;
    o.reuseCandidates = set.reuseCandidates;
    o.targetGb = set.target;
    o.skipByEstimate = set.skipByEstimate;
    o.oneRank = set.oneRank;

    rs::storage::Store store;
    rs::session::JobSession session(&store);
    std::string prefix = "recompute sweep: "; // while planning; "recompute sweep --job: " once running
    QObject::connect(&session, &rs::session::JobSession::message,
        [&prefix](const QString& text) { std::cerr << prefix << text.toStdString() << "\n"; });
    if (!session.plan(base, format, choices, o)) {
        if (session.refusedByRules()) {
            std::cerr << "recompute sweep: " << session.refusal().toStdString() << "\n";
            return 1;
        }
        std::cerr << "recompute sweep --job: " << session.refusal().toStdString() << "\n";
        return 2;
    }
    QString error;
    if (!store.open(set.db.isEmpty() ? rs::storage::Store::defaultPath() : set.db, &error)) {
        std::cerr << "recompute sweep: " << error.toStdString() << "\n";
        return 2;
    }
    prefix = "recompute sweep --job: ";
    QObject::connect(
        &session, &rs::session::JobSession::note, [&prefix](const QString& label, const QString& n) {
            std::cerr << prefix << "[" << label.toStdString() << "] " << n.toStdString() << "\n";
        });
    QObject::connect(&session, &rs::session::JobSession::iteration,
        [&set](const QString& label, const rs::storage::IterationRow& row) {
            std::cerr << "  [" << label.toStdString() << "] iteration " << row.iteration << "/" << set.iters
                      << (row.stepMs ? "  " + rs::formatFixed(*row.stepMs, 1) + " ms" : std::string())
                      << "\n";
        });
    QObject::connect(&session, &rs::session::JobSession::runStarted,
        [&prefix](const QString& label, const QStringList& command, const QString&) {
            std::cerr << prefix << "[" << label.toStdString() << "]";
            for (const QString& w : command)
                std::cerr << " " << w.toStdString();
            std::cerr << "\n";
        });
    QObject::connect(&session, &rs::session::JobSession::runFailed,
        [&prefix](const QString& label, const QString& reason, const QStringList& tail) {
            std::cerr << prefix << "[" << label.toStdString() << "] " << reason.toStdString()
                      << "; its last lines:\n";
            for (const QString& l : tail)
                std::cerr << "    " << l.toStdString() << "\n";
        });
    QObject::connect(&session, &rs::session::JobSession::runStored,
        [&store](const QString&, qint64 runId, bool reused, const QStringList& notes) {
            std::cout << oneLine(store, runId).toStdString() << (reused ? " (reused)" : "") << "\n"
                      << std::flush;
            for (const QString& n : notes)
                std::cerr << "  note: " << n.toStdString() << "\n";
        });
    QObject::connect(&session, &rs::session::JobSession::calibration,
        [](const QString& label, std::optional<qint64> estimate, std::optional<qint64> measured,
            const QString& why) {
            if (!estimate) {
                std::cerr << "  calibration [" << label.toStdString() << "]: no estimate ("
                          << why.toStdString() << ")\n";
                return;
            }
            std::cout << "  calibration [" << label.toStdString() << "]: estimate "
                      << rs::formatGbUnit(*estimate) << ", measured " << rs::formatGbUnit(measured);
            if (measured && *measured > 0)
                std::cout << ", error " << (*estimate >= *measured ? "+" : "")
                          << rs::formatFixed(double(*estimate - *measured) / double(*measured) * 100.0, 1)
                          << " %";
            std::cout << "\n" << std::flush;
        });
    if (!session.start()) {
        std::cerr << "recompute sweep --job: " << session.refusal().toStdString() << "\n";
        return 2;
    }
    std::cerr << "recompute sweep --job: the [] control, then " << session.plan().size() - 1
              << " recompute choice(s), " << set.iters << " iterations each; logs in "
              << session.logDir().toStdString() << "\n";
    if (set.slurm)
        std::cerr << "recompute sweep --job: each run a Slurm batch job ("
                  << (set.slurm->partition.isEmpty() ? std::string("the default partition")
                                                     : "partition " + set.slurm->partition.toStdString())
                  << ", " << set.slurm->nodes << " node(s) x " << set.slurm->tasksPerNode << " task(s)"
                  << (set.slurm->loginHost.isEmpty() ? std::string()
                                                     : ", submitted on " + set.slurm->loginHost.toStdString())
                  << "), its output read from " << set.slurm->workDir.toStdString() << "\n";

    rs::cli::InterruptScope interrupts;
    const int interruptsBefore = rs::cli::InterruptScope::count();
    bool interrupted = false;
    QEventLoop loop;
    QObject::connect(&session, &rs::session::JobSession::finished, &loop, &QEventLoop::quit);
    QTimer poll;
    QObject::connect(&poll, &QTimer::timeout, [&] {
        if (!interrupted && rs::cli::InterruptScope::count() != interruptsBefore) {
            interrupted = true;
            session.cancel();
        }
    });
    poll.start(100);
    loop.exec();
    poll.stop();
    if (session.startFailed()) {
        std::cerr << "recompute sweep --job: " << session.failure().toStdString() << "\n";
        return 2;
    }
    const std::optional<qint64> controlId = session.controlRunId();
    if (!controlId) {
        if (session.failure().isEmpty())
            std::cerr << "recompute sweep: the [] control was not stored\n";
        return 2;
    }
    const QVector<qint64> ids = session.candidateRuns();
    const QVector<qint64> moreControls = session.moreControls();
    std::cout << "\n"
              << rs::storage::formatReport(
                     rs::storage::buildReport(store, *controlId, ids), rs::storage::ReportFormat::Markdown)
                     .toStdString();
    const auto rows = store.compare(*controlId, ids);
    std::cout << "\n" << rs::cli::stepTimeTable(store, rows, moreControls).constData();
    QVector<EstimateSkip> estimateSkips;
    for (const auto& k : session.estimateSkips())
        estimateSkips.push_back({ k.label, k.reason });
    if (!estimateSkips.isEmpty())
        std::cout << "\n" << estimateSkipTable(estimateSkips).constData();
    bool fits = true;
    if (set.target) {
        const rs::cli::StoredAdvice advice
            = rs::cli::adviseOnComparison(store, rows, *set.target, moreControls);
        std::cout << "\n" << rs::cli::adviceText(advice).constData();
        if (!advice.significanceNote.isEmpty())
            std::cout << "  note: " << advice.significanceNote.toStdString() << "\n";
        fits = advice.advice.chosen.has_value();
    }
    std::cout << "stored in " << store.path().toStdString() << " (control run " << *controlId << ")\n";
    if (session.reusedRuns() > 0)
        std::cerr << "recompute sweep --job: " << session.reusedRuns()
                  << " stored run(s) reused, not run again (--rerun runs everything again)\n";
    if (interrupted) {
        std::cerr << "recompute sweep --job: interrupted\n";
        return 130;
    }
    // A choice that was planned and is not in the store (its run failed to import) is no comparison made.
    int unmeasured = 0;
    for (const auto& p : session.plan()) {
        if (p.runs.isEmpty()) {
            ++unmeasured;
            std::cerr << "recompute sweep --job: [" << p.label.toStdString() << "] was not measured\n";
        }
    }
    return session.skippedByRules() > 0 || unmeasured > 0 || !fits ? 1 : 0;
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
    std::optional<int> jobIters;
    std::optional<rs::session::OneRankOfLayout> oneRank; // --one-rank [--rank-of-layout N]
    bool skipByEstimate = true;
    QString jobLogDir, jobLauncher;
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
        if (args.has("one-rank") || args.has("rank-of-layout")) {
            if (!job || !args.has("one-rank"))
                throw std::invalid_argument(
                    "--one-rank and --rank-of-layout go with --job (one rank of the real job's layout)");
            oneRank = rs::session::OneRankOfLayout {};
            if (const auto n = rs::cli::intOption(args, "rank-of-layout", 0, &problem))
                oneRank->rank = *n;
        }
        skipByEstimate = !args.has("no-skip-by-estimate");
        if (args.has("job-log-dir"))
            jobLogDir = QString::fromStdString(args.value("job-log-dir"));
        if (args.has("job-launcher"))
            jobLauncher = QString::fromStdString(args.value("job-launcher"));
        if (const auto n = rs::cli::intOption(args, "job-iters", 2, &problem))
            jobIters = n;
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
        for (const auto& l : rs::allowedRecomputeModules(base.profile)) {
            if (rs::recomputeLabelEffect(controlRecipe, l).has_effect)
                sets.push_back(parseModuleSet(QString::fromStdString(l)));
        }
        QStringList names;
        for (const auto& s : sets)
            names << label(s);
        std::cerr << "recompute sweep: no --modules given: one run per label with an effect on this model: "
                  << names.join(u" | "_s).toStdString() << "\n";
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
        JobSweepSettings js;
        js.db = rs::cli::storePath(args);
        js.target = target;
        js.iters = jobIters.value_or(10);
        js.repeats = options.repeats;
        js.repeatsMax = options.repeatsMax;
        js.intervalTargetPct = options.intervalTargetPct;
        js.logDir = jobLogDir;
        js.sshHost = options.sshHost;
        js.sshOptions = options.sshOptions;
        js.slurm = options.slurm;
        js.skipByEstimate = skipByEstimate;
        js.reuseControl = options.reuseControl;
        js.reuseCandidates = options.reuseCandidates;
        js.oneRank = oneRank;
        for (const QString& w : jobLauncher.split(u' ', Qt::SkipEmptyParts))
            js.bridgeLauncher.push_back(w.toStdString());
        return jobSweep(input.recipe, input.format, unique, js);
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
        std::cout << oneLine(store, job.runId).toStdString() << (job.reused ? " (reused)" : "") << "\n"
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
        std::cout << oneLine(store, *session.controlRunId).toStdString() << " (reused)\n" << std::flush;
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
    QVector<qint64> moreControls;
    for (const rs::session::SessionJob& j : session.jobs) {
        if (j.isControl && j.runId && j.runId != controlId)
            moreControls << j.runId;
    }
    const bool interrupted = session.interrupted;

    std::cout << "\n"
              << rs::storage::formatReport(
                     rs::storage::buildReport(store, controlId, ids), rs::storage::ReportFormat::Markdown)
                     .toStdString();
    const auto rows = store.compare(controlId, ids);
    std::cout << "\n" << rs::cli::stepTimeTable(store, rows, moreControls).constData();
    if (!estimateSkips.isEmpty())
        std::cout << "\n" << estimateSkipTable(estimateSkips).constData();
    bool fits = true;
    if (target) {
        // Never chosen on a difference inside the noise: ties go to the narrower boundary.
        const rs::cli::StoredAdvice advice = rs::cli::adviseOnComparison(store, rows, *target, moreControls);
        std::cout << "\n" << rs::cli::adviceText(advice).constData();
        if (!advice.significanceNote.isEmpty())
            std::cout << "  note: " << advice.significanceNote.toStdString() << "\n";
        fits = advice.advice.chosen.has_value();
    }
    std::cout << "stored in " << store.path().toStdString() << " (control run " << controlId << ")\n";
    if (interrupted) {
        std::cerr << "recompute sweep: interrupted; " << ids.size() << " of "
                  << runnable.size() * options.repeats << " recompute choice(s) were run\n";
        return 130;
    }
    return skipped > 0 || !fits ? 1 : 0;
}

} // namespace

RS_REGISTER_VERB("sweep", sweepMain);
