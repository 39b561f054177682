// SPDX-License-Identifier: Apache-2.0
// `recompute import`: real Megatron-LM / Megatron Bridge training logs, or the guide's sample measurements.
#include <cstdio>
#include <iostream>
#include <unistd.h>

#include <QElapsedTimer>

#include "storage/ingest.h"
#include "storage/log_import.h"
#include "storage/store.h"
#include "verbs.h"

using namespace Qt::StringLiterals;

namespace {

const char* kUsage
    = "usage: recompute import [--db PATH] [--name NAME] [--overrides ARGS...] [--control RUN | --no-link]\n"
      "                        [--progress | --no-progress] LOG...\n"
      "       recompute import [--db PATH] --sample [FILE.json]\n"
      "  Reads Megatron-LM and Megatron Bridge training logs: iteration lines, per-rank memory lines,\n"
      "  throughput, losses, skipped / NaN counts, theoretical memory, OOM tracebacks (every form), printed\n"
      "  arguments and Bridge's configuration summary. Values out of range are refused and noted; a file\n"
      "  that holds two runs (logs interleaved, a restart appended) is refused.\n"
      "  The logs of one shape compare themselves: the run without recompute (the explicit [] or Megatron's\n"
      "  recompute_granularity None) becomes the control of the others, whatever order the files come in;\n"
      "  `recompute report` then shows the deltas. --control RUN links every LOG to that run instead;\n"
      "  --no-link links nothing (`recompute link` does it later).\n"
      "  --overrides gives Bridge overrides (model.recompute_modules=[moe_act] ...) for what the log does "
      "not\n"
      "  print; it takes arguments up to the next one that starts with --. Importing the same log twice\n"
      "  does not duplicate it. A progress line goes to stderr when it is a terminal (or with --progress).\n"
      "  --sample seeds the store with the guide's published measurements.\n";

std::string gb(std::optional<qint64> bytes)
{
    return bytes ? QString::number(double(*bytes) / 1e9, 'f', 3).toStdString() + " GB" : std::string("?");
}

int importMain(const std::vector<std::string>& args)
{
    QString db, name, samplePath;
    bool sample = false, noLink = false;
    int progress = -1; // -1: when stderr is a terminal
    std::optional<qint64> control;
    QStringList overrides, logs;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "--help" || a == "-h") {
            std::cout << kUsage;
            return 0;
        }
        if (a == "--db" || a == "--name") {
            if (i + 1 >= args.size()) {
                std::cerr << "recompute import: " << a << " needs a value\n" << kUsage;
                return 2;
            }
            (a == "--db" ? db : name) = QString::fromStdString(args[++i]);
        } else if (a == "--sample") {
            sample = true;
        } else if (a == "--no-link") {
            noLink = true;
        } else if (a == "--progress" || a == "--no-progress") {
            progress = a == "--progress" ? 1 : 0;
        } else if (a == "--control") {
            bool ok = false;
            const qint64 id = i + 1 < args.size() ? QString::fromStdString(args[i + 1]).toLongLong(&ok) : 0;
            if (!ok || id <= 0) {
                std::cerr << "recompute import: --control needs a run id (a positive integer)\n";
                return 2;
            }
            ++i;
            control = id;
        } else if (a == "--overrides") {
            while (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0)
                overrides << QString::fromStdString(args[++i]);
            if (overrides.isEmpty()) {
                std::cerr << "recompute import: --overrides needs at least one override\n";
                return 2;
            }
        } else if (!a.empty() && a[0] == '-') {
            std::cerr << "recompute import: unknown option " << a << "\n" << kUsage;
            return 2;
        } else {
            logs << QString::fromStdString(a);
        }
    }
    if (sample && logs.size() > 1) {
        std::cerr << "recompute import: --sample takes at most one FILE.json\n";
        return 2;
    }
    if (sample && !logs.isEmpty()) {
        samplePath = logs.first();
        logs.clear();
    }
    if (control && noLink) {
        std::cerr << "recompute import: --control and --no-link exclude each other\n";
        return 2;
    }
    if (!sample && logs.isEmpty()) {
        std::cerr << "recompute import: no LOG given\n" << kUsage;
        return 2;
    }
    rs::storage::Store store;
    QString error;
    if (!store.open(db.isEmpty() ? rs::storage::Store::defaultPath() : db, &error)) {
        std::cerr << "recompute import: " << error.toStdString() << "\n";
        return 2;
    }
    if (sample) {
        const int added = store.seedGuideSample(samplePath, &error);
        if (added < 0) {
            std::cerr << "recompute import: " << error.toStdString() << "\n";
            return 2;
        }
        std::cout << (added == 0 ? "the guide's measurements are already in the store"
                                 : QString::number(added).toStdString() + " runs imported from the guide")
                  << " (" << store.path().toStdString() << ")\n";
        return 0;
    }
    const bool showProgress = progress == 1 || (progress == -1 && isatty(STDERR_FILENO));
    int failures = 0;
    for (int n = 0; n < logs.size(); ++n) {
        const QString& log = logs[n];
        // A saved worker stream (the spool of a run whose store could not take it): stored as that run.
        if (rs::storage::isWorkerStreamFile(log)) {
            const auto stream = rs::storage::importWorkerStream(&store, log);
            if (!stream.error.isEmpty()) {
                std::cerr << "recompute import: " << stream.error.toStdString() << "\n";
                ++failures;
            } else if (stream.duplicate) {
                std::cout << log.toStdString() << ": already imported as run " << stream.runId << "\n";
            } else {
                const auto run = store.run(stream.runId);
                std::cout << log.toStdString() << ": worker stream, run " << stream.runId << " ("
                          << (run ? run->outcome.toStdString() : std::string("?")) << ", "
                          << stream.iterations << " iterations)\n";
            }
            continue;
        }
        rs::storage::ImportOptions options;
        options.overrides = overrides;
        options.recipeName = name;
        options.control = control;
        options.autoLink = !noLink;
        QElapsedTimer shown;
        shown.start();
        bool printed = false;
        if (showProgress) {
            // One line, rewritten in place at most ten times a second.
            options.progress = [&](qint64 done, qint64 total) {
                if (done < total && shown.elapsed() < 100 && printed)
                    return true;
                shown.restart();
                printed = true;
                const int pct = total > 0 ? int(done * 100 / total) : 100;
                std::fprintf(stderr, "\r[%d/%lld] %s: %3d%% (%.1f of %.1f MB)", n + 1,
                    static_cast<long long>(logs.size()), qPrintable(log), pct, done / 1e6, total / 1e6);
                std::fflush(stderr);
                return true;
            };
        }
        const auto result = rs::storage::importTrainingLog(&store, log, options);
        if (printed)
            std::fprintf(stderr, "\n");
        if (!result.error.isEmpty()) {
            std::cerr << "recompute import: " << result.error.toStdString() << "\n";
            ++failures;
            continue;
        }
        const auto run = store.run(result.runId);
        if (result.duplicate) {
            std::cout << log.toStdString() << ": already imported as run " << result.runId << "\n";
            continue;
        }
        std::cout << log.toStdString() << ": run " << result.runId;
        if (run) {
            std::cout << " [" << run->moduleSetLabel().toStdString() << "] " << run->outcome.toStdString();
            if (run->failureIteration)
                std::cout << " at iteration " << *run->failureIteration;
            if (run->peakAllocated)
                std::cout << ", peak allocated " << gb(run->peakAllocated);
            if (run->steadyStepMs)
                std::cout << ", step " << QString::number(*run->steadyStepMs, 'f', 2).toStdString() << " ms";
        }
        std::cout << "\n";
        if (result.controlRunId) {
            const auto c = store.run(*result.controlRunId);
            std::cout << "  control: run " << *result.controlRunId;
            if (c)
                std::cout << " (" << c->controlKindLabel().toStdString() << ")";
            std::cout << "\n";
        }
        if (result.runsLinkedToIt > 0) {
            std::cout << "  the control of " << result.runsLinkedToIt << " run(s) of the same shape ("
                      << (run ? run->controlKindLabel().toStdString() : std::string()) << ")\n";
        }
        for (const QString& note : result.notes)
            std::cout << "  note: " << note.toStdString() << "\n";
    }
    return failures == 0 ? 0 : 2;
}

} // namespace

RS_REGISTER_VERB("import",
    "import Megatron-LM / Bridge training logs (or --sample: the guide's measurements)", importMain);
