// SPDX-License-Identifier: Apache-2.0
// One run of one recipe on this host's worker, stored as it arrives: the loop that `recompute run` and
// `recompute sweep` share. It starts a LocalLauncher, feeds every event to a RunIngest, shows progress on
// stderr, and on Ctrl-C (SIGINT/SIGTERM) stops the worker and keeps what was measured (the run ends
// `aborted`).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <QString>

#include "core/recipe.h"
#include "core/recipe_input.h"
#include "storage/store.h"

namespace rs::cli {

// Ctrl-C handling for as long as it lives: SIGINT and SIGTERM are counted instead of ending the process.
// Nested scopes share one count; the outermost restores the previous handlers. A verb that runs several
// sessions (sweep) holds one for its whole length, so a Ctrl-C between two runs is not lost.
class InterruptScope {
public:
    InterruptScope();
    ~InterruptScope();
    InterruptScope(const InterruptScope&) = delete;
    InterruptScope& operator=(const InterruptScope&) = delete;
    static int count(); // signals received since the process started
};

struct RunSessionOptions {
    QString verb = QStringLiteral("run"); // names the messages: "recompute <verb>: ..."
    QString workerPath; // empty: LocalLauncher's search ($RS_WORKER, next to the CLI, build tree, PATH)
    QString device; // passed as --device to the worker when set
    int ranks = 1; // worker processes on this host, data-parallel replicas (LaunchOptions::ranks)
    QString sshHost; // run the worker on this host over ssh (LaunchOptions::sshHost)
    QStringList sshOptions;
    QString remoteWorker;
    std::optional<qint64> control; // the matched [] control to link; empty: the store's latest matched one
    QString provenance; // stored with the run
    QString progressLabel; // shown before the progress bar (sweep: the module set)
};

struct RunSessionResult {
    qint64 runId = 0; // 0: nothing was stored
    bool started = false; // the worker process started
    bool interrupted = false; // a Ctrl-C arrived during the run
    bool storeFailed = false; // the store refused a row (said on stderr)
    int iterationsStored = 0;
    QString error; // why the worker did not start
    QString spoolPath; // the store could not take the run: its whole stream is in this file (import it)
};

// Reads the recipe arguments of a verb that runs the worker (`run`, `sweep`). Returns an exit code when the
// verb is done: 0 after printing `usage` for --help, 2 after naming what is unusable; nullopt when `input`
// holds the recipe and `rest` the arguments the verb parses itself.
std::optional<int> readRunRecipe(const char* verb, const char* usage, const std::vector<std::string>& args,
    RecipeInput* input, std::vector<std::string>* rest);

// --warmup / --iters of a run verb: the recipe carries the run length (warmup_iters, train_iters), so the
// worker, the store and the progress bar agree on it; --iters counts steady iterations as the worker does.
void applyRunLength(Recipe& recipe, std::optional<int> warmupIters, std::optional<int> steadyIters);

// Where the worker runs, as run and sweep both take it: --device, --worker, --ranks, --host, --ssh-options,
// --remote-worker (each with a value). takeWorkerFlag stores the value in *options, or throws
// std::invalid_argument naming the flag and what it allows.
bool isWorkerFlag(const std::string& flag);
void takeWorkerFlag(const std::string& flag, const QString& value, RunSessionOptions* options);

// Runs `recipe` (its train_iters / warmup_iters decide the run length) and stores it in `store`.
RunSessionResult runSession(storage::Store& store, const Recipe& recipe, const RunSessionOptions& options);

} // namespace rs::cli
