// SPDX-License-Identifier: Apache-2.0
// `recompute import`: real Megatron-LM / Megatron Bridge training logs, or the guide's sample measurements.
#include <cstdio>
#include <iostream>
#include <unistd.h>

#include <QElapsedTimer>

#include "core/units.h"
#include "storage/ingest.h"
#include "storage/log_import.h"
#include "storage/store.h"
#include "verb_common.h"
#include "verbs.h"

using namespace Qt::StringLiterals;

namespace {

std::string gb(std::optional<qint64> bytes)
{
    return rs::formatGbUnit(bytes ? std::optional<std::int64_t>(*bytes) : std::nullopt, "?");
}

int importMain(const std::vector<std::string>& argv)
{
    rs::cli::ParsedArgs args;
    if (const auto done = rs::cli::parseArgs("import", argv, &args))
        return *done;
    const QString name = rs::cli::text(args, "name");
    QString samplePath;
    const bool sample = args.has("sample"), noLink = args.has("no-link");
    // -1: when stderr is a terminal; of --progress and --no-progress, the one given later wins.
    int progress = -1;
    for (const auto& o : args.order) {
        if (o == "progress" || o == "no-progress")
            progress = o == "progress" ? 1 : 0;
    }
    std::optional<qint64> control;
    if (args.has("control") && !(control = rs::cli::runIdArg("import", "--control", args.value("control"))))
        return 2;
    QStringList overrides, logs;
    if (const auto it = args.groups.find("overrides"); it != args.groups.end()) {
        for (const auto& group : it->second) {
            if (group.empty())
                return rs::cli::inputError("import", "--overrides needs at least one override");
            for (const auto& o : group)
                overrides << QString::fromStdString(o);
        }
    }
    for (const auto& p : args.positionals)
        logs << QString::fromStdString(p);
    if (sample && logs.size() > 1)
        return rs::cli::inputError("import", "--sample takes at most one FILE.json");
    if (sample && !logs.isEmpty()) {
        samplePath = logs.first();
        logs.clear();
    }
    if (control && noLink)
        return rs::cli::inputError("import", "--control and --no-link exclude each other");
    if (!sample && logs.isEmpty())
        return rs::cli::usageError("import", "no LOG given");
    rs::storage::Store store;
    if (!rs::cli::openStore("import", args, &store))
        return 2;
    QString error;
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

RS_REGISTER_VERB("import", importMain);
