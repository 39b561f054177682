// SPDX-License-Identifier: Apache-2.0
// One launch of the guide's matched runs, without a GUI: the loop that `recompute run`, `recompute sweep` and
// the studio's launch page share. Given the candidate recipes it
//   1. refuses the whole launch when any recipe (the [] control included) has rule errors: nothing starts,
//      nothing is stored, refusal() names every finding;
//   2. runs the [] control of the candidates first (core's controlRecipe), unless a stored run can stand in
//      for it: a passing [] control with the same recipe (hash of the resolved recipe) measured with the
//      same launch settings (worker, its arguments, ranks, host). That run is linked, not re-run, and a
//      message says which run it is and when it was measured;
//   3. runs the control and every candidate `repeats` times, in rounds (the control's run i, then each
//      candidate's run i), each candidate linked to the control's first run (the control's further runs
//      pool with it), storing every event through a RunIngest as it arrives (a killed run keeps what was
//      measured and ends `aborted`).
// cancel() stops the current worker (its run ends `aborted`) and runs nothing further.
//
// It lives here, above rs_launch (the process) and rs_storage (the store), in its own library rs_session:
// the launcher stays free of QtSql, the store free of processes, and the GUI only shows what it reports.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include <QDateTime>
#include <QObject>
#include <QStringList>
#include <QVector>

#include "core/recipe.h"
#include "core/stream.h"
#include "launch/worker_launcher.h"

namespace rs::storage {
class Store;
class RunIngest;
struct RunRecord;
} // namespace rs::storage

namespace rs::session {

struct SessionOptions {
    launch::LaunchOptions launch; // where and how the worker runs
    bool controlFirst = true; // the candidates' [] control first (run, or reused)
    bool reuseControl = true; // a stored matched control measured with the same settings is linked instead
    // Link this stored run as every candidate's control (no control job). Without it and without
    // controlFirst the store's latest matched [] control is linked (RunIngest's default).
    std::optional<qint64> control;
    int repeats = 1; // runs of every choice, the [] control included
    // Repeats until narrow (issue 15): with repeatsMax > repeats, a choice (the [] control included) is run
    // again while the 95 % interval of its steady step time's median (core's stepStats over every steady
    // iteration of its runs, pooled) is wider than intervalTargetPct of the median (half-width), up to
    // repeatsMax runs. A run that ends without a result stops the repeats of its choice.
    int repeatsMax = 0;
    double intervalTargetPct = 2.0;
    // Stored passing runs of a candidate with the same recipe hash and launch settings (as for the control)
    // are taken instead of run again, up to repeats (repeatsMax when repeating until narrow).
    bool reuseCandidates = false;
    InputFormat format = InputFormat::Json; // which front-end rules judge the recipes
    QString provenance; // stored with every run (the launch settings are appended)
};

struct SessionJob {
    QString label; // the guide's label of the recompute choice: "[]", "moe_act", "full uniform 1"
    Recipe recipe;
    bool isControl = false;
    int repeat = 1; // 1..repeats
    int repeats = 1;
    qint64 runId = 0; // once stored
    bool reused = false; // a stored run taken instead of running this job (nothing was launched)
    bool aborted = false;
    QString reason; // why it ended without a result
    QString spoolPath; // the store could not take this run: every event is in this file (import it)
};

class RunSession : public QObject {
    Q_OBJECT
public:
    explicit RunSession(storage::Store* store, QObject* parent = nullptr);
    ~RunSession() override;

    // Every rule error of `recipes` as "[label] R11 error: message"; empty when every one may run.
    static QStringList ruleErrors(const QVector<Recipe>& recipes, InputFormat format);
    // The guide's label of a recipe's recompute choice ("[]", "core_attn", "full uniform 1", "none").
    static QString recomputeLabel(const Recipe& recipe);
    // The launch settings a stored control must share to be reused: worker (local path or ssh host and
    // remote worker), its extra arguments, ranks, and for a Slurm job its partition, nodes, tasks and GPUs
    // per node and extra #SBATCH lines. Stored at the end of every run's provenance.
    static QString launchSignature(const launch::LaunchOptions& options);
    // The newest stored run that may stand in for running `control` with these settings; nullopt if none.
    std::optional<qint64> findReusableControl(
        const Recipe& control, const launch::LaunchOptions& options) const;
    // Every stored passing run (newest first) that may stand in for running `recipe` with these settings:
    // ingested on this machine, the same launch signature and world size, its recipe hashing as ours.
    QVector<qint64> findReusableRuns(
        const Recipe& recipe, const launch::LaunchOptions& options, bool explicitControlOnly = false) const;
    // What a stored run must be to stand in for running a recipe again: of this source, passing, ingested on
    // this machine, its provenance ending with `signature` (how it was launched), its recipe hashing as one
    // of `recipeHashes` (its stored hash, or its stored recipe hashed as ours), and, when set, of this world
    // size / an explicit [] control. The one lookup for worker runs (findReusableRuns) and real-job runs
    // (recompute sweep --job: the recipe the command trains, the exact command and where it ran).
    struct ReuseKey {
        QString source;
        QStringList recipeHashes;
        QString signature;
        std::optional<int> worldSize;
        bool explicitControlOnly = false;
    };
    // Newest first.
    static QVector<qint64> findStoredRuns(const storage::Store& store, const ReuseKey& key);
    // The hashes a stored recipe may carry for `recipe`: as sent and as the rules resolve it.
    static QStringList recipeHashes(const Recipe& recipe);
    // " | launch: ": what separates a run's provenance from its launch signature.
    static QString signatureMark();
    // The half-width of the interval of the median over `runs` pooled, % of the median; nullopt: none yet.
    std::optional<double> intervalHalfWidthPct(const QVector<qint64>& runs) const;

    // Plans the jobs and starts the first. False when the launch is refused (rule errors, no store, already
    // running): refusal() says why and nothing was started or stored. When it returns true, finished()
    // follows (always later, from the event loop), also when nothing needed to run.
    bool start(const QVector<Recipe>& candidates, const SessionOptions& options);
    void cancel(int graceMs = 2000);
    bool isRunning() const { return m_running; }

    QString refusal() const { return m_refusal; }
    const QVector<SessionJob>& jobs() const { return m_jobs; }
    int currentJobIndex() const { return m_current; } // -1 before the first
    const SessionJob* currentJob() const;
    std::optional<qint64> controlRunId() const { return m_controlRun; }
    bool controlReused() const { return m_controlReused; }
    QDateTime reusedControlDate() const { return m_reusedDate; } // UTC
    QVector<qint64> storedRuns() const; // stored by this session, in order (a reused control is not)
    QVector<qint64> candidateRuns() const;
    bool cancelled() const { return m_cancelled; }
    // The worker could not be started (not found, temp file): the session stopped there.
    bool startFailed() const { return !m_startError.isEmpty(); }
    QString startError() const { return m_startError; }
    bool storeFailed() const { return m_storeFailed; }
    // The worker refused the [] control (outcome invalid): why; the session stopped there ("" otherwise).
    QString controlRefusal() const { return m_controlRefusal; }
    // The running maximum of allocated bytes of the current run (progress displays).
    std::optional<qint64> currentPeakAllocated() const;
    int currentIterations() const;
    launch::WorkerLauncher* launcher() const { return m_launcher.get(); }

signals:
    // A sentence for the user: the control reused, a start failure, a store error, a run not matched.
    void message(const QString& text);
    void jobStarted(int index);
    // Every event of the current run, as the launcher decoded it, after it was stored.
    void streamEvent(const rs::stream::Event& event);
    void iteration(const rs::stream::Iteration& event);
    void stderrText(const QString& text);
    void malformedLine(const QByteArray& line, const QString& why);
    void jobFinished(int index); // its run is complete in the store (jobs()[index].runId)
    void finished();

private:
    void startNext();
    void onLauncherFinished(bool aborted, int exitCode, const QString& reason);
    void finish();
    // After job `index` is complete (run or reused): when it ends a round, one more round of the choices
    // whose interval is still wide.
    void repeatIfWide(int index);

    storage::Store* m_store;
    std::unique_ptr<launch::WorkerLauncher> m_launcher;
    std::unique_ptr<storage::RunIngest> m_ingest;
    SessionOptions m_options;
    QVector<SessionJob> m_jobs;
    QVector<int> m_narrow; // the last job of each choice whose repeats are settled (narrow, or the cap)
    int m_current = -1;
    bool m_running = false;
    bool m_workerStarted = false; // the current job's process started
    bool m_cancelled = false;
    bool m_storeFailed = false;
    bool m_controlReused = false;
    QDateTime m_reusedDate;
    std::optional<qint64> m_controlRun;
    QString m_refusal;
    QString m_startError;
    QString m_controlRefusal;
};

} // namespace rs::session
