// SPDX-License-Identifier: Apache-2.0
// A real-job sweep (issue 15), the loop `recompute sweep --job` and the studio's launch page share: the
// user's own Megatron-LM or Bridge command run once per recompute choice, the [] control first, each run's
// output streamed into the log importer (JobRun), stored as an imported run linked to the control, with the
// estimate of the same recipe beside it ("calibration"). As RunSession does for worker runs, it
//   - plans: the control, then every choice that validates and that its estimate does not put over the
//     memory target by more than the estimator's error (those are skipped and said);
//   - reuses a stored run of the same recipe, the same command and the same launch instead of running it
//     again (reuseControl / reuseCandidates);
//   - repeats a choice while the 95 % interval of its pooled steady step time is wider than
//     intervalTargetPct of the median, up to repeatsMax runs;
//   - stops after a run that ends badly (its choice is not repeated) and at cancel().
// Everything it has to say arrives as signals; the CLI prints them, the studio shows them.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <QObject>
#include <QString>
#include <QStringList>
#include <QVector>

#include "core/comparison.h"
#include "core/estimator.h"
#include "core/recipe.h"
#include "session/job_run.h"

namespace rs::storage {
class Store;
}

namespace rs::session {

struct JobSessionOptions {
    int iters = 10; // train_iters of every run (warm-up, optimizer-state init and steady)
    std::vector<std::string> bridgeLauncher; // the words before a Bridge command's overrides
    JobOptions job; // where the command runs: here, over ssh, or as a Slurm batch job
    QString logDir; // where each run's log is written; empty: "job-logs" beside the store
    int repeats = 1;
    int repeatsMax = 0; // > repeats: repeat a choice until its interval is narrow
    double intervalTargetPct = 2.0;
    bool reuseControl = true, reuseCandidates = true;
    std::optional<double> targetGb; // per-rank memory target: choices estimated over it are not run
    bool skipByEstimate = true;
    QString recipeName; // the stored runs' name; empty: the recipe's, else "job"
    // Set: every run is one rank of the job's layout on this one GPU (--fake-process-group, job_run.h).
    std::optional<OneRankOfLayout> oneRank;
};

// One recompute choice of the sweep, as planned and as measured.
struct JobChoice {
    std::optional<RecomputeChoice> choice; // nullopt: the [] control
    QString label; // "[]", "moe_act", "full uniform 1"
    std::vector<std::string> command; // the user's command with this choice written in
    Recipe recipe; // the recipe that command trains
    QVector<qint64> runs; // stored runs of this choice (run or reused), oldest first
};

// A choice its estimate puts over the target by more than the estimator's error: not run.
struct EstimateSkip {
    QString label;
    QString reason;
};

// The choices of `choices` whose estimate (hottest rank, `layout`) is over `targetGb` by more than the
// estimator's stated error, one entry per choice (nullopt: it may fit, or no target or no estimate);
// `error` is set when the recipe could not be estimated. The worker sweep and the job sweep both skip by it.
std::vector<std::optional<QString>> skipsByEstimate(const Recipe& base, InputFormat format,
    const std::vector<RecomputeChoice>& choices, std::optional<double> targetGb, Layout layout,
    QString* error = nullptr);

class JobSession : public QObject {
    Q_OBJECT
public:
    explicit JobSession(storage::Store* store, QObject* parent = nullptr);
    ~JobSession() override;

    // Plans the sweep, touching nothing (no store, no file): the control, then every choice that
    // validates (rule errors: said through message(), skipped) and that its estimate does not put over the
    // target (said, skipped). False when nothing can run: the control has rule errors (refusedByRules()) or
    // a command cannot be written; refusal() says why.
    bool plan(const Recipe& base, InputFormat format, const std::vector<RecomputeChoice>& choices,
        const JobSessionOptions& options);
    // Runs the plan into the store, from its first choice. False when the log folder cannot be made
    // (refusal()); when it returns true, finished() follows, from the event loop.
    bool start();
    // Stops the current run (it is stored as far as it got) and runs nothing further.
    void cancel();
    bool isRunning() const { return m_running; }

    QString refusal() const { return m_refusal; }
    bool refusedByRules() const { return m_refusedByRules; }
    const std::vector<JobChoice>& plan() const { return m_plan; }
    // The rank a one-rank sweep runs (nullopt: the whole job).
    std::optional<LayoutRankChoice> layoutRank() const { return m_layoutRank; }
    const QVector<EstimateSkip>& estimateSkips() const { return m_estimateSkips; }
    int skippedByRules() const { return m_skippedByRules; }
    QString logDir() const { return m_logDir; }
    std::optional<qint64> controlRunId() const { return m_controlRun; }
    QVector<qint64> candidateRuns() const { return m_candidateRuns; }
    QVector<qint64> moreControls() const { return m_moreControls; } // repeats of the control
    int reusedRuns() const { return m_reused; }
    bool cancelled() const { return m_cancelled; }
    // Why the sweep stopped early: a run that could not be started or stored ("" when it ran through).
    QString failure() const { return m_failure; }
    // The command could not be started (the log file, an empty command): the sweep stopped there.
    bool startFailed() const { return m_startFailed; }
    const JobRun* currentRun() const { return m_job.get(); }

signals:
    // A sentence about the sweep: a choice skipped (rule errors, estimate), a run reused, a repeat.
    void message(const QString& text);
    void runStarted(const QString& label, const QStringList& command, const QString& logPath);
    void line(const QString& label, const QString& text);
    void note(const QString& label, const QString& text); // the launch itself (Slurm's word on the job)
    void iteration(const QString& label, const storage::IterationRow& row);
    // A run ended badly: why, and the last lines of its output.
    void runFailed(const QString& label, const QString& reason, const QStringList& lastLines);
    // A run is in the store (imported now, or a stored one reused); `notes`: the importer's.
    void runStored(const QString& label, qint64 runId, bool reused, const QStringList& notes);
    // The estimate of the recipe beside the measured peak (nullopt: not measured); `error`: no estimate.
    void calibration(const QString& label, std::optional<qint64> estimateBytes,
        std::optional<qint64> measuredBytes, const QString& error);
    void finished();

private:
    void startNext();
    void onRunFinished(bool aborted, const QString& reason);
    // A run of the current choice is in the store (run now or reused): it counts for the control or the
    // candidates.
    void take(qint64 runId);
    void nextChoice();
    void finish();

    storage::Store* m_store;
    std::unique_ptr<JobRun> m_job;
    JobSessionOptions m_options;
    InputFormat m_format = InputFormat::Json;
    std::vector<JobChoice> m_plan;
    QVector<EstimateSkip> m_estimateSkips;
    int m_skippedByRules = 0;
    QString m_logDir, m_stamp, m_refusal, m_failure;
    size_t m_current = 0; // index into m_plan
    int m_repeat = 0; // of the current choice, 1-based once started
    QVector<qint64> m_reusable; // stored runs of the current choice still to take, oldest first
    QString m_signature; // the current choice's launch signature
    QStringList m_hashes; // the current choice's recipe hashes
    QStringList m_tail; // the current run's last lines
    QString m_logPath;
    std::optional<LayoutRankChoice> m_layoutRank;
    std::optional<qint64> m_controlRun;
    QVector<qint64> m_candidateRuns, m_moreControls;
    int m_reused = 0;
    bool m_running = false, m_cancelled = false, m_startFailed = false, m_refusedByRules = false;
    QString m_recipeName;
};

} // namespace rs::session
