// SPDX-License-Identifier: Apache-2.0
#include "launchpage.h"

#include <algorithm>

#include <QCheckBox>
#include <QComboBox>
#include <QDateTime>
#include <QDir>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QVBoxLayout>

#include "charts/chartview.h"
#include "core/stream.h"
#include "core/units.h"
#include "recipedocument.h"
#include "session/run_session.h"
#include "storage/ingest.h"

namespace rs::ui {

namespace {

QString gbText(std::optional<qint64> b)
{
    return QString::fromStdString(formatGbUnit(b, "?"));
}

// Reserved memory in its own colours (allocated keeps the charts' blue / red / green), so the two never
// read as one series.
QColor reservedColor(const QString& name)
{
    if (name.startsWith(QLatin1String("forward")))
        return QColor(0x94, 0x67, 0xbd); // purple
    if (name.startsWith(QLatin1String("backward")))
        return QColor(0xff, 0x7f, 0x0e); // orange
    return QColor(0x8c, 0x56, 0x4b); // brown
}

QVector<IterationLine> linesOf(const QVector<storage::IterationRow>& rows)
{
    QVector<IterationLine> lines = buildIterationLines(rows, 0);
    for (IterationLine& l : lines) {
        if (l.dashed)
            l.color = reservedColor(l.name);
    }
    return lines;
}

struct Spread {
    int n = 0;
    double mean = 0, min = 0, max = 0;
};
Spread spreadOf(const QVector<double>& v)
{
    Spread s;
    if (v.isEmpty())
        return s;
    s.n = int(v.size());
    s.min = *std::min_element(v.begin(), v.end());
    s.max = *std::max_element(v.begin(), v.end());
    for (double x : v)
        s.mean += x;
    s.mean /= double(v.size());
    return s;
}

} // namespace

LaunchPage::LaunchPage(RecipeDocument* document, storage::Store* store, QWidget* parent)
    : QWidget(parent)
    , m_document(document)
    , m_store(store)
    , m_session(std::make_unique<session::RunSession>(store))
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
    m_reuseControl = new QCheckBox(tr("Reuse a stored one"));
    m_reuseControl->setChecked(true);
    m_reuseControl->setToolTip(
        tr("Link a stored passing [] control of the same recipe, measured with the same "
           "worker, arguments, ranks and host, instead of running it again."));
    m_repeats = new QSpinBox;
    m_repeats->setRange(1, 20);
    m_repeats->setPrefix(tr("Repeats: "));
    m_repeats->setToolTip(
        tr("Run the [] control and the recipe this many times each (every run of the recipe "
           "against the control's first) to see how much their step time and peak vary."));
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
    top->addWidget(m_reuseControl);
    top->addWidget(m_repeats);
    top->addWidget(m_ranks);
    top->addWidget(new QLabel(tr("Host:")));
    m_hostKind = new QComboBox;
    top->addWidget(m_hostKind);
    top->addWidget(m_host);
    top->addWidget(m_extraArgs, 1);
    layout->addLayout(top);
    buildHostSection();
    layout->addWidget(m_slurmBox);
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
    m_control = new QLabel;
    m_control->setWordWrap(true);
    m_control->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_control);
    m_summary = new QLabel;
    m_summary->setWordWrap(true);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_summary);
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
    connect(m_controlFirst, &QCheckBox::toggled, m_reuseControl, &QCheckBox::setEnabled);
    session::RunSession* session = m_session.get();
    connect(session, &session::RunSession::message, this, [this](const QString& text) { appendLog(text); });
    connect(session, &session::RunSession::jobStarted, this, &LaunchPage::onJobStarted);
    connect(session, &session::RunSession::streamEvent, this, &LaunchPage::onEvent);
    connect(session, &session::RunSession::jobFinished, this, &LaunchPage::onJobFinished);
    connect(session, &session::RunSession::finished, this, &LaunchPage::onSessionFinished);
    connect(session, &session::RunSession::stderrText, this, [this](const QString& text) {
        for (const QString& line : text.split(QLatin1Char('\n'), Qt::SkipEmptyParts))
            appendLog(QStringLiteral("stderr: ") + line);
    });
    connect(session, &session::RunSession::malformedLine, this,
        [this](const QByteArray& line, const QString& why) {
            appendLog(tr("ignored line (%1): %2").arg(why, QString::fromUtf8(line.left(200))));
        });
}

LaunchPage::~LaunchPage() = default;

bool LaunchPage::isRunning() const
{
    return m_session->isRunning();
}

QString LaunchPage::statusText() const
{
    return m_status->text();
}

QString LaunchPage::controlText() const
{
    return m_control->text();
}

QString LaunchPage::summaryText() const
{
    return m_summary->text();
}

QVector<qint64> LaunchPage::storedRuns() const
{
    return m_session->storedRuns();
}

void LaunchPage::setRunning(bool running)
{
    m_run->setEnabled(!running);
    m_cancel->setEnabled(running);
    m_controlFirst->setEnabled(!running);
    m_reuseControl->setEnabled(!running && m_controlFirst->isChecked());
    m_repeats->setEnabled(!running);
}

bool LaunchPage::start()
{
    if (isRunning())
        return false;
    if (!m_store || !m_store->isOpen()) {
        m_status->setText(tr("No measurement store is open; nothing would be kept."));
        return false;
    }
    session::SessionOptions options;
    options.launch.extraArguments = m_extraArgs->text().split(QLatin1Char(' '), Qt::SkipEmptyParts);
    options.launch.ranks = m_ranks->value();
    options.launch.sshHost = hostKind() == HostKind::Ssh ? m_host->text().trimmed() : QString();
    options.launch.remoteWorker = qEnvironmentVariable("RS_REMOTE_WORKER");
    if (hostKind() == HostKind::Slurm) {
        // Checked here as at the fields: nothing is submitted with settings sbatch would not take.
        if (const QString problem = slurmProblemText(); !problem.isEmpty()) {
            m_status->setText(tr("Not started: Slurm settings: %1").arg(problem));
            return false;
        }
        options.launch.slurm = slurmSettings();
        options.launch.ranks = 1; // the job's tasks are the ranks
    }
    options.controlFirst = m_controlFirst->isChecked();
    options.reuseControl = m_reuseControl->isChecked();
    options.repeats = m_repeats->value();
    options.format = m_document->inputFormat();
    options.provenance = tr("recompute-studio local run");
    m_rows.clear();
    m_controlRows.clear();
    m_lines.clear();
    m_control->clear();
    m_summary->clear();
    if (!m_session->start({ m_document->recipe() }, options)) {
        // Refused before anything started: nothing is stored, and the page says why.
        m_status->setText(tr("Not started: %1").arg(m_session->refusal()));
        appendLog(m_session->refusal());
        m_chart->setData(QString(), {});
        m_chart->setEmptyMessage(tr("Not started: fix the recipe's rule errors (Editor, findings) first."));
        m_progress->setRange(0, 1);
        m_progress->setValue(0);
        m_progress->setFormat(tr("not started"));
        return false;
    }
    if (m_session->controlReused() && m_session->controlRunId()) {
        const qint64 id = *m_session->controlRunId();
        m_control->setText(
            tr("Control []: run %1 of %2 (stored, reused: same recipe, same launch settings)")
                .arg(id)
                .arg(m_session->reusedControlDate().toString(QStringLiteral("yyyy-MM-dd HH:mm 'UTC'"))));
        for (const storage::IterationRow& row : m_store->iterations(id, 0))
            m_controlRows << row;
    } else if (options.controlFirst) {
        m_control->setText(tr("Control []: measured first in this launch."));
    } else {
        m_control->setText(tr("Control []: the latest stored matched one, if any, is linked."));
    }
    m_chart->setData(QString(), {});
    m_chart->setEmptyMessage(tr("Starting…"));
    setRunning(true);
    emit runStarted();
    return true;
}

void LaunchPage::cancel()
{
    if (m_session->isRunning()) {
        appendLog(tr("— cancelled by the user"));
        m_session->cancel();
    }
}

void LaunchPage::onJobStarted(int index)
{
    const session::SessionJob& job = m_session->jobs()[index];
    m_currentLabel = job.label;
    if (job.repeats > 1)
        m_currentLabel += tr(" (run %1 of %2)").arg(job.repeat).arg(job.repeats);
    m_rows.clear();
    m_progress->setRange(0, std::max(1, job.recipe.train_iters));
    m_progress->setFormat(tr("%1: %v of %m iterations").arg(m_currentLabel));
    m_progress->setValue(0);
    if (m_controlRows.isEmpty()) {
        m_chart->setData(QString(), {});
        m_chart->setEmptyMessage(tr("Waiting for the first iteration of %1…").arg(m_currentLabel));
    } else {
        redrawChart(tr("Live: %1 (the [] control's curve pale)").arg(m_currentLabel));
    }
    appendLog(tr("— %1: starting").arg(m_currentLabel));
    m_status->setText(tr("%1: starting").arg(m_currentLabel));
}

void LaunchPage::redrawChart(const QString& title)
{
    m_lines = linesOf(m_rows);
    const session::SessionJob* job = m_session->currentJob();
    if (!(job && job->isControl)) {
        // The control's curve stays while the candidate runs: its allocated lines, pale.
        for (IterationLine l : linesOf(m_controlRows)) {
            if (l.dashed)
                continue;
            l.name = tr("[] %1").arg(l.name);
            l.color = l.color.lighter(170);
            m_lines << l;
        }
    }
    m_chart->setData(title, m_lines, m_document->recipe().memory_target_gb);
}

void LaunchPage::onEvent(const stream::Event& e)
{
    // The launcher decoded the event (core/stream.h); lines that did not read came as malformedLine.
    if (const auto* it = std::get_if<stream::Iteration>(&e)) {
        const storage::IterationRow row = storage::iterationRowFromEvent(*it);
        if (row.rank != 0)
            return;
        m_rows << row;
        const session::SessionJob* job = m_session->currentJob();
        if (job && job->isControl && job->repeat == 1) // the pale reference curve: the control's first run
            m_controlRows << row;
        m_progress->setValue(std::min(row.iteration, m_progress->maximum()));
        m_status->setText(tr("%1: iteration %2 (%3), %4 ms, peak so far %5")
                              .arg(m_currentLabel)
                              .arg(row.iteration)
                              .arg(row.phase)
                              .arg(row.stepMs.value_or(0.0), 0, 'f', 1)
                              .arg(gbText(m_session->currentPeakAllocated())));
        redrawChart(tr("Live: %1").arg(m_currentLabel));
    } else if (const auto* h = std::get_if<stream::Hello>(&e)) {
        appendLog(tr("worker %1, LibTorch %2, device %3, rank %4 of %5")
                      .arg(QString::fromStdString(h->worker_version),
                          QString::fromStdString(h->libtorch_version), QString::fromStdString(h->device))
                      .arg(h->rank)
                      .arg(h->world_size));
    } else if (const auto* p = std::get_if<stream::Phase>(&e)) {
        m_status->setText(tr("%1: phase %2").arg(m_currentLabel, QString::fromStdString(p->phase)));
    } else if (const auto* r = std::get_if<stream::Result>(&e)) {
        QString line = tr("%1: %2").arg(m_currentLabel, QString::fromStdString(r->status));
        if (r->stage && !r->stage->empty())
            line += tr(" in %1").arg(QString::fromStdString(*r->stage));
        if (!r->message.empty())
            line += QStringLiteral(": ") + QString::fromStdString(r->message);
        appendLog(line);
        m_status->setText(line);
    }
}

void LaunchPage::onJobFinished(int index)
{
    const session::SessionJob& job = m_session->jobs()[index];
    if (job.aborted) {
        appendLog(tr("%1 ended without a result: %2").arg(m_currentLabel, job.reason));
        m_status->setText(tr("%1: aborted (%2)").arg(m_currentLabel, job.reason));
    }
    if (job.runId) {
        appendLog(tr("— %1 stored as run %2").arg(m_currentLabel).arg(job.runId));
        if (job.isControl && !job.reused && job.runId == m_session->controlRunId())
            m_control->setText(tr("Control []: run %1, measured in this launch.").arg(job.runId));
        emit runStored(job.runId);
    }
}

void LaunchPage::onSessionFinished()
{
    setRunning(false);
    showSummary();
    emit launchFinished();
}

void LaunchPage::showSummary()
{
    const QVector<qint64> runs = m_session->candidateRuns();
    const std::optional<qint64> control = m_session->controlRunId();
    if (runs.isEmpty() || !m_store)
        return;
    QVector<double> ms, gb, dTime, dAlloc;
    QString label;
    const QVector<storage::ComparisonRow> rows
        = control ? m_store->compare(*control, runs) : QVector<storage::ComparisonRow> {};
    for (qint64 id : runs) {
        const auto r = m_store->run(id);
        if (!r || r->outcome != storage::outcome::Pass)
            continue;
        label = r->moduleSetLabel();
        if (r->steadyStepMs)
            ms << *r->steadyStepMs;
        if (r->peakAllocated)
            gb << bytesToGb(*r->peakAllocated);
        for (const storage::ComparisonRow& row : rows) {
            if (row.run.id != id || row.isControl || !row.match.matched)
                continue;
            if (row.timeVsControlPct)
                dTime << *row.timeVsControlPct;
            if (row.allocatedVsControlPct)
                dAlloc << *row.allocatedVsControlPct;
        }
    }
    if (ms.isEmpty() && gb.isEmpty()) {
        m_summary->setText(tr("No run of the recipe passed: nothing to compare."));
        return;
    }
    auto range = [](const Spread& s, int decimals, const QString& unit) {
        QString t = QStringLiteral("%1%2").arg(s.mean, 0, 'f', decimals).arg(unit);
        if (s.n > 1)
            t += QStringLiteral(" (%1–%2 over %3 runs)")
                     .arg(s.min, 0, 'f', decimals)
                     .arg(s.max, 0, 'f', decimals)
                     .arg(s.n);
        return t;
    };
    auto pct = [](const Spread& s) {
        QString t = QString::asprintf("%+.2f%%", s.mean);
        if (s.n > 1)
            t += QString::asprintf(" (%+.2f%% to %+.2f%%)", s.min, s.max);
        return t;
    };
    QString text = tr("[%1]: steady step %2, peak allocated %3")
                       .arg(label, range(spreadOf(ms), 2, QStringLiteral(" ms")),
                           range(spreadOf(gb), 3, QStringLiteral(" GB")));
    if (control) {
        text += tr("; against the [] control (run %1): ").arg(*control);
        text += dTime.isEmpty() && dAlloc.isEmpty()
            ? tr("not compared (not matched, or the control has no figures)")
            : tr("Δ time %1, Δ allocated %2").arg(pct(spreadOf(dTime)), pct(spreadOf(dAlloc)));
    }
    m_summary->setText(text);
}

void LaunchPage::buildHostSection()
{
    m_hostKind->addItem(tr("This host"), int(HostKind::Local));
    m_hostKind->addItem(tr("ssh"), int(HostKind::Ssh));
    m_hostKind->addItem(tr("Slurm"), int(HostKind::Slurm));
    m_hostKind->setToolTip(tr("Where the worker runs: as child processes here, on another host over ssh, or "
                              "as a Slurm batch job (submitted here or on a login host)."));
    m_slurmBox = new QWidget;
    auto* grid = new QGridLayout(m_slurmBox);
    grid->setContentsMargins(0, 0, 0, 0);
    const auto line = [](const QString& placeholder, const QString& tip) {
        auto* e = new QLineEdit;
        e->setPlaceholderText(placeholder);
        e->setToolTip(tip);
        return e;
    };
    const auto spin = [](int low, int high, int value, const QString& tip) {
        auto* b = new QSpinBox;
        b->setRange(low, high);
        b->setValue(value);
        b->setToolTip(tip);
        return b;
    };
    m_slurmPartition = line(tr("default partition"), tr("sbatch --partition; empty: the cluster's default"));
    m_slurmNodes = spin(1, 100000, 1, tr("sbatch --nodes"));
    m_slurmTasks = spin(1, 1024, 1,
        tr("sbatch --ntasks-per-node: worker ranks per node (one GPU each with --device cuda). The job's "
           "ranks are nodes × tasks per node."));
    m_slurmGpus = spin(0, 1024, 0, tr("sbatch --gpus-per-node; 0: no GPU line"));
    m_slurmTime = line(tr("partition default"), tr("sbatch --time: M, M:S, H:M:S, D-H, D-H:M or D-H:M:S"));
    m_slurmAccount = line(tr("default account"), tr("sbatch --account"));
    m_slurmWorkDir = line(tr("a folder the compute nodes see"),
        tr("Where the batch script, the recipe and every task's output go: a folder the compute nodes see "
           "(a shared file system), on the login host when one is given."));
    m_slurmWorkDir->setText(QDir::homePath() + QStringLiteral("/recompute-slurm"));
    m_slurmLogin = line(tr("this host"),
        tr("A login host: sbatch, squeue and scancel run there over ssh ([user@]host, as your ssh config "
           "knows it; no password prompts). The worker there is recompute-bench on the nodes' PATH, or "
           "$RS_REMOTE_WORKER."));
    m_slurmExtra = new QPlainTextEdit;
    m_slurmExtra->setPlaceholderText(tr("extra lines, each #SBATCH --…"));
    m_slurmExtra->setToolTip(tr("More #SBATCH lines, one a line (e.g. #SBATCH --exclusive)."));
    m_slurmExtra->setTabChangesFocus(true);
    m_slurmExtra->setFixedHeight(m_slurmPartition->sizeHint().height() * 2);
    m_slurmProblem = new QLabel;
    m_slurmProblem->setWordWrap(true);
    m_slurmProblem->setStyleSheet(QStringLiteral("color: #c0392b;"));
    const QList<std::pair<QString, QWidget*>> first
        = { { tr("Partition:"), m_slurmPartition }, { tr("Nodes:"), m_slurmNodes },
              { tr("Tasks per node:"), m_slurmTasks }, { tr("GPUs per node:"), m_slurmGpus },
              { tr("Time:"), m_slurmTime }, { tr("Account:"), m_slurmAccount } };
    int column = 0;
    for (const auto& [label, field] : first) {
        grid->addWidget(new QLabel(label), 0, column++);
        grid->addWidget(field, 0, column++);
    }
    grid->addWidget(new QLabel(tr("Work folder:")), 1, 0);
    grid->addWidget(m_slurmWorkDir, 1, 1, 1, 3);
    grid->addWidget(new QLabel(tr("Login host:")), 1, 4);
    grid->addWidget(m_slurmLogin, 1, 5, 1, 3);
    grid->addWidget(new QLabel(tr("#SBATCH:")), 1, 8);
    grid->addWidget(m_slurmExtra, 1, 9, 1, 3);
    grid->addWidget(m_slurmProblem, 2, 0, 1, 12);
    for (QLineEdit* e : { m_slurmPartition, m_slurmTime, m_slurmAccount, m_slurmWorkDir, m_slurmLogin })
        connect(e, &QLineEdit::textChanged, this, &LaunchPage::checkSlurmFields);
    for (QSpinBox* b : { m_slurmNodes, m_slurmTasks, m_slurmGpus })
        connect(b, &QSpinBox::valueChanged, this, &LaunchPage::checkSlurmFields);
    connect(m_slurmExtra, &QPlainTextEdit::textChanged, this, &LaunchPage::checkSlurmFields);
    connect(m_hostKind, &QComboBox::currentIndexChanged, this, [this] {
        const HostKind kind = hostKind();
        m_host->setVisible(kind == HostKind::Ssh);
        m_slurmBox->setVisible(kind == HostKind::Slurm);
        // A job's ranks are its tasks (nodes × tasks per node).
        m_ranks->setEnabled(kind != HostKind::Slurm);
        checkSlurmFields();
    });
    // A host typed in (the ssh host kind's field) means ssh.
    connect(m_host, &QLineEdit::textChanged, this, [this](const QString& text) {
        if (!text.trimmed().isEmpty() && hostKind() == HostKind::Local)
            setHostKind(HostKind::Ssh);
    });
    m_host->setVisible(false);
    m_slurmBox->setVisible(false);
    // While a job waits in the queue, the status says why (the log has every note).
    connect(m_session->launcher(), &launch::WorkerLauncher::note, this, [this](const QString& text) {
        if (m_rows.isEmpty() && isRunning())
            m_status->setText(tr("%1: %2").arg(m_currentLabel, text));
    });
    checkSlurmFields();
}

LaunchPage::HostKind LaunchPage::hostKind() const
{
    return HostKind(m_hostKind->currentData().toInt());
}

void LaunchPage::setHostKind(HostKind kind)
{
    m_hostKind->setCurrentIndex(m_hostKind->findData(int(kind)));
}

launch::SlurmSettings LaunchPage::slurmSettings() const
{
    launch::SlurmSettings s;
    s.partition = m_slurmPartition->text().trimmed();
    s.nodes = m_slurmNodes->value();
    s.tasksPerNode = m_slurmTasks->value();
    s.gpusPerNode = m_slurmGpus->value();
    s.timeLimit = m_slurmTime->text().trimmed();
    s.account = m_slurmAccount->text().trimmed();
    for (const QString& l : m_slurmExtra->toPlainText().split(QLatin1Char('\n'), Qt::SkipEmptyParts)) {
        if (!l.trimmed().isEmpty())
            s.extraSbatchLines << l.trimmed();
    }
    s.workDir = m_slurmWorkDir->text().trimmed();
    s.loginHost = m_slurmLogin->text().trimmed();
    return s;
}

QString LaunchPage::slurmProblemText() const
{
    return launch::checkSlurmSettings(slurmSettings());
}

void LaunchPage::checkSlurmFields()
{
    const QString problem = hostKind() == HostKind::Slurm ? slurmProblemText() : QString();
    m_slurmProblem->setText(problem);
    m_slurmProblem->setVisible(!problem.isEmpty());
    // The message starts with the field it is about.
    const QList<std::pair<QString, QWidget*>> fields = { { QStringLiteral("partition:"), m_slurmPartition },
        { QStringLiteral("nodes:"), m_slurmNodes }, { QStringLiteral("tasks per node:"), m_slurmTasks },
        { QStringLiteral("GPUs per node:"), m_slurmGpus }, { QStringLiteral("time limit:"), m_slurmTime },
        { QStringLiteral("account:"), m_slurmAccount },
        { QStringLiteral("extra #SBATCH line"), m_slurmExtra },
        { QStringLiteral("work folder:"), m_slurmWorkDir }, { QStringLiteral("login host:"), m_slurmLogin } };
    if (m_slurmProblemField) {
        m_slurmProblemField->setStyleSheet(QString());
        m_slurmProblemField = nullptr;
    }
    for (const auto& [prefix, field] : fields) {
        if (!problem.isEmpty() && problem.startsWith(prefix)) {
            m_slurmProblemField = field;
            field->setStyleSheet(QStringLiteral("border: 1px solid #c0392b;"));
            break;
        }
    }
}

void LaunchPage::appendLog(const QString& line)
{
    m_log->appendPlainText(QDateTime::currentDateTime().toString(QStringLiteral("HH:mm:ss ")) + line);
}

} // namespace rs::ui
