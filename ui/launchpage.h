// SPDX-License-Identifier: Apache-2.0
// Runs the recipe being edited through session::RunSession (the worker recompute-bench as a child process:
// the GUI never runs LibTorch itself), with a progress bar, a live per-iteration memory curve in GB, cancel,
// and every event stored as it arrives. The session refuses a recipe with rule errors before anything starts,
// runs the matched [] control first or reuses a stored one measured the same way (the page says which run,
// and when), and can run the candidate several times; the page then shows the spread of its figures.
#pragma once

#include <memory>

#include <QVector>
#include <QWidget>

#include "charts/chartdata.h"
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
class RunSession;
}

namespace rs::ui {

class MemoryLinesChart;
class RecipeDocument;

class LaunchPage : public QWidget {
    Q_OBJECT
public:
    LaunchPage(RecipeDocument* document, storage::Store* store, QWidget* parent = nullptr);
    ~LaunchPage() override;

    bool isRunning() const;
    QProgressBar* progressBar() const { return m_progress; }
    MemoryLinesChart* memoryChart() const { return m_chart; }
    QCheckBox* controlFirstBox() const { return m_controlFirst; }
    QCheckBox* reuseControlBox() const { return m_reuseControl; }
    QSpinBox* repeatsBox() const { return m_repeats; }
    QLineEdit* workerArgumentsEdit() const { return m_extraArgs; }
    QSpinBox* ranksBox() const { return m_ranks; }
    QLineEdit* hostEdit() const { return m_host; }
    // The host section: where the worker runs. "This host", "ssh" (hostEdit) or "Slurm" (the fields below).
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
    QString statusText() const;
    // Which control the launch compares with: "run 3 of 2026-12-01 09:40 UTC (stored, reused)".
    QString controlText() const;
    // The candidate's figures over its runs: mean and spread of step time and peak, Δ against the control.
    QString summaryText() const;
    // What the live chart was last given (the current run's lines, then the control's).
    const QVector<IterationLine>& liveLines() const { return m_lines; }
    // Ids of the runs stored by the last launch, in order (the control first when it ran).
    QVector<qint64> storedRuns() const;
    session::RunSession* session() const { return m_session.get(); }

public slots:
    // Starts the current recipe (after its control, when asked). False with the reason in the page: a
    // recipe with rule errors is refused and nothing is stored.
    bool start();
    void cancel();

signals:
    void runStarted();
    // A run's stream ended and its row is complete in the store.
    void runStored(qint64 runId);
    // The whole launch (control and recipe) is over.
    void launchFinished();

private:
    void onJobStarted(int index);
    void onEvent(const stream::Event& event);
    void onJobFinished(int index);
    void onSessionFinished();
    void redrawChart(const QString& title);
    void showSummary();
    void appendLog(const QString& line);
    void setRunning(bool running);
    void buildHostSection();
    void checkSlurmFields();

    RecipeDocument* m_document;
    storage::Store* m_store;
    std::unique_ptr<session::RunSession> m_session;
    QString m_currentLabel;
    QVector<storage::IterationRow> m_rows; // the current run's, rank 0
    QVector<storage::IterationRow> m_controlRows; // the control's (measured now or stored), rank 0
    QVector<IterationLine> m_lines;

    QPushButton* m_run;
    QPushButton* m_cancel;
    QCheckBox* m_controlFirst;
    QCheckBox* m_reuseControl;
    QSpinBox* m_repeats;
    QLineEdit* m_extraArgs;
    QSpinBox* m_ranks;
    QLineEdit* m_host;
    QComboBox* m_hostKind;
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
