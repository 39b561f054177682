// SPDX-License-Identifier: Apache-2.0
// Runs the recipe being edited, with a progress bar, a live per-iteration memory curve in GB, cancel, and
// every run stored as it arrives. Two things can run:
//   - the worker: session::RunSession starts recompute-bench (a child process: the GUI never runs LibTorch
//     itself), the matched [] control first or a stored one reused (the page says which run, and when),
//     the candidate as many times as asked; the page then shows the spread of its figures;
//   - the user's own training command (a Megatron-LM line or a Bridge launcher and its overrides), once per
//     recompute choice, the [] control first: session::JobSession, the loop `recompute sweep --job` runs,
//     each run's log imported as it streams and linked to the control.
// Either runs on this host, over ssh or as a Slurm job. A recipe with rule errors is refused before anything
// starts; a [] control the worker refuses (a recipe this host cannot hold) stops the launch there.
#pragma once

#include <memory>

#include <QVector>
#include <QWidget>

#include "charts/chartdata.h"
#include "core/recipe.h"
#include "core/stream.h"
#include "launch/slurm_job.h"
#include "storage/store.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QSpinBox;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;

namespace rs::session {
class JobSession;
class RunSession;
struct OneRankOfLayout;
} // namespace rs::session

namespace rs::ui {

class MemoryLinesChart;
class RecipeDocument;

class LaunchPage : public QWidget {
    Q_OBJECT
public:
    LaunchPage(RecipeDocument* document, storage::Store* store, QWidget* parent = nullptr);
    ~LaunchPage() override;

    bool isRunning() const;
    QPushButton* runButton() const { return m_run; }
    QPushButton* cancelButton() const { return m_cancel; }
    QProgressBar* progressBar() const { return m_progress; }
    MemoryLinesChart* memoryChart() const { return m_chart; }
    QCheckBox* controlFirstBox() const { return m_controlFirst; }
    QCheckBox* reuseControlBox() const { return m_reuseControl; }
    QSpinBox* repeatsBox() const { return m_repeats; }
    QLineEdit* workerArgumentsEdit() const { return m_extraArgs; }
    QSpinBox* ranksBox() const { return m_ranks; }
    QLineEdit* hostEdit() const { return m_host; }

    // What runs: the worker on the recipe, or the user's own training command once per recompute choice.
    enum class RunKind { Worker, Job };
    QComboBox* runKindBox() const { return m_runKind; }
    RunKind runKind() const;
    void setRunKind(RunKind kind);
    // The job's fields: its front end (Megatron-LM flags or Bridge overrides), the launcher (the words before
    // the flags or the overrides: "torchrun --nproc-per-node 8 pretrain_gpt.py"), the recompute choices
    // (core's spelling, "moe_act layernorm,moe_act full:uniform:1"; empty: the recipe's own, or every label
    // with an effect when the recipe is its own control), the iterations of each run, and whether choices
    // the estimate puts over the memory target are skipped.
    QComboBox* jobFrontEndBox() const { return m_jobFrontEnd; }
    QLineEdit* jobLauncherEdit() const { return m_jobLauncher; }
    QLineEdit* jobChoicesEdit() const { return m_jobChoices; }
    QSpinBox* jobItersBox() const { return m_jobIters; }
    QCheckBox* jobSkipByEstimateBox() const { return m_jobSkip; }
    // One rank of the job's layout on this one GPU (Megatron-LM's --fake-process-group, session/job_run.h):
    // the rank (-1: the hottest, as the estimate names it).
    QCheckBox* jobOneRankBox() const { return m_jobOneRank; }
    QSpinBox* jobRankBox() const { return m_jobRank; }
    // Fills the job's front end and launcher (a pasted command line's), for the real job.
    void setJobCommand(InputFormat format, const QString& launcher);
    // The command the [] control would run, as the page shows it under the fields ("" with a reason when the
    // job cannot be written yet).
    QString jobCommandPreview() const;

    // The host section: where it runs. "This host", "ssh" (hostEdit) or "Slurm" (the fields below).
    enum class HostKind { Local, Ssh, Slurm };
    QComboBox* hostKindBox() const { return m_hostKind; }
    HostKind hostKind() const;
    void setHostKind(HostKind kind);
    QWidget* slurmSection() const { return m_slurmBox; }
    QLineEdit* slurmPartitionEdit() const { return m_slurmPartition; }
    QSpinBox* slurmNodesBox() const { return m_slurmNodes; }
    QSpinBox* slurmTasksPerNodeBox() const { return m_slurmTasks; }
    QSpinBox* slurmGpusPerNodeBox() const { return m_slurmGpus; }
    QLineEdit* slurmTimeEdit() const { return m_slurmTime; }
    QLineEdit* slurmAccountEdit() const { return m_slurmAccount; }
    QPlainTextEdit* slurmExtraLinesEdit() const { return m_slurmExtra; }
    QLineEdit* slurmWorkDirEdit() const { return m_slurmWorkDir; }
    QLineEdit* slurmLoginHostEdit() const { return m_slurmLogin; }
    // The Slurm fields as settings, and checkSlurmSettings' message for them ("" when they may be used), as
    // the page shows it under the fields (the field it names is marked).
    launch::SlurmSettings slurmSettings() const;
    QString slurmProblemText() const;
    // The field the current message names (nullptr when none): marked in red.
    QWidget* slurmProblemField() const { return m_slurmProblemField; }
    // The settings a run must not change while it runs (disabled then): what runs, where, how often.
    QList<QWidget*> settingsWidgets() const;
    QString statusText() const;
    // Which control the launch compares with: "run 3 of 2026-12-01 09:40 UTC (stored, reused)".
    QString controlText() const;
    // Per choice, its figures over its runs (mean and spread of step time and peak) and against the control
    // the product's one Δ step time (core's kStepDeltaName) and Δ allocated.
    QString summaryText() const;
    // What the live chart was last given (the current run's lines, then the control's).
    const QVector<IterationLine>& liveLines() const { return m_lines; }
    // Ids of the runs stored by the last launch, in order (the control first when it ran).
    QVector<qint64> storedRuns() const;
    session::RunSession* session() const { return m_session.get(); }
    session::JobSession* jobSession() const { return m_jobSession.get(); }

public slots:
    // Starts the current recipe (after its control, when asked), or the job sweep. False with the reason in
    // the page: a recipe with rule errors is refused and nothing is stored.
    bool start();
    void cancel();

signals:
    void runStarted();
    // A run's stream ended and its row is complete in the store.
    void runStored(qint64 runId);
    // The whole launch (control and recipe) is over.
    void launchFinished();

private:
    bool startJob();
    session::OneRankOfLayout oneRank() const;
    void onJobStarted(int index);
    void onEvent(const stream::Event& event);
    void onJobFinished(int index);
    void onSessionFinished();
    void connectJobSession();
    void beginRun(const QString& label, bool isControl, int maxIterations);
    void redrawChart(const QString& title);
    void showSummary(std::optional<qint64> control, const QVector<qint64>& moreControls,
        const QVector<qint64>& candidates);
    void appendLog(const QString& line);
    void setRunning(bool running);
    void buildHostSection();
    void buildJobSection();
    void updateRunKind();
    void updateJobPreview();
    void checkSlurmFields();

    RecipeDocument* m_document;
    storage::Store* m_store;
    std::unique_ptr<session::RunSession> m_session;
    std::unique_ptr<session::JobSession> m_jobSession;
    QString m_currentLabel;
    bool m_currentIsControl = false;
    bool m_controlCurveTaken = false; // the pale reference curve holds the control's first run
    bool m_controlFailed = false; // the control ended without passing: no comparison to show
    QVector<storage::IterationRow> m_rows; // the current run's, rank 0
    QVector<storage::IterationRow> m_controlRows; // the control's (measured now or stored), rank 0
    QVector<IterationLine> m_lines;
    // A job's curve comes from its log's memory lines (Megatron's per-rank report after each iteration).
    bool m_jobLaunch = false;
    QVector<storage::MemoryReport> m_jobMemory, m_jobControlMemory;
    int m_jobRunsStarted = 0, m_jobRunsPlanned = 0;
    QString m_autoLauncher; // the launcher the page filled in from the recipe (replaced when it changes)

    QPushButton* m_run;
    QPushButton* m_cancel;
    QComboBox* m_runKind;
    QCheckBox* m_controlFirst;
    QCheckBox* m_reuseControl;
    QSpinBox* m_repeats;
    QWidget* m_workerBox;
    QLineEdit* m_extraArgs;
    QSpinBox* m_ranks;
    QLineEdit* m_host;
    QComboBox* m_hostKind;
    QWidget* m_jobBox;
    QComboBox* m_jobFrontEnd;
    QLineEdit* m_jobLauncher;
    QLineEdit* m_jobChoices;
    QSpinBox* m_jobIters;
    QCheckBox* m_jobSkip;
    QCheckBox* m_jobOneRank;
    QSpinBox* m_jobRank;
    QLabel* m_jobPreview;
    QWidget* m_slurmBox;
    QLineEdit* m_slurmPartition;
    QSpinBox* m_slurmNodes;
    QSpinBox* m_slurmTasks;
    QSpinBox* m_slurmGpus;
    QLineEdit* m_slurmTime;
    QLineEdit* m_slurmAccount;
    QPlainTextEdit* m_slurmExtra;
    QLineEdit* m_slurmWorkDir;
    QLineEdit* m_slurmLogin;
    QLabel* m_slurmProblem;
    QWidget* m_slurmProblemField = nullptr;
    QLabel* m_worker;
    QLabel* m_status;
    QLabel* m_control;
    QLabel* m_summary;
    QProgressBar* m_progress;
    MemoryLinesChart* m_chart;
    QPlainTextEdit* m_log;
};

} // namespace rs::ui
