// SPDX-License-Identifier: Apache-2.0
// Runs the recipe being edited on this host through rs_launch (the worker recompute-bench as a child
// process: the GUI never runs LibTorch itself), with a progress bar, a live per-iteration memory curve,
// cancel, and every event ingested into the store as it arrives. Optionally the matched [] control runs
// first and becomes the recipe run's control.
#pragma once

#include <memory>

#include <QJsonObject>
#include <QVector>
#include <QWidget>

#include "storage/store.h"

class QCheckBox;
class QLabel;
class QLineEdit;
class QSpinBox;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;

namespace rs::launch {
class LocalLauncher;
}
namespace rs::storage {
class RunIngest;
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
    QLineEdit* workerArgumentsEdit() const { return m_extraArgs; }
    QSpinBox* ranksBox() const { return m_ranks; }
    QLineEdit* hostEdit() const { return m_host; }
    QString statusText() const;
    // Ids of the runs stored by the last launch, in order (the control first when it ran).
    QVector<qint64> storedRuns() const { return m_stored; }

public slots:
    // Starts the current recipe (after its control, when asked). False with the reason in the page.
    bool start();
    void cancel();

signals:
    void runStarted();
    // A run's stream ended and its row is complete in the store.
    void runStored(qint64 runId);
    // The whole launch (control and recipe) is over.
    void launchFinished();

private:
    struct Job {
        QString label;
        QJsonObject recipe;
        int trainIters = 0;
        bool isControl = false;
    };
    bool startNext();
    void onEvent(const QJsonObject& event);
    void onFinished(bool aborted, int exitCode, const QString& reason);
    void appendLog(const QString& line);
    void setRunning(bool running);

    RecipeDocument* m_document;
    storage::Store* m_store;
    std::unique_ptr<launch::LocalLauncher> m_launcher;
    std::unique_ptr<storage::RunIngest> m_ingest;
    QVector<Job> m_queue;
    Job m_current;
    std::optional<qint64> m_controlRun;
    QVector<qint64> m_stored;
    QVector<storage::IterationRow> m_rows;

    QPushButton* m_run;
    QPushButton* m_cancel;
    QCheckBox* m_controlFirst;
    QLineEdit* m_extraArgs;
    QSpinBox* m_ranks;
    QLineEdit* m_host;
    QLabel* m_worker;
    QLabel* m_status;
    QProgressBar* m_progress;
    MemoryLinesChart* m_chart;
    QPlainTextEdit* m_log;
};

} // namespace rs::ui
