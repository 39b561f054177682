// SPDX-License-Identifier: Apache-2.0
#include "job_sweep.h"

#include <iostream>

#include <QEventLoop>
#include <QTimer>

#include "advice_output.h"
#include "cli_session.h"
#include "core/comparison.h"
#include "core/units.h"
#include "session/job_run.h"
#include "storage/report.h"
#include "storage/store.h"
#include "verb_common.h"
#include "worker_options.h"

using namespace Qt::StringLiterals;

namespace rs::cli {

namespace {

JobSweepResult done(JobSweepResult r, int exitCode)
{
    r.exitCode = exitCode;
    return r;
}

} // namespace

bool readJobOptions(
    const ParsedArgs& args, const WorkerOptions& where, JobSweepSettings* out, std::string* problem)
{
    out->db = storePath(args);
    out->sshHost = where.sshHost;
    out->sshOptions = where.sshOptions;
    out->slurm = where.slurm;
    if (args.has("one-rank") || args.has("rank-of-layout")) {
        if (!args.has("job") || !args.has("one-rank")) {
            *problem = "--one-rank and --rank-of-layout go with --job (one rank of the real job's layout)";
            return false;
        }
        out->oneRank = rs::session::OneRankOfLayout {};
        if (const auto n = intOption(args, "rank-of-layout", 0, problem))
            out->oneRank->rank = *n;
    }
    if (args.has("job-log-dir"))
        out->logDir = QString::fromStdString(args.value("job-log-dir"));
    if (args.has("job-launcher")) {
        for (const QString& w :
            QString::fromStdString(args.value("job-launcher")).split(u' ', Qt::SkipEmptyParts))
            out->bridgeLauncher.push_back(w.toStdString());
    }
    if (const auto n = intOption(args, "job-iters", 2, problem))
        out->iters = *n;
    return problem->empty();
}

QString storedRunLine(const rs::storage::Store& store, qint64 runId)
{
    const auto run = store.run(runId);
    if (!run)
        return u"run %1 was not stored"_s.arg(runId);
    QString s = u"run %1 (%2): %3"_s.arg(run->id).arg(
        rs::storage::terminalText(run->moduleSetLabel()), run->outcome);
    if (!run->failureStage.isEmpty())
        s += u" in "_s + run->failureStage;
    s += u", peak allocated %1"_s.arg(QString::fromStdString(rs::formatGbUnit(run->peakAllocated)));
    if (run->steadyStepMs)
        s += u", %1 ms/step"_s.arg(*run->steadyStepMs, 0, 'f', 2);
    return s;
}

QByteArray estimateSkipTable(const QVector<rs::session::EstimateSkip>& skips)
{
    if (skips.isEmpty())
        return {};
    QString s = u"Skipped by the estimate (not run; --no-skip-by-estimate runs them):\n"_s;
    int width = 10;
    for (const auto& k : skips)
        width = std::max(width, int(k.label.size()));
    for (const auto& k : skips)
        s += u"  %1  skipped by estimate  %2\n"_s.arg(k.label, -width).arg(k.reason);
    return s.toUtf8();
}

JobSweepResult runJobSweep(const char* verb, const rs::Recipe& base, rs::InputFormat format,
    const std::vector<rs::RecomputeChoice>& choices, const JobSweepSettings& set)
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
    JobSweepResult result;

    rs::storage::Store store;
    rs::session::JobSession session(&store);
    const std::string plain = std::string("recompute ") + verb + ": ",
                      running = std::string("recompute ") + verb + " --job: ";
    std::string prefix = plain; // while planning; "recompute VERB --job: " once running
    QObject::connect(&session, &rs::session::JobSession::message,
        [&prefix](const QString& text) { std::cerr << prefix << text.toStdString() << "\n"; });
    if (!session.plan(base, format, choices, o)) {
        if (session.refusedByRules()) {
            std::cerr << plain << session.refusal().toStdString() << "\n";
            return done(result, 1);
        }
        std::cerr << running << session.refusal().toStdString() << "\n";
        return done(result, 2);
    }
    QString error;
    if (!store.open(set.db.isEmpty() ? rs::storage::Store::defaultPath() : set.db, &error)) {
        std::cerr << plain << error.toStdString() << "\n";
        return done(result, 2);
    }
    prefix = running;
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
            // As the log's header has it: one line, a word with a line break or an escape in $'...' form.
            std::vector<std::string> words;
            for (const QString& w : rs::session::commandForDisplay(command))
                words.push_back(w.toStdString());
            const QByteArray line = rs::session::jobLogCommandLine(words);
            std::cerr << prefix << "[" << label.toStdString() << "] "
                      << line.mid(int(qstrlen("# command: "))).constData();
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
            std::cout << storedRunLine(store, runId).toStdString() << (reused ? " (reused)" : "") << "\n"
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
        std::cerr << running << session.refusal().toStdString() << "\n";
        return done(result, 2);
    }
    std::cerr << running << "the [] control, then " << session.plan().size() - 1 << " recompute choice(s), "
              << set.iters << " iterations each; logs in " << session.logDir().toStdString() << "\n";
    if (set.slurm)
        std::cerr << running << "each run a Slurm batch job ("
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
        std::cerr << running << session.failure().toStdString() << "\n";
        return done(result, 2);
    }
    const std::optional<qint64> controlId = session.controlRunId();
    if (!controlId) {
        if (session.failure().isEmpty())
            std::cerr << plain << "the [] control was not stored\n";
        return done(result, 2);
    }
    const QVector<qint64> ids = session.candidateRuns();
    result.controlRunId = controlId;
    for (const auto& p : session.plan()) {
        if (p.choice && !p.runs.isEmpty())
            result.measured.emplace_back(rs::choiceSpelling(*p.choice), p.runs.front());
    }
    const QVector<qint64> moreControls = session.moreControls();
    std::cout << "\n"
              << rs::storage::formatReport(
                     rs::storage::buildReport(store, *controlId, ids), rs::storage::ReportFormat::Markdown)
                     .toStdString();
    const auto rows = store.compare(*controlId, ids);
    std::cout << "\n" << rs::cli::stepTimeTable(store, rows, moreControls).constData();
    if (!session.estimateSkips().isEmpty())
        std::cout << "\n" << estimateSkipTable(session.estimateSkips()).constData();
    bool fits = true;
    if (set.target) {
        const rs::cli::StoredAdvice advice
            = rs::cli::adviseOnComparison(store, rows, *set.target, moreControls);
        std::cout << "\n" << rs::cli::adviceWithSignificanceText(advice).constData();
        fits = advice.advice.chosen.has_value();
    }
    std::cout << "stored in " << store.path().toStdString() << " (control run " << *controlId << ")\n";
    if (session.reusedRuns() > 0)
        std::cerr << running << session.reusedRuns()
                  << " stored run(s) reused, not run again (--rerun runs everything again)\n";
    if (interrupted) {
        std::cerr << running << "interrupted\n";
        return done(result, 130);
    }
    // A choice that was planned and is not in the store (its run failed to import) is no comparison made.
    int unmeasured = 0;
    for (const auto& p : session.plan()) {
        if (p.runs.isEmpty()) {
            ++unmeasured;
            std::cerr << running << "[" << p.label.toStdString() << "] was not measured\n";
        }
    }
    return done(result, session.skippedByRules() > 0 || unmeasured > 0 || !fits ? 1 : 0);
}

} // namespace rs::cli
