// SPDX-License-Identifier: Apache-2.0
#include "cli_session.h"

#include <algorithm>
#include <atomic>
#include <csignal>
#include <iostream>
#include <unistd.h>

#include <QEventLoop>
#include <QProcess>
#include <QTimer>

#include "core/recipe_json.h"
#include "core/stream.h"
#include "core/units.h"

using namespace Qt::StringLiterals;

namespace rs::cli {

namespace {

std::atomic<int> g_interrupts { 0 };
extern "C" void onInterrupt(int)
{
    g_interrupts.fetch_add(1);
}

int g_scopeDepth = 0;
void (*g_previousSigint)(int) = SIG_DFL;
void (*g_previousSigterm)(int) = SIG_DFL;
void (*g_previousSighup)(int) = SIG_DFL;

} // namespace

InterruptScope::InterruptScope()
{
    if (g_scopeDepth++ == 0) {
        g_previousSigint = std::signal(SIGINT, onInterrupt);
        g_previousSigterm = std::signal(SIGTERM, onInterrupt);
        // A closed terminal (or ssh session) ends the CLI as Ctrl-C does: its worker or Slurm job is
        // stopped and what was measured kept, never left running with nobody to read it.
        g_previousSighup = std::signal(SIGHUP, onInterrupt);
    }
}

InterruptScope::~InterruptScope()
{
    if (--g_scopeDepth == 0) {
        std::signal(SIGINT, g_previousSigint);
        std::signal(SIGTERM, g_previousSigterm);
        std::signal(SIGHUP, g_previousSighup);
    }
}

int InterruptScope::count()
{
    return g_interrupts.load();
}

void applyRunLength(Recipe& recipe, std::optional<int> warmupIters, std::optional<int> steadyIters)
{
    if (!warmupIters && !steadyIters)
        return;
    const int steady = steadyIters.value_or(std::max(1, recipe.train_iters - recipe.warmup_iters));
    if (warmupIters)
        recipe.warmup_iters = *warmupIters;
    recipe.train_iters = recipe.warmup_iters + steady;
}

QVector<qint64> RunSessionResult::candidateRuns() const
{
    QVector<qint64> out;
    for (const auto& j : jobs) {
        if (!j.isControl && j.runId)
            out << j.runId;
    }
    return out;
}

QVector<qint64> RunSessionResult::moreControlRuns() const
{
    QVector<qint64> out;
    for (const auto& j : jobs)
        if (j.isControl && j.runId && j.runId != controlRunId)
            out << j.runId;
    return out;
}

bool refuseRuleErrors(const QString& verb, const QVector<Recipe>& recipes, InputFormat format)
{
    const QStringList errors = session::RunSession::ruleErrors(recipes, format);
    if (errors.isEmpty())
        return true;
    std::cerr << "recompute " << verb.toStdString()
              << ": refused: the recipe has rule errors, nothing was started or stored:\n";
    for (const QString& e : errors)
        std::cerr << "  " << e.toStdString() << "\n";
    return false;
}

RunSessionResult runSession(
    storage::Store& store, const QVector<Recipe>& candidates, const RunSessionOptions& options)
{
    const std::string prefix = "recompute " + options.verb.toStdString() + ": ";
    RunSessionResult result;
    InterruptScope interrupts;
    const int interruptsBefore = InterruptScope::count();

    session::SessionOptions so;
    so.launch.workerPath = options.workerPath;
    if (!options.device.isEmpty())
        so.launch.extraArguments << u"--device"_s << options.device;
    so.launch.ranks = options.ranks;
    so.launch.sshHost = options.sshHost;
    so.launch.sshOptions = options.sshOptions;
    so.launch.remoteWorker = options.remoteWorker;
    so.launch.slurm = options.slurm;
    so.controlFirst = options.controlFirst;
    so.reuseControl = options.reuseControl;
    so.control = options.control;
    so.repeats = options.repeats;
    so.repeatsMax = options.repeatsMax;
    so.intervalTargetPct = options.intervalTargetPct;
    so.reuseCandidates = options.reuseCandidates;
    so.format = options.format;
    so.provenance = options.provenance;

    session::RunSession session(&store);
    const bool tty = ::isatty(STDERR_FILENO);
    QString label;
    int total = 0;
    QEventLoop loop;
    QObject::connect(&session, &session::RunSession::message, [&](const QString& text) {
        std::cerr << (tty ? "\r\033[K" : "") << prefix << text.toStdString() << "\n";
    });
    QObject::connect(&session, &session::RunSession::jobStarted, [&](int index) {
        const session::SessionJob& job = session.jobs()[index];
        label = u"["_s + job.label + u"]"_s;
        if (job.repeats > 1)
            label += u" %1/%2"_s.arg(job.repeat).arg(job.repeats);
        total = job.recipe.train_iters;
    });
    QObject::connect(&session, &session::RunSession::iteration, [&](const rs::stream::Iteration& e) {
        const int it = e.iteration;
        if (e.rank != 0)
            return;
        const int width = 30;
        const int filled = total > 0 ? std::min(width, it * width / total) : 0;
        const QString bar = QString(filled, u'#') + QString(width - filled, u'.');
        const QString text = u"%1 [%2] iteration %3/%4  %5  peak allocated %6"_s.arg(label, bar)
                                 .arg(it)
                                 .arg(total)
                                 .arg(QString::fromStdString(e.phase))
                                 .arg(QString::fromStdString(formatGbUnit(session.currentPeakAllocated())));
        if (tty)
            std::cerr << "\r" << text.toStdString() << std::flush;
        else
            std::cerr << text.toStdString() << "\n";
    });
    QObject::connect(&session, &session::RunSession::stderrText, [&](const QString& text) {
        if (tty)
            std::cerr << "\r\033[K";
        std::cerr << text.toStdString() << std::flush;
    });
    QObject::connect(
        &session, &session::RunSession::malformedLine, [&](const QByteArray& line, const QString& why) {
            std::cerr << prefix << "ignored a worker stdout line (" << why.toStdString()
                      << "): " << line.left(200).toStdString() << "\n";
        });
    QObject::connect(&session, &session::RunSession::jobFinished, [&](int index) {
        if (tty)
            std::cerr << "\n";
        const session::SessionJob& job = session.jobs()[index];
        if (session.startFailed() && job.runId)
            std::cerr << prefix << "stored as run " << job.runId << " (aborted)\n";
        if (options.onStored && job.runId)
            options.onStored(job);
    });
    QObject::connect(&session, &session::RunSession::finished, &loop, &QEventLoop::quit);

    QTimer poll;
    int seenInterrupts = interruptsBefore;
    QObject::connect(&poll, &QTimer::timeout, [&] {
        const int n = InterruptScope::count();
        if (n == seenInterrupts)
            return;
        seenInterrupts = n;
        std::cerr << (tty ? "\n" : "") << prefix
                  << "interrupted; stopping the worker (what was measured is kept)\n";
        // A second Ctrl-C does not wait for the worker's grace period.
        session.cancel(n - interruptsBefore > 1 ? 0 : 2000);
    });

    if (!session.start(candidates, so)) {
        std::cerr << prefix << session.refusal().toStdString() << "\n";
        result.refused = true;
        return result;
    }
    poll.start(50);
    if (session.isRunning())
        loop.exec();
    poll.stop();

    result.startFailed = session.startFailed();
    result.storeFailed = session.storeFailed();
    result.controlRefused = !session.controlRefusal().isEmpty();
    result.controlRunId = session.controlRunId();
    result.controlReused = session.controlReused();
    result.jobs = session.jobs();
    result.interrupted = InterruptScope::count() > interruptsBefore;
    for (const session::SessionJob& job : result.jobs) {
        if (!job.spoolPath.isEmpty() && result.spoolPath.isEmpty()) {
            result.spoolPath = job.spoolPath; // said by the session's message
            result.storeFailed = true;
        }
    }
    return result;
}

} // namespace rs::cli
