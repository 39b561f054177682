// SPDX-License-Identifier: Apache-2.0
#include "launchpage.h"

#include <QCheckBox>
#include <QDateTime>
#include <QHBoxLayout>
#include <QJsonDocument>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QVBoxLayout>

#include "charts/chartview.h"
#include "core/recipe_json.h"
#include "launch/local_launcher.h"
#include "recipedocument.h"
#include "storage/ingest.h"

namespace rs::ui {

namespace {

QJsonObject toQJson(const Recipe& r)
{
    return QJsonDocument::fromJson(QByteArray::fromStdString(recipeToJson(r).dump())).object();
}

QString gbText(std::optional<qint64> b)
{
    return b ? QString::number(double(*b) / kBytesPerGb, 'f', 3) + QStringLiteral(" GB")
             : QStringLiteral("?");
}

} // namespace

LaunchPage::LaunchPage(RecipeDocument* document, storage::Store* store, QWidget* parent)
    : QWidget(parent)
    , m_document(document)
    , m_store(store)
    , m_launcher(std::make_unique<launch::LocalLauncher>())
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    auto* top = new QHBoxLayout;
    m_run = new QPushButton(tr("Run recipe"));
    m_run->setToolTip(tr("Run the recipe being edited on this host with recompute-bench (local worker)."));
    m_cancel = new QPushButton(tr("Cancel"));
    m_cancel->setEnabled(false);
    m_controlFirst = new QCheckBox(tr("Run the matched [] control first"));
    m_controlFirst->setChecked(true);
    m_controlFirst->setToolTip(tr("The guide's measurement contract: compare every candidate with a matched "
                                  "no-recompute control (recompute_modules=[]) from the same host."));
    m_ranks = new QSpinBox;
    m_ranks->setRange(1, 64);
    m_ranks->setPrefix(tr("Ranks: "));
    m_ranks->setToolTip(tr("Worker processes on this host, as data-parallel replicas (one GPU each with "
                           "--device cuda, Gloo on CPU). Every rank's iterations and peaks are stored."));
    m_host = new QLineEdit;
    m_host->setPlaceholderText(tr("this host"));
    m_host->setToolTip(tr("Run the worker on another host over ssh: [user@]host, as your ssh config knows it "
                          "(keys, ports; no password prompts). The worker there is recompute-bench on its "
                          "PATH, or $RS_REMOTE_WORKER."));
    m_extraArgs = new QLineEdit;
    m_extraArgs->setPlaceholderText(tr("extra worker arguments, e.g. --device cuda"));
    top->addWidget(m_run);
    top->addWidget(m_cancel);
    top->addWidget(m_controlFirst);
    top->addWidget(m_ranks);
    top->addWidget(new QLabel(tr("Host:")));
    top->addWidget(m_host);
    top->addWidget(m_extraArgs, 1);
    layout->addLayout(top);
    m_worker = new QLabel;
    m_worker->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_worker->setWordWrap(true); // the list of places looked at is long
    layout->addWidget(m_worker);
    m_progress = new QProgressBar;
    m_progress->setRange(0, 1);
    m_progress->setValue(0);
    m_progress->setFormat(tr("idle"));
    layout->addWidget(m_progress);
    m_status = new QLabel(tr("Idle."));
    m_status->setWordWrap(true);
    layout->addWidget(m_status);
    auto* split = new QSplitter(Qt::Vertical);
    m_chart = new MemoryLinesChart;
    m_chart->setEmptyMessage(tr("The live per-iteration memory curve appears here while a run streams."));
    split->addWidget(m_chart);
    m_log = new QPlainTextEdit;
    m_log->setReadOnly(true);
    m_log->setMaximumBlockCount(5000);
    split->addWidget(m_log);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 1);
    layout->addWidget(split, 1);

    QStringList searched;
    const QString worker = launch::findWorker(&searched);
    m_worker->setText(worker.isEmpty() ? tr("Worker: recompute-bench not found (set RS_WORKER); looked at %1")
                                             .arg(searched.join(QStringLiteral(", ")))
                                       : tr("Worker: %1").arg(worker));

    connect(m_run, &QPushButton::clicked, this, &LaunchPage::start);
    connect(m_cancel, &QPushButton::clicked, this, &LaunchPage::cancel);
    connect(m_launcher.get(), &launch::LocalLauncher::event, this, &LaunchPage::onEvent);
    connect(m_launcher.get(), &launch::LocalLauncher::finished, this, &LaunchPage::onFinished);
    connect(m_launcher.get(), &launch::LocalLauncher::stderrText, this, [this](const QString& text) {
        for (const QString& line : text.split(QLatin1Char('\n'), Qt::SkipEmptyParts))
            appendLog(QStringLiteral("stderr: ") + line);
    });
    connect(m_launcher.get(), &launch::LocalLauncher::malformedLine, this,
        [this](const QByteArray& line, const QString& why) {
            appendLog(tr("ignored line (%1): %2").arg(why, QString::fromUtf8(line.left(200))));
        });
}

LaunchPage::~LaunchPage() = default;

bool LaunchPage::isRunning() const
{
    return m_launcher->isRunning() || !m_queue.isEmpty();
}

QString LaunchPage::statusText() const
{
    return m_status->text();
}

void LaunchPage::setRunning(bool running)
{
    m_run->setEnabled(!running);
    m_cancel->setEnabled(running);
    m_controlFirst->setEnabled(!running);
}

bool LaunchPage::start()
{
    if (isRunning())
        return false;
    if (!m_store || !m_store->isOpen()) {
        m_status->setText(tr("No measurement store is open; nothing would be kept."));
        return false;
    }
    const Recipe recipe = m_document->recipe();
    m_queue.clear();
    m_stored.clear();
    m_controlRun.reset();
    if (m_controlFirst->isChecked() && !(recipe.recompute_modules && recipe.recompute_modules->empty())) {
        const Recipe control = RecipeDocument::controlFor(recipe);
        m_queue.push_back({ tr("control []"), toQJson(control), control.train_iters, true });
    }
    m_queue.push_back({ QString::fromStdString(recipe.name.empty() ? std::string("recipe") : recipe.name),
        toQJson(recipe), recipe.train_iters, false });
    if (m_document->validation().hasErrors())
        appendLog(tr("The recipe has validation errors; the worker will refuse it (outcome 'invalid')."));
    setRunning(true);
    emit runStarted();
    return startNext();
}

bool LaunchPage::startNext()
{
    if (m_queue.isEmpty()) {
        setRunning(false);
        emit launchFinished();
        return false;
    }
    m_current = m_queue.takeFirst();
    m_rows.clear();
    m_ingest = std::make_unique<storage::RunIngest>(m_store);
    m_ingest->setProvenance(tr("recompute-studio local run"));
    if (!m_current.isControl && m_controlRun)
        m_ingest->setControl(m_controlRun);
    m_progress->setRange(0, std::max(1, m_current.trainIters));
    m_progress->setFormat(tr("%1: %v of %m iterations").arg(m_current.label));
    m_progress->setValue(0);
    m_chart->setData(QString(), {});
    m_chart->setEmptyMessage(tr("Waiting for the first iteration of %1…").arg(m_current.label));
    launch::LaunchOptions options;
    options.extraArguments = m_extraArgs->text().split(QLatin1Char(' '), Qt::SkipEmptyParts);
    options.ranks = m_ranks->value();
    options.sshHost = m_host->text().trimmed();
    options.remoteWorker = qEnvironmentVariable("RS_REMOTE_WORKER");
    QString error;
    appendLog(tr("— %1: starting").arg(m_current.label));
    if (!m_launcher->start(m_current.recipe, options, &error)) {
        m_status->setText(tr("Not started: %1").arg(error));
        appendLog(error);
        m_queue.clear();
        m_ingest.reset();
        setRunning(false);
        emit launchFinished();
        return false;
    }
    m_status->setText(tr("%1: starting %2").arg(m_current.label, m_launcher->workerPath()));
    return true;
}

void LaunchPage::cancel()
{
    m_queue.clear();
    if (m_launcher->isRunning()) {
        appendLog(tr("— cancelled by the user"));
        m_launcher->cancel();
    }
}

void LaunchPage::onEvent(const QJsonObject& e)
{
    if (m_ingest && !m_ingest->ingest(e))
        appendLog(tr("store: %1").arg(m_ingest->error()));
    const QString kind = e.value(QLatin1String("event")).toString();
    if (kind == QLatin1String("hello")) {
        appendLog(tr("worker %1, LibTorch %2, device %3, rank %4 of %5")
                      .arg(e.value(QLatin1String("worker_version")).toString(),
                          e.value(QLatin1String("libtorch_version")).toString(),
                          e.value(QLatin1String("device")).toString())
                      .arg(e.value(QLatin1String("rank")).toInt())
                      .arg(e.value(QLatin1String("world_size")).toInt()));
    } else if (kind == QLatin1String("phase")) {
        m_status->setText(
            tr("%1: phase %2").arg(m_current.label, e.value(QLatin1String("phase")).toString()));
    } else if (kind == QLatin1String("iteration")) {
        const storage::IterationRow row = storage::iterationRowFromEvent(e);
        m_rows << row;
        if (row.rank == 0)
            m_progress->setValue(std::min(row.iteration, m_progress->maximum()));
        m_status->setText(tr("%1: iteration %2 (%3), %4 ms, peak so far %5")
                              .arg(m_current.label)
                              .arg(row.iteration)
                              .arg(row.phase)
                              .arg(row.stepMs.value_or(0.0), 0, 'f', 1)
                              .arg(gbText(m_ingest ? m_ingest->currentPeakAllocated() : std::nullopt)));
        const Recipe& r = m_document->recipe();
        m_chart->setData(
            tr("Live: %1").arg(m_current.label), buildIterationLines(m_rows, 0), r.memory_target_gb);
    } else if (kind == QLatin1String("result")) {
        const QString status = e.value(QLatin1String("status")).toString();
        QString text = tr("%1: %2").arg(m_current.label, status);
        if (!e.value(QLatin1String("stage")).toString().isEmpty())
            text += tr(" in %1").arg(e.value(QLatin1String("stage")).toString());
        if (!e.value(QLatin1String("message")).toString().isEmpty())
            text += QStringLiteral(": ") + e.value(QLatin1String("message")).toString();
        appendLog(text);
        m_status->setText(text);
    }
}

void LaunchPage::onFinished(bool aborted, int exitCode, const QString& reason)
{
    if (aborted)
        appendLog(
            tr("%1 ended without a result (exit %2): %3").arg(m_current.label).arg(exitCode).arg(reason));
    qint64 runId = 0;
    if (m_ingest) {
        m_ingest->finish(aborted ? reason : QString());
        runId = m_ingest->runId();
        m_ingest.reset();
    }
    if (runId) {
        m_stored << runId;
        if (m_current.isControl)
            m_controlRun = runId;
        appendLog(tr("— %1 stored as run %2").arg(m_current.label).arg(runId));
        emit runStored(runId);
    }
    if (aborted && m_status->text().indexOf(tr("aborted")) < 0)
        m_status->setText(tr("%1: aborted (%2)").arg(m_current.label, reason));
    startNext();
}

void LaunchPage::appendLog(const QString& line)
{
    m_log->appendPlainText(QDateTime::currentDateTime().toString(QStringLiteral("HH:mm:ss ")) + line);
}

} // namespace rs::ui
