// SPDX-License-Identifier: Apache-2.0
#include "run_session.h"

#include <algorithm>
#include <atomic>
#include <csignal>
#include <iostream>
#include <stdexcept>
#include <unistd.h>

#include <QEventLoop>
#include <QJsonDocument>
#include <QProcess>
#include <QTimer>

#include "core/recipe_json.h"
#include "launch/local_launcher.h"
#include "storage/ingest.h"

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

QString gb(std::optional<qint64> bytes)
{
    return bytes ? QString::number(double(*bytes) / 1e9, 'f', 3) + u" GB"_s : u"-"_s;
}

} // namespace

InterruptScope::InterruptScope()
{
    if (g_scopeDepth++ == 0) {
        g_previousSigint = std::signal(SIGINT, onInterrupt);
        g_previousSigterm = std::signal(SIGTERM, onInterrupt);
    }
}

InterruptScope::~InterruptScope()
{
    if (--g_scopeDepth == 0) {
        std::signal(SIGINT, g_previousSigint);
        std::signal(SIGTERM, g_previousSigterm);
    }
}

int InterruptScope::count()
{
    return g_interrupts.load();
}

std::optional<int> readRunRecipe(const char* verb, const char* usage, const std::vector<std::string>& args,
    RecipeInput* input, std::vector<std::string>* rest)
{
    for (const auto& a : args) {
        if (a == "--help" || a == "-h") {
            std::cout << usage;
            return 0;
        }
        if (a == "--mlm-args")
            break; // the rest are Megatron-LM's flags
    }
    try {
        *input = readRecipeInput(args, rest);
    } catch (const std::exception& e) {
        std::cerr << "recompute " << verb << ": " << e.what() << "\n" << usage;
        return 2;
    }
    return std::nullopt;
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

RunSessionResult runSession(storage::Store& store, const Recipe& recipe, const RunSessionOptions& options)
{
    const std::string prefix = "recompute " + options.verb.toStdString() + ": ";
    RunSessionResult result;
    InterruptScope interrupts;
    const int interruptsBefore = InterruptScope::count();

    const QByteArray recipeText = QByteArray::fromStdString(recipeToJson(recipe).dump(2));
    const QJsonObject recipeObject = QJsonDocument::fromJson(recipeText).object();
    storage::RunIngest ingest(&store);
    ingest.setRecipe(recipeObject);
    ingest.setProvenance(options.provenance);
    if (options.control)
        ingest.setControl(options.control);
    const bool ttyErr = ::isatty(STDERR_FILENO);
    ingest.setNotifier([&](const QString& message) {
        std::cerr << (ttyErr ? "\r\033[K" : "") << prefix << message.toStdString() << "\n" << std::flush;
    });

    launch::LocalLauncher launcher;
    launch::LaunchOptions launchOptions;
    launchOptions.workerPath = options.workerPath;
    if (!options.device.isEmpty())
        launchOptions.extraArguments << u"--device"_s << options.device;
    launchOptions.ranks = options.ranks;
    launchOptions.sshHost = options.sshHost;
    launchOptions.sshOptions = options.sshOptions;
    launchOptions.remoteWorker = options.remoteWorker;

    const int total = recipe.train_iters;
    const bool tty = ::isatty(STDERR_FILENO);
    const QString label = options.progressLabel.isEmpty() ? QString() : options.progressLabel + u" "_s;
    QString finishReason;
    QEventLoop loop;
    bool done = false;
    QObject::connect(&launcher, &launch::LocalLauncher::event, [&](const QJsonObject& e) {
        if (!result.storeFailed && !ingest.ingest(e)) {
            result.storeFailed = true;
            std::cerr << "\n"
                      << prefix << "the store refused a row: " << ingest.error().toStdString() << "\n";
        }
    });
    QObject::connect(&launcher, &launch::LocalLauncher::iteration, [&](const QJsonObject& e) {
        const int it = e.value(u"iteration"_s).toInt();
        const int rank = e.value(u"rank"_s).toInt();
        if (rank != 0)
            return;
        const int width = 30;
        const int filled = total > 0 ? std::min(width, it * width / total) : 0;
        const QString bar = QString(filled, u'#') + QString(width - filled, u'.');
        const QString text = u"%1[%2] iteration %3/%4  %5  peak allocated %6"_s.arg(label, bar)
                                 .arg(it)
                                 .arg(total)
                                 .arg(e.value(u"phase"_s).toString())
                                 .arg(gb(ingest.currentPeakAllocated()));
        if (tty)
            std::cerr << "\r" << text.toStdString() << std::flush;
        else
            std::cerr << text.toStdString() << "\n";
    });
    QObject::connect(&launcher, &launch::LocalLauncher::stderrText, [&](const QString& text) {
        if (tty)
            std::cerr << "\r\033[K";
        std::cerr << text.toStdString() << std::flush;
    });
    QObject::connect(
        &launcher, &launch::LocalLauncher::malformedLine, [&](const QByteArray& line, const QString& why) {
            std::cerr << prefix << "ignored a worker stdout line (" << why.toStdString()
                      << "): " << line.left(200).toStdString() << "\n";
        });
    QObject::connect(
        &launcher, &launch::LocalLauncher::finished, [&](bool aborted, int, const QString& reason) {
            finishReason = aborted ? reason : QString();
            done = true;
            loop.quit();
        });

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
        launcher.cancel(n - interruptsBefore > 1 ? 0 : 2000);
    });
    poll.start(50);

    QString error;
    if (!launcher.start(recipeObject, launchOptions, &error)) {
        std::cerr << prefix << error.toStdString() << "\n";
        ingest.finish(error);
        std::cerr << prefix << "stored as run " << ingest.runId() << " (aborted)\n";
        result.error = error;
        result.runId = ingest.runId();
        result.interrupted = InterruptScope::count() > interruptsBefore;
        return result;
    }
    result.started = true;
    if (!done)
        loop.exec();
    poll.stop();
    if (tty)
        std::cerr << "\n";

    if (!ingest.finish(
            finishReason.isEmpty() ? u"the worker's stream ended without a result"_s : finishReason))
        std::cerr << prefix << ingest.error().toStdString() << "\n";
    result.runId = ingest.runId();
    result.iterationsStored = ingest.iterationCount();
    result.interrupted = InterruptScope::count() > interruptsBefore;
    result.spoolPath = ingest.spoolPath();
    if (!result.spoolPath.isEmpty()) {
        result.storeFailed = true;
        std::cerr << prefix << "the run is not in the store (" << ingest.spoolReason().toStdString()
                  << "); every event the worker sent is kept in " << result.spoolPath.toStdString()
                  << "; `recompute import " << result.spoolPath.toStdString() << "` stores it\n";
    }
    return result;
}

} // namespace rs::cli

namespace rs::cli {

bool isWorkerFlag(const std::string& flag)
{
    return flag == "--device" || flag == "--worker" || flag == "--ranks" || flag == "--host"
        || flag == "--ssh-options" || flag == "--remote-worker";
}

void takeWorkerFlag(const std::string& flag, const QString& value, RunSessionOptions* options)
{
    if (flag == "--device") {
        options->device = value;
    } else if (flag == "--worker") {
        options->workerPath = value;
    } else if (flag == "--host") {
        options->sshHost = value;
    } else if (flag == "--ssh-options") {
        options->sshOptions = QProcess::splitCommand(value);
    } else if (flag == "--remote-worker") {
        options->remoteWorker = value;
    } else if (flag == "--ranks") {
        bool ok = false;
        const int n = value.toInt(&ok);
        if (!ok || n < 1)
            throw std::invalid_argument("--ranks: '" + value.toStdString() + "' is not a positive integer");
        options->ranks = n;
    } else {
        throw std::invalid_argument("not a worker flag: " + flag);
    }
}

} // namespace rs::cli
