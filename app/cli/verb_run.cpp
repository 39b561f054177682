// SPDX-License-Identifier: Apache-2.0
// `recompute run`: run one recipe on this host's worker, store everything as it arrives, print a summary.
#include <iostream>

#include "cli_session.h"
#include "core/recipe_input.h"
#include "core/units.h"
#include "storage/report.h"
#include "storage/store.h"
#include "verb_common.h"
#include "verbs.h"

using namespace Qt::StringLiterals;

namespace {

QString gb(std::optional<qint64> bytes)
{
    return QString::fromStdString(rs::formatGbUnit(bytes));
}

int runMain(const std::vector<std::string>& argv)
{
    rs::cli::ParsedArgs args;
    if (const auto done = rs::cli::parseArgs("run", argv, &args))
        return *done;
    rs::RecipeInput input;
    if (const auto done = rs::cli::readRunRecipe("run", args, &input))
        return *done;
    const QString db = rs::cli::text(args, "db");
    std::optional<qint64> control;
    if (args.has("control") && !(control = rs::cli::runIdArg("run", "--control", args.value("control"))))
        return 2;
    std::optional<int> steadyIters, warmupIters;
    rs::cli::RunSessionOptions options;
    std::string problem;
    if (!rs::cli::readRunLength(args, &warmupIters, &steadyIters, &problem)
        || !rs::cli::readWorkerOptions(args, &options, &problem))
        return rs::cli::usageError("run", problem);

    rs::cli::applyRunLength(input.recipe, warmupIters, steadyIters);
    // A recipe with rule errors never reaches the worker, nor the store.
    if (!rs::cli::refuseRuleErrors(u"run"_s, { input.recipe }, input.format))
        return 2;

    rs::storage::Store store;
    QString error;
    if (!store.open(rs::cli::storePath(args), &error)) {
        // The measurement is not given up for a store that cannot be opened: the run's stream is spooled
        // (RunIngest) and `recompute import SPOOL` stores it once the store is usable.
        std::cerr << "recompute run: " << error.toStdString()
                  << "\nrecompute run: running anyway; the stream will be spooled to a file\n";
        if (control) {
            std::cerr << "recompute run: --control needs a readable store\n";
            return 2;
        }
    }
    if (control && !store.run(*control)) {
        std::cerr << "recompute run: --control: run " << *control << " is not in "
                  << store.path().toStdString() << "\n";
        return 2;
    }

    options.control = control;
    options.format = input.format;
    options.provenance = u"recompute run "_s + QString::fromStdString(input.origin);
    const rs::cli::RunSessionResult session = rs::cli::runSession(store, { input.recipe }, options);
    if (session.refused || session.startFailed || session.jobs.isEmpty())
        return 2;
    const rs::session::SessionJob& job = session.jobs.front();
    if (!session.spoolPath.isEmpty()) {
        std::cout << "run not stored: every event is kept in " << session.spoolPath.toStdString()
                  << "\n  store it with   recompute import " << session.spoolPath.toStdString()
                  << (db.isEmpty() ? "" : " --db " + db.toStdString()) << "\n";
        return session.interrupted ? 130 : 1;
    }
    const auto run = store.run(job.runId);
    if (!run) {
        std::cerr << "recompute run: the run was not stored: " << store.lastError().toStdString() << "\n";
        return 2;
    }
    std::cout << "run " << run->id << ": " << rs::storage::terminalText(run->recipeName).toStdString()
              << "  [" << run->moduleSetLabel().toStdString() << "]\n";
    std::cout << "  outcome          " << run->outcome.toStdString();
    if (!run->failureStage.isEmpty())
        std::cout << " in " << run->failureStage.toStdString();
    if (run->failureIteration)
        std::cout << " (iteration " << *run->failureIteration << ")";
    if (!run->message.isEmpty())
        std::cout << ": " << run->message.toStdString();
    std::cout << "\n";
    if (run->workerVersion.isEmpty()) // the worker never said hello (it did not start, or ssh failed)
        std::cout << "  worker           never reported\n";
    else
        std::cout << "  worker           " << run->workerVersion.toStdString() << " on "
                  << run->device.toStdString() << " (" << run->host.toStdString() << "), libtorch "
                  << run->libtorchVersion.toStdString() << "\n";
    std::cout << "  iterations       " << store.iterations(run->id).size() << " rows stored\n";
    for (const auto& p : store.rankPeaks(run->id))
        std::cout << "  rank " << p.rank << "           peak allocated " << gb(p.peakAllocated).toStdString()
                  << ", reserved " << gb(p.peakReserved).toStdString() << " (" << p.peakPhase.toStdString()
                  << ", iteration " << p.peakIteration.value_or(0) << ")\n";
    std::cout << "  peak allocated   " << gb(run->peakAllocated).toStdString() << "\n";
    if (run->steadyStepMs)
        std::cout << "  steady step      " << QString::number(*run->steadyStepMs, 'f', 2).toStdString()
                  << " ms\n";
    if (run->modelTflops)
        std::cout << "  TFLOP/s/device   " << QString::number(*run->modelTflops, 'f', 2).toStdString()
                  << "\n";
    if (run->lossFinite)
        std::cout << "  losses finite    " << (*run->lossFinite ? "yes" : "NO") << "\n";
    if (run->controlRunId) {
        const auto rows = store.compare(*run->controlRunId, { run->id });
        if (rows.size() == 2 && rows[1].match.matched) {
            std::cout << "  control          run " << *run->controlRunId << ": Allocated vs [] "
                      << rs::storage::formatPercent(rows[1].allocatedVsControlPct).toStdString()
                      << ", Time vs [] (HL) "
                      << rs::storage::formatPercent(rows[1].timeVsControlPct).toStdString() << "\n";
        } else if (rows.size() == 2) {
            // Named with --control but not matched: said, never compared.
            std::cout << "  control          run " << *run->controlRunId << " is NOT MATCHED, not compared: "
                      << rows[1].match.reasons.join(u"; "_s).toStdString() << "\n";
        }
    } else if (!run->isExplicitControl()) {
        std::cout
            << "  control          none matched in the store (run the [] control with the same recipe)\n";
    }
    std::cout << "  stored in        " << store.path().toStdString() << "\n";
    if (session.interrupted)
        return 130;
    return run->outcome != rs::storage::outcome::Pass || session.storeFailed ? 1 : 0;
}

} // namespace

RS_REGISTER_VERB("run", runMain);
