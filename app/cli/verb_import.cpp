// SPDX-License-Identifier: Apache-2.0
// `recompute import`: real Megatron-LM / Megatron Bridge training logs, or the guide's sample measurements.
#include <iostream>

#include "storage/ingest.h"
#include "storage/log_import.h"
#include "storage/store.h"
#include "verbs.h"

using namespace Qt::StringLiterals;

namespace {

const char* kUsage
    = "usage: recompute import [--db PATH] [--name NAME] [--overrides ARGS...] LOG...\n"
      "       recompute import [--db PATH] --sample [FILE.json]\n"
      "  Reads Megatron-LM and Megatron Bridge training logs: iteration lines, per-rank memory lines,\n"
      "  throughput, losses, skipped / NaN counts, theoretical memory, OOM tracebacks, printed arguments.\n"
      "  --overrides gives Bridge overrides (model.recompute_modules=[moe_act] ...) for what the log does "
      "not\n"
      "  print; it takes arguments up to the next one that starts with --. Importing the same log twice\n"
      "  does not duplicate it. --sample seeds the store with the guide's published measurements.\n";

int importMain(const std::vector<std::string>& args)
{
    QString db, name, samplePath;
    bool sample = false;
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
    int failures = 0;
    for (const QString& log : logs) {
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
        const auto result = rs::storage::importTrainingLog(&store, log, options);
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
                std::cout << ", peak allocated "
                          << QString::number(double(*run->peakAllocated) / 1e9, 'f', 3).toStdString()
                          << " GB";
            if (run->steadyStepMs)
                std::cout << ", step " << QString::number(*run->steadyStepMs, 'f', 2).toStdString() << " ms";
        }
        std::cout << "\n";
    }
    return failures == 0 ? 0 : 2;
}

} // namespace

RS_REGISTER_VERB("import",
    "import Megatron-LM / Bridge training logs (or --sample: the guide's measurements)", importMain);
