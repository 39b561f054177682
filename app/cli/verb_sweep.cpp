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
#include "core/advisor.h"
#include "core/comparison.h"
#include "core/estimator.h"
#include "core/recipe_input.h"
#include "core/rules.h"
#include "core/step_stats.h"
#include "core/units.h"
#include "launch/job_run.h"
#include "launch/run_session.h"
#include "run_session.h"
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

// The candidates of `choices` the estimate says cannot fit `targetGb` per rank: estimated over it by more
// than the estimator's stated error (the advisor's rule, kEstimateErrorFraction; within the error only a
// measurement can say), through core's rankCandidatesByEstimate on the control. One entry per choice,
// nullopt where it may fit, or when there is no target or no estimate.
std::vector<std::optional<QString>> skipsByEstimate(const rs::Recipe& base, rs::InputFormat format,
    const std::vector<rs::RecomputeChoice>& choices, std::optional<double> targetGb, rs::Layout layout)
{
    std::vector<std::optional<QString>> out(choices.size());
    if (!targetGb || choices.empty())
        return out;
    try {
        const rs::Recipe resolved = rs::validate(rs::controlRecipe(base), format).resolved;
        const int dp = *targetGb < 1.0 ? 6 : 3;
        for (const rs::RankedCandidate& c :
            rs::rankCandidatesByEstimate(resolved, choices, targetGb, layout, -rs::kEstimateErrorFraction)) {
            if (c.fits || c.index >= out.size())
                continue;
            out[c.index]
                = QString::fromStdString("estimated " + rs::formatGb(c.peak_bytes, dp) + " GB (stage "
                    + std::to_string(c.hottest_stage) + ", the hottest rank, " + rs::layoutName(layout)
                    + " layout) > target " + rs::formatFixed(*targetGb, dp) + " GB, over it by more than the "
                    + "estimator's " + rs::formatFixed(rs::kEstimateErrorFraction * 100.0, 0) + " % error");
        }
    } catch (const std::exception& e) {
        std::cerr << "recompute sweep: no estimate (" << e.what() << "): no candidate is skipped by it\n";
        return std::vector<std::optional<QString>>(choices.size());
    }
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
};

// The half-width (% of the median) of the pooled steady iterations of `runs`; nullopt without an interval.
std::optional<double> pooledHalfWidth(const rs::storage::Store& store, const QVector<qint64>& runs)
{
    std::vector<double> pooled;
    for (qint64 id : runs) {
        const std::vector<double> t = rs::cli::steadyIterationTimes(store, id);
        pooled.insert(pooled.end(), t.begin(), t.end());
    }
    const auto stats = rs::stepStats(pooled);
    return stats ? stats->halfWidthPct() : std::nullopt;
}

// `recompute sweep --job`: the user's own command, once per choice (the [] control first), each run's
// output streamed into the log importer, stored as an imported run linked to the control, then compared
// as worker runs are. The estimate for the same recipe stands beside each run ("calibration").
int jobSweep(const rs::Recipe& base, rs::InputFormat format, const std::vector<rs::RecomputeChoice>& choices,
    const JobSweepSettings& set)
{
    using rs::launch::JobRun;
    struct Planned {
        std::optional<rs::RecomputeChoice> choice; // nullopt: the control
        QString label;
        std::vector<std::string> command;
        rs::Recipe recipe;
    };
    std::vector<Planned> plan;
    int skipped = 0;
    QVector<EstimateSkip> estimateSkips;
    // What Megatron-LM would allocate: the Megatron layout.
    const std::vector<std::optional<QString>> overTarget = set.skipByEstimate
        ? skipsByEstimate(base, format, choices, set.target, rs::Layout::Megatron)
        : std::vector<std::optional<QString>>(choices.size());
    try {
        for (int i = -1; i < int(choices.size()); ++i) {
            Planned p;
            if (i >= 0)
                p.choice = choices[std::size_t(i)];
            p.label = p.choice ? label(*p.choice) : u"[]"_s;
            if (i >= 0 && overTarget[std::size_t(i)]) {
                estimateSkips.push_back({ p.label, *overTarget[std::size_t(i)] });
                sayEstimateSkip(estimateSkips.back());
                continue;
            }
            p.recipe = rs::launch::jobRecipe(base, format, p.choice);
            if (!validated(p.recipe, format, p.label)) {
                if (!p.choice) {
                    std::cerr
                        << "recompute sweep: the [] control of this job does not validate: nothing was run\n";
                    return 1;
                }
                ++skipped;
                continue;
            }
            p.command = rs::launch::jobCommand(base, format, p.choice, { set.iters }, set.bridgeLauncher);
            plan.push_back(std::move(p));
        }
    } catch (const std::exception& e) {
        std::cerr << "recompute sweep --job: " << e.what() << "\n";
        return 2;
    }

    rs::storage::Store store;
    QString error;
    if (!store.open(set.db.isEmpty() ? rs::storage::Store::defaultPath() : set.db, &error)) {
        std::cerr << "recompute sweep: " << error.toStdString() << "\n";
        return 2;
    }
    const QString logDir
        = set.logDir.isEmpty() ? QFileInfo(store.path()).absolutePath() + u"/job-logs"_s : set.logDir;
    if (!QDir().mkpath(logDir)) {
        std::cerr << "recompute sweep --job: cannot make the log folder " << logDir.toStdString() << "\n";
        return 2;
    }
    std::cerr << "recompute sweep --job: the [] control, then " << plan.size() - 1 << " recompute choice(s), "
              << set.iters << " iterations each; logs in " << logDir.toStdString() << "\n";
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
    std::optional<qint64> controlId;
    QVector<qint64> ids, moreControls;
    bool interrupted = false;
    const QString stamp = QDateTime::currentDateTimeUtc().toString(u"yyyyMMdd-HHmmss"_s);
    int reusedRuns = 0;
    for (const Planned& p : plan) {
        QVector<qint64> runsOfChoice;
        rs::launch::JobOptions jo;
        jo.sshHost = set.sshHost;
        jo.sshOptions = set.sshOptions;
        jo.slurm = set.slurm;
        // A stored run of the same recipe (hash), the same command (iterations included) launched the same
        // way stands in for running it again (RunSession's lookup, as worker runs are reused).
        const QString signature
            = rs::launch::RunSession::signatureMark() + rs::launch::jobSignature(p.command, jo);
        rs::Recipe trained = p.recipe;
        trained.train_iters = set.iters;
        const QStringList hashes = rs::launch::RunSession::recipeHashes(trained);
        const int cap = std::max(set.repeats, set.repeatsMax);
        QVector<qint64> reusable;
        if (p.choice ? set.reuseCandidates : set.reuseControl) {
            reusable = rs::launch::RunSession::findStoredRuns(
                store, { rs::storage::source::Import, hashes, signature, std::nullopt, false });
            if (reusable.size() > cap)
                reusable.resize(cap); // the newest
            std::reverse(reusable.begin(), reusable.end()); // oldest first, as they were measured
        }
        const auto take = [&](qint64 id) {
            runsOfChoice << id;
            if (!p.choice) {
                if (!controlId)
                    controlId = id;
                else
                    moreControls << id;
            } else {
                ids << id;
            }
        };
        for (int repeat = 1; !interrupted; ++repeat) {
            if (repeat > cap)
                break;
            if (repeat > set.repeats) {
                const auto hw = pooledHalfWidth(store, runsOfChoice);
                if (hw && *hw <= set.intervalTargetPct)
                    break;
                std::cerr << "recompute sweep --job: [" << p.label.toStdString() << "]: the interval is "
                          << (hw ? "+-" + rs::formatFixed(*hw, 2) + " %" : std::string("not known yet"))
                          << ", wider than " << rs::formatFixed(set.intervalTargetPct, 2) << " %: run "
                          << repeat << " of at most " << cap << "\n";
            }
            if (!reusable.isEmpty()) {
                const qint64 id = reusable.takeFirst();
                std::cout << oneLine(store, id).toStdString() << " (reused)\n" << std::flush;
                std::cerr
                    << "recompute sweep --job: [" << p.label.toStdString() << "] run " << id
                    << " reused: stored with the same recipe hash, command and iterations, launched the "
                       "same way (--rerun"
                    << (p.choice ? "" : "-control or --rerun") << " runs it again)\n";
                ++reusedRuns;
                take(id);
                continue;
            }
            QString name = p.label;
            name.replace(u' ', u'-').replace(u',', u'+');
            if (name == u"[]"_s)
                name = u"control"_s;
            const QString logPath = u"%1/%2-%3-%4.log"_s.arg(logDir, stamp, name).arg(repeat);
            JobRun job;
            QEventLoop loop;
            bool aborted = false;
            QString reason;
            QStringList tail;
            QObject::connect(&job, &JobRun::line, [&](const QString& l) {
                tail << l;
                if (tail.size() > 20)
                    tail.removeFirst();
            });
            QObject::connect(&job, &JobRun::note, [&](const QString& n) {
                std::cerr << "recompute sweep --job: [" << p.label.toStdString() << "] " << n.toStdString()
                          << "\n";
            });
            QObject::connect(&job, &JobRun::iteration, [&](const rs::storage::IterationRow& row) {
                std::cerr << "  [" << p.label.toStdString() << "] iteration " << row.iteration << "/"
                          << set.iters
                          << (row.stepMs ? "  " + rs::formatFixed(*row.stepMs, 1) + " ms" : std::string())
                          << "\n";
            });
            QObject::connect(&job, &JobRun::finished, [&](bool a, int, const QString& r) {
                aborted = a;
                reason = r;
                loop.quit();
            });
            QTimer poll;
            QObject::connect(&poll, &QTimer::timeout, [&] {
                if (rs::cli::InterruptScope::count() != interruptsBefore && job.isRunning()) {
                    interrupted = true;
                    job.cancel();
                }
            });
            poll.start(100);
            QString startError;
            std::cerr << "recompute sweep --job: [" << p.label.toStdString() << "]";
            for (const std::string& w : p.command)
                std::cerr << " " << w;
            std::cerr << "\n";
            if (!job.start(p.command, logPath, jo, &startError)) {
                std::cerr << "recompute sweep --job: " << startError.toStdString() << "\n";
                return 2;
            }
            loop.exec();
            poll.stop();
            if (aborted) {
                std::cerr << "recompute sweep --job: [" << p.label.toStdString() << "] "
                          << reason.toStdString() << "; its last lines:\n";
                for (const QString& l : tail)
                    std::cerr << "    " << l.toStdString() << "\n";
            }
            rs::storage::ImportOptions io;
            io.recipeName = QString::fromStdString(base.name.empty() ? std::string("job") : base.name);
            io.autoLink = false;
            if (p.choice && controlId)
                io.control = controlId;
            const rs::storage::ImportResult imported = rs::storage::importTrainingLog(&store, logPath, io);
            if (!imported.runId) {
                std::cerr << "recompute sweep --job: [" << p.label.toStdString()
                          << "] was not stored: " << imported.error.toStdString() << "\n";
                if (!p.choice)
                    return 2;
                break;
            }
            // What the reuse lookup reads: the recipe's hash, this machine, how it was launched.
            if (auto run = store.run(imported.runId)) {
                run->recipeHash = hashes.front();
                run->ingestHost = QSysInfo::machineHostName();
                run->provenance += signature;
                if (!store.updateRun(*run))
                    std::cerr << "recompute sweep --job: run " << imported.runId
                              << ": its launch could not be stored; it will not be reused\n";
            }
            std::cout << oneLine(store, imported.runId).toStdString() << "\n";
            for (const QString& n : imported.notes)
                std::cerr << "  note: " << n.toStdString() << "\n";
            // Calibration: the estimate of the same recipe beside the measured peak.
            try {
                const rs::Recipe resolved = rs::validate(p.recipe, format).resolved;
                const rs::MemoryEstimate e = rs::estimateMemory(resolved);
                const auto run = store.run(imported.runId);
                std::cout << "  calibration [" << p.label.toStdString() << "]: estimate "
                          << rs::formatGbUnit(e.peak_bytes) << ", measured "
                          << rs::formatGbUnit(run ? run->peakAllocated : std::nullopt);
                if (run && run->peakAllocated && *run->peakAllocated > 0)
                    std::cout << ", error " << (e.peak_bytes >= *run->peakAllocated ? "+" : "")
                              << rs::formatFixed(double(e.peak_bytes - *run->peakAllocated)
                                         / double(*run->peakAllocated) * 100.0,
                                     1)
                              << " %";
                std::cout << "\n" << std::flush;
            } catch (const std::exception& ex) {
                std::cerr << "  calibration [" << p.label.toStdString() << "]: no estimate (" << ex.what()
                          << ")\n";
            }
            take(imported.runId);
            if (aborted)
                break; // a failed run is not repeated
        }
        if (interrupted)
            break;
    }
    if (!controlId) {
        std::cerr << "recompute sweep: the [] control was not stored\n";
        return 2;
    }
    std::cout << "\n"
              << rs::storage::formatReport(
                     rs::storage::buildReport(store, *controlId, ids), rs::storage::ReportFormat::Markdown)
                     .toStdString();
    const auto rows = store.compare(*controlId, ids);
    std::cout << "\n" << rs::cli::stepTimeTable(store, rows, moreControls).constData();
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
    if (reusedRuns > 0)
        std::cerr << "recompute sweep --job: " << reusedRuns
                  << " stored run(s) reused, not run again (--rerun runs everything again)\n";
    if (interrupted) {
        std::cerr << "recompute sweep --job: interrupted\n";
        return 130;
    }
    return skipped > 0 || !fits ? 1 : 0;
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
    options.onStored = [&store](const rs::launch::SessionJob& job) {
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
            [](const rs::launch::SessionJob& j) { return j.aborted && !j.reason.isEmpty() && j.runId; });
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
    for (const rs::launch::SessionJob& j : session.jobs) {
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
