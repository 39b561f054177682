// SPDX-License-Identifier: Apache-2.0
// One run of one recipe on this host's worker, stored as it arrives: the loop that `recompute run` and
// `recompute sweep` share. It starts a LocalLauncher, feeds every event to a RunIngest, shows progress on
// stderr, and on Ctrl-C (SIGINT/SIGTERM) stops the worker and keeps what was measured (the run ends
// `aborted`).
#pragma once

#include <optional>

#include <QString>

#include "core/recipe.h"
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
};

// Runs `recipe` (its train_iters / warmup_iters decide the run length) and stores it in `store`.
RunSessionResult runSession(storage::Store& store, const Recipe& recipe, const RunSessionOptions& options);

} // namespace rs::cli
