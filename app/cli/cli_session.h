// SPDX-License-Identifier: Apache-2.0
// The command-line face of session::RunSession, shared by `recompute run` and `recompute sweep`: the recipe
// and worker arguments, progress on stderr, and Ctrl-C (SIGINT/SIGTERM), which stops the worker and keeps
// what was measured (the run ends `aborted`). Launching, ingest, the control first and its reuse, and the
// refusal of a recipe with rule errors are the session's.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <QString>
#include <QVector>

#include "core/recipe.h"
#include "core/recipe_input.h"
#include "session/run_session.h"
#include "storage/store.h"
#include "worker_options.h"

namespace rs::cli {

// Ctrl-C handling for as long as it lives: SIGINT, SIGTERM and SIGHUP are counted instead of ending the
// process.
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

// Where the worker runs (worker_options.h: readWorkerOptions), and what the session does.
struct RunSessionOptions : WorkerOptions {
    QString verb = QStringLiteral("run"); // names the messages: "recompute <verb>: ..."
    std::optional<qint64> control; // the matched [] control to link; empty: the store's latest matched one
    bool controlFirst = false; // sweep: the candidates' [] control first (run, or a stored one reused)
    bool reuseControl = true; // sweep: a stored matched control measured the same way is not run again
    int repeats = 1; // runs of every candidate
    int repeatsMax = 0; // > repeats: repeat until the interval is narrow (session::SessionOptions)
    double intervalTargetPct = 2.0;
    bool reuseCandidates = false; // sweep: stored runs of a candidate measured the same way are taken
    InputFormat format = InputFormat::Json; // the rules that judge the recipes
    QString provenance; // stored with the run
    // Called once per stored run, as it is stored (sweep prints its line).
    std::function<void(const session::SessionJob& job)> onStored;
};

struct RunSessionResult {
    bool refused = false; // rule errors: nothing started, nothing stored (said on stderr)
    bool startFailed = false; // the worker did not start (said on stderr; an aborted run names why)
    bool interrupted = false; // a Ctrl-C arrived during the session
    bool storeFailed = false; // the store refused a row (said on stderr)
    bool controlRefused = false; // the worker refused the [] control: no candidate ran (said on stderr)
    std::optional<qint64> controlRunId; // the candidates' control (run now, reused, or given)
    bool controlReused = false;
    QVector<session::SessionJob> jobs; // in order: the control (when it ran), then the candidates
    QVector<qint64> candidateRuns() const;
    // Repeats of the [] control other than controlRunId (they pool with it in a comparison).
    QVector<qint64> moreControlRuns() const;
    QString spoolPath; // the store could not take a run: its whole stream is in this file (import it)
};

// Prints every rule error of `recipes` ("recompute <verb>: refused: ..."); true when there are none. The
// verbs call it before they open the store, so a refused recipe leaves no trace.
bool refuseRuleErrors(const QString& verb, const QVector<Recipe>& recipes, InputFormat format);

// --warmup / --iters of a run verb: the recipe carries the run length (warmup_iters, train_iters), so the
// worker, the store and the progress bar agree on it; --iters counts steady iterations as the worker does.
void applyRunLength(Recipe& recipe, std::optional<int> warmupIters, std::optional<int> steadyIters);

// Runs the candidates through one session::RunSession (the control first when asked, every event stored as it
// arrives), with progress on stderr; Ctrl-C stops the current worker and runs nothing further.
RunSessionResult runSession(
    storage::Store& store, const QVector<Recipe>& candidates, const RunSessionOptions& options);

} // namespace rs::cli
