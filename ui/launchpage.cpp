// SPDX-License-Identifier: Apache-2.0
#include "launchpage.h"

#include <algorithm>

#include <QCheckBox>
#include <QComboBox>
#include <QDateTime>
#include <QDir>
#include <QFontDatabase>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QSplitter>
#include <QVBoxLayout>

#include "charts/chartview.h"
#include "core/comparison.h"
#include "core/megatron_flags.h"
#include "core/model_shape.h"
#include "core/rules.h"
#include "core/step_stats.h"
#include "core/stream.h"
#include "core/units.h"
#include "recipedocument.h"
#include "session/job_run.h"
#include "session/job_session.h"
#include "session/run_session.h"
#include "shellwords.h"
#include "storage/ingest.h"
#include "storage/significance.h"

namespace rs::ui {

namespace {

QString gbText(std::optional<qint64> b)
{
    // Three significant figures at least: a tiny CPU run's 0.0483 GB, not 0.048.
    return b ? QString::fromStdString(formatGbPrecise(*b)) + QStringLiteral(" GB") : QStringLiteral("?");
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

QString joinWords(const std::vector<std::string>& words)
{
    QStringList in;
    for (const std::string& w : words)
        in << QString::fromStdString(w);
    const QStringList shown = session::commandForDisplay(in);
    QStringList out;
    for (qsizetype i = 0; i < shown.size(); ++i)
        out << (shown[i] != in[i] ? shown[i] : quoteShellWord(shown[i])); // a named bootstrap stays bare
    return out.join(QLatin1Char(' '));
}

// What the job fields say, read: the recipe the command carries, its front end, the Bridge launcher and the
// choices; `error` names the field that does not read.
struct JobInput {
    Recipe base;
    InputFormat format = InputFormat::MegatronFlags;
    std::vector<std::string> bridgeLauncher;
    std::vector<RecomputeChoice> choices;
    QString error;
};

JobInput readJobFields(
    const Recipe& recipe, InputFormat format, const QString& launcher, const QString& choices)
{
    JobInput in;
    in.base = recipe;
    in.format = format;
    QStringList words;
    QString error;
    if (!splitShellWords(launcher, &words, &error)) {
        in.error = QObject::tr("launcher: %1").arg(error);
        return in;
    }
    std::vector<std::string> launch;
    for (const QString& w : words)
        launch.push_back(w.toStdString());
    if (format == InputFormat::MegatronFlags)
        in.base.launch_command = launch; // empty: jobCommand says what is missing
    else
        in.bridgeLauncher = launch;
    for (const QString& c : choices.split(QRegularExpression(QStringLiteral("\\s+")), Qt::SkipEmptyParts)) {
        try {
            in.choices.push_back(parseRecomputeChoice(c.toStdString()));
        } catch (const std::exception& e) {
            in.error = QObject::tr("recompute choices: %1").arg(QString::fromUtf8(e.what()));
            return in;
        }
        // A label the profile does not know would only be skipped by the sweep: said here, before anything.
        const auto& allowed = allowedRecomputeModules(recipe.profile);
        for (const std::string& label : in.choices.back().modules) {
            if (std::find(allowed.begin(), allowed.end(), label) != allowed.end())
                continue;
            const auto near = suggestedRecomputeLabel(label, recipe.profile);
            in.error
                = QObject::tr("recompute choices: '%1' is not a recompute label at %2%3")
                      .arg(QString::fromStdString(label), QString::fromLatin1(profileName(recipe.profile)),
                          near ? QObject::tr("; did you mean '%1'?").arg(QString::fromStdString(*near))
                               : QString());
            return in;
        }
    }
    if (in.choices.empty()) {
        // The recipe's own choice; a recipe that is its own control: one run per label with an effect on
        // this model, as `recompute sweep` without --modules.
        if (!isControlRecipe(recipe) && recipe.recompute_granularity) {
            in.choices.push_back(recipeChoice(recipe));
        } else {
            const Recipe control = controlRecipe(recipe);
            for (const auto& l : allowedRecomputeModules(recipe.profile)) {
                if (recomputeLabelEffect(control, l).has_effect)
                    in.choices.push_back(parseRecomputeChoice(l));
            }
        }
    }
    return in;
}

} // namespace

LaunchPage::LaunchPage(RecipeDocument* document, storage::Store* store, QWidget* parent)
    : QWidget(parent)
    , m_document(document)
    , m_store(store)
    , m_session(std::make_unique<session::RunSession>(store))
    , m_jobSession(std::make_unique<session::JobSession>(store))
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    auto* top = new QHBoxLayout;
    m_run = new QPushButton(tr("Run"));
    m_run->setToolTip(
        tr("Run the [] control and the recipe (or your command once per recompute choice) where "
           "the Host box says."));
    m_cancel = new QPushButton(tr("Cancel"));
    m_cancel->setEnabled(false);
    m_runKind = new QComboBox;
    m_runKind->addItem(tr("the worker on this recipe"), int(RunKind::Worker));
    m_runKind->addItem(tr("my training command, per recompute choice"), int(RunKind::Job));
    m_runKind->setToolTip(
        tr("The worker (recompute-bench) measures one rank of the recipe's job; your own Megatron-LM or "
           "Bridge command runs the real job once per recompute choice, its log imported as it streams."));
    m_controlFirst = new QCheckBox(tr("[] control first"));
    m_controlFirst->setChecked(true);
    m_controlFirst->setToolTip(tr("The guide's measurement contract: compare every candidate with a matched "
                                  "no-recompute control (recompute_modules=[]) from the same host."));
    m_reuseControl = new QCheckBox(tr("Reuse stored runs"));
    m_reuseControl->setChecked(true);
    m_reuseControl->setToolTip(tr(
        "Link a stored passing run of the same recipe, measured the same way (worker, arguments, ranks and "
        "host; or the same command and host for your own job), instead of running it again."));
    m_repeats = new QSpinBox;
    m_repeats->setRange(1, 20);
    m_repeats->setPrefix(tr("Repeats: "));
    m_repeats->setToolTip(
        tr("Run the [] control and every choice this many times each (every run against the control's first) "
           "to see how much their step time and peak vary."));
    m_host = new QLineEdit;
    m_host->setPlaceholderText(tr("user@host"));
    m_host->setToolTip(tr("Run on another host over ssh: [user@]host, as your ssh config knows it (keys, "
                          "ports; no password prompts). The worker there is recompute-bench on its PATH, or "
                          "$RS_REMOTE_WORKER; your own command runs there as you wrote it."));
    m_hostKind = new QComboBox;
    top->addWidget(m_run);
    top->addWidget(m_cancel);
    top->addWidget(new QLabel(tr("Run:")));
    top->addWidget(m_runKind);
    top->addWidget(new QLabel(tr("on")));
    top->addWidget(m_hostKind);
    top->addWidget(m_host, 1);
    top->addStretch(1); // with the host box hidden, the room stays here, not between a label and its box
    top->addWidget(m_controlFirst);
    top->addWidget(m_reuseControl);
    top->addWidget(m_repeats);
    layout->addLayout(top);

    // The worker's own settings.
    m_workerBox = new QWidget;
    auto* workerRow = new QHBoxLayout(m_workerBox);
    workerRow->setContentsMargins(0, 0, 0, 0);
    m_ranks = new QSpinBox;
    m_ranks->setRange(1, 64);
    m_ranks->setPrefix(tr("Ranks: "));
    m_ranks->setToolTip(tr("Worker processes on this host, as data-parallel replicas (one GPU each with "
                           "--device cuda, Gloo on CPU). Every rank's iterations and peaks are stored."));
    m_extraArgs = new QLineEdit;
    m_extraArgs->setPlaceholderText(tr("extra worker arguments, e.g. --device cuda"));
    m_worker = new QLabel;
    m_worker->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_worker->setWordWrap(true); // the list of places looked at is long
    workerRow->addWidget(m_ranks);
    workerRow->addWidget(m_extraArgs, 1);
    workerRow->addWidget(m_worker, 2);
    layout->addWidget(m_workerBox);
    buildJobSection();
    layout->addWidget(m_jobBox);
    buildHostSection();
    layout->addWidget(m_slurmBox);

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
    m_summary->setToolTip(QString::fromUtf8(kStepDeltaDefinition));
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
    connect(m_controlFirst, &QCheckBox::toggled, this, [this] { setRunning(isRunning()); });
    connect(m_runKind, &QComboBox::currentIndexChanged, this, &LaunchPage::updateRunKind);
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
    connectJobSession();
    connect(m_document, &RecipeDocument::recipeChanged, this, &LaunchPage::updateJobPreview);
    updateRunKind();
}

LaunchPage::~LaunchPage() = default;

void LaunchPage::buildJobSection()
{
    m_jobBox = new QWidget;
    auto* grid = new QGridLayout(m_jobBox);
    grid->setContentsMargins(0, 0, 0, 0);
    m_jobFrontEnd = new QComboBox;
    m_jobFrontEnd->addItem(tr("Megatron-LM flags"), int(InputFormat::MegatronFlags));
    m_jobFrontEnd->addItem(tr("Megatron Bridge overrides"), int(InputFormat::BridgeOverrides));
    m_jobFrontEnd->setToolTip(
        tr("How your command takes the recipe: Megatron-LM's flags after the script, or "
           "Bridge's Hydra overrides after its launcher."));
    m_jobLauncher = new QLineEdit;
    m_jobLauncher->setToolTip(
        tr("The words before the recipe: your launcher and script (torchrun --nproc-per-node 8 "
           "pretrain_gpt.py, or torchrun --nproc-per-node 8 scripts/training/run_recipe.py --recipe NAME). "
           "Each recompute choice, --train-iters / train.train_iters and per-iteration logging are written "
           "after them; every other word is yours."));
    m_jobChoices = new QLineEdit;
    m_jobChoices->setToolTip(tr(
        "The recompute choices to run after the [] control, separated by spaces: moe_act, "
        "layernorm,moe_act (a set), full:uniform:1, full:block:2. Empty: the recipe's own choice, or one run "
        "per label with an effect on this model when the recipe is its own control."));
    m_jobIters = new QSpinBox;
    m_jobIters->setRange(2, 100000);
    m_jobIters->setValue(10);
    m_jobIters->setPrefix(tr("Iterations: "));
    m_jobIters->setToolTip(
        tr("--train-iters / train.train_iters of each short run: warm-up, optimizer-state init and steady."));
    m_jobSkip = new QCheckBox(tr("Skip choices the estimate puts over the target"));
    m_jobSkip->setChecked(true);
    m_jobSkip->setToolTip(tr("With a memory target in the recipe, a choice whose estimate is over it by more "
                             "than the estimator's error is not run (said in the log)."));
    m_jobOneRank = new QCheckBox(tr("One rank on this GPU"));
    m_jobOneRank->setToolTip(tr(
        "Run one rank of the job's layout on this one GPU: Megatron-LM's --fake-process-group builds and "
        "trains that rank's own share of the model with the real allocator, every collective skipped (NCCL's "
        "buffers and the communication time are not in it). An expert-parallel MoE rank has the skipped "
        "collectives filled as if every rank held its tensors, so it receives its own routing's share from "
        "each rank. Megatron-LM only."));
    m_jobRank = new QSpinBox;
    m_jobRank->setRange(-1, 1 << 20);
    m_jobRank->setValue(-1);
    m_jobRank->setPrefix(tr("rank "));
    m_jobRank->setSpecialValueText(tr("the hottest rank"));
    m_jobRank->setToolTip(
        tr("The layout's global rank to run; the hottest: the one the estimate puts highest."));
    m_jobRank->setEnabled(false);
    connect(m_jobOneRank, &QCheckBox::toggled, m_jobRank, &QSpinBox::setEnabled);
    connect(m_jobOneRank, &QCheckBox::toggled, this, &LaunchPage::updateJobPreview);
    connect(m_jobRank, &QSpinBox::valueChanged, this, &LaunchPage::updateJobPreview);
    m_jobPreview = new QLabel;
    m_jobPreview->setWordWrap(true);
    m_jobPreview->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_jobPreview->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_jobPreview->setStyleSheet(QStringLiteral("color: #404040;"));
    grid->addWidget(m_jobFrontEnd, 0, 0);
    grid->addWidget(new QLabel(tr("Launcher:")), 0, 1);
    grid->addWidget(m_jobLauncher, 0, 2);
    grid->addWidget(m_jobOneRank, 0, 3);
    grid->addWidget(m_jobRank, 0, 4);
    grid->addWidget(new QLabel(tr("Choices:")), 1, 1);
    grid->addWidget(m_jobChoices, 1, 2);
    grid->addWidget(m_jobIters, 1, 3);
    grid->addWidget(m_jobSkip, 1, 4);
    grid->addWidget(m_jobPreview, 2, 0, 1, 5);
    grid->setColumnStretch(2, 1);
    connect(m_jobFrontEnd, &QComboBox::currentIndexChanged, this, [this] {
        // The launcher the front end needs (the recipe's own Megatron-LM launch words, or Bridge's script),
        // unless the user wrote one.
        if (m_jobLauncher->text() == m_autoLauncher)
            m_jobLauncher->clear();
        updateJobPreview();
    });
    for (QLineEdit* e : { m_jobLauncher, m_jobChoices })
        connect(e, &QLineEdit::textChanged, this, &LaunchPage::updateJobPreview);
    connect(m_jobIters, &QSpinBox::valueChanged, this, &LaunchPage::updateJobPreview);
}

LaunchPage::RunKind LaunchPage::runKind() const
{
    return RunKind(m_runKind->currentData().toInt());
}

void LaunchPage::setRunKind(RunKind kind)
{
    m_runKind->setCurrentIndex(m_runKind->findData(int(kind)));
}

void LaunchPage::updateRunKind()
{
    const bool job = runKind() == RunKind::Job;
    m_workerBox->setVisible(!job);
    m_jobBox->setVisible(job);
    if (job) {
        // The recipe's own front end; a JSON recipe runs as Megatron-LM flags.
        const int i = m_jobFrontEnd->findData(
            int(m_document->inputFormat() == InputFormat::BridgeOverrides ? InputFormat::BridgeOverrides
                                                                          : InputFormat::MegatronFlags));
        if (m_jobLauncher->text() == m_autoLauncher && i != m_jobFrontEnd->currentIndex()) {
            const QSignalBlocker block(m_jobFrontEnd);
            m_jobFrontEnd->setCurrentIndex(i);
            m_jobLauncher->clear();
        }
        updateJobPreview();
    }
    setRunning(isRunning());
}

session::OneRankOfLayout LaunchPage::oneRank() const
{
    session::OneRankOfLayout o;
    if (m_jobRank->value() >= 0)
        o.rank = m_jobRank->value();
    return o;
}

void LaunchPage::setJobCommand(InputFormat format, const QString& launcher)
{
    {
        const QSignalBlocker block(m_jobFrontEnd);
        m_jobFrontEnd->setCurrentIndex(m_jobFrontEnd->findData(
            int(format == InputFormat::BridgeOverrides ? InputFormat::BridgeOverrides
                                                       : InputFormat::MegatronFlags)));
    }
    m_jobLauncher->setText(launcher); // the user's own words: kept when the recipe changes
    updateJobPreview();
}

QString LaunchPage::jobCommandPreview() const
{
    return m_jobPreview->text();
}

void LaunchPage::updateJobPreview()
{
    if (runKind() != RunKind::Job)
        return;
    const Recipe& recipe = m_document->recipe();
    const auto format = InputFormat(m_jobFrontEnd->currentData().toInt());
    if (m_jobLauncher->text().trimmed().isEmpty() || m_jobLauncher->text() == m_autoLauncher) {
        // Filled from the recipe: its own launch words, or Bridge's recipe script for a recipe by name.
        const QSignalBlocker block(m_jobLauncher);
        if (format == InputFormat::MegatronFlags) {
            std::vector<std::string> words = recipe.launch_command;
            if (words.empty()) {
                // Megatron-LM's writer's own launcher: torchrun --nproc-per-node N pretrain_gpt.py.
                const std::vector<std::string> all = recipeToMegatronCommand(recipe);
                words.assign(
                    all.begin(), all.begin() + std::min<std::ptrdiff_t>(4, std::ptrdiff_t(all.size())));
            }
            m_jobLauncher->setText(joinWords(words));
        } else {
            const ParallelSizes p = parallelSizes(recipe);
            m_jobLauncher->setText(
                QStringLiteral("torchrun --nproc-per-node %1 scripts/training/run_recipe.py")
                    .arg(std::min(p.world, 8))
                + (recipe.name.empty() ? QString()
                                       : QStringLiteral(" --recipe ") + QString::fromStdString(recipe.name)));
        }
        m_autoLauncher = m_jobLauncher->text(); // the user's own edit is never replaced
    }
    const JobInput in = readJobFields(recipe, format, m_jobLauncher->text(), m_jobChoices->text());
    QString text;
    if (!in.error.isEmpty()) {
        text = tr("Not runnable yet: %1").arg(in.error);
    } else {
        try {
            QStringList labels;
            for (const RecomputeChoice& c : in.choices)
                labels << QString::fromStdString(c.label());
            session::ShortRun run;
            run.trainIters = m_jobIters->value();
            QString rank;
            if (m_jobOneRank->isChecked()) {
                run.oneRank = oneRank();
                const session::LayoutRankChoice r
                    = session::layoutRankChoice(in.base, in.format, *run.oneRank);
                rank = tr("; each run rank %1 of %2 (stage %3)%4")
                           .arg(r.rank)
                           .arg(r.world)
                           .arg(r.stage)
                           .arg(r.hottest ? tr(", the hottest") : QString());
            }
            text = tr("[] control, then %1%2:\n$ %3")
                       .arg(labels.join(QStringLiteral(", ")), rank,
                           joinWords(session::jobCommand(
                               in.base, in.format, std::nullopt, run, in.bridgeLauncher)));
        } catch (const std::exception& e) {
            text = tr("Not runnable yet: %1").arg(QString::fromUtf8(e.what()));
        }
    }
    m_jobPreview->setText(text);
}

bool LaunchPage::isRunning() const
{
    return m_session->isRunning() || m_jobSession->isRunning();
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
    if (runKind() == RunKind::Job) {
        QVector<qint64> out;
        if (m_jobSession->controlRunId())
            out << *m_jobSession->controlRunId();
        out << m_jobSession->moreControls() << m_jobSession->candidateRuns();
        return out;
    }
    return m_session->storedRuns();
}

QList<QWidget*> LaunchPage::settingsWidgets() const
{
    return { m_runKind, m_hostKind, m_host, m_controlFirst, m_reuseControl, m_repeats, m_workerBox, m_jobBox,
        m_slurmBox };
}

void LaunchPage::setRunning(bool running)
{
    m_run->setEnabled(!running);
    m_cancel->setEnabled(running);
    // Nothing a run reads may change under it: what runs, where, how often.
    for (QWidget* w : settingsWidgets())
        w->setEnabled(!running);
    // A job sweep always runs (or reuses) its [] control first.
    const bool job = runKind() == RunKind::Job;
    if (job)
        m_controlFirst->setChecked(true);
    m_controlFirst->setEnabled(!running && !job);
    m_reuseControl->setEnabled(!running && (job || m_controlFirst->isChecked()));
}

void LaunchPage::beginRun(const QString& label, bool isControl, int maxIterations)
{
    m_currentLabel = label;
    m_currentIsControl = isControl;
    m_rows.clear();
    m_progress->setRange(0, std::max(1, maxIterations));
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

bool LaunchPage::start()
{
    if (isRunning())
        return false;
    if (!m_store || !m_store->isOpen()) {
        m_status->setText(tr("No measurement store is open; nothing would be kept."));
        return false;
    }
    if (hostKind() == HostKind::Slurm) {
        // Checked here as at the fields: nothing is submitted with settings sbatch would not take.
        if (const QString problem = slurmProblemText(); !problem.isEmpty()) {
            m_status->setText(tr("Not started: Slurm settings: %1").arg(problem));
            return false;
        }
    }
    if (hostKind() == HostKind::Ssh && m_host->text().trimmed().isEmpty()) {
        m_status->setText(tr("Not started: host: give the ssh host ([user@]host) or run on this host."));
        m_host->setFocus();
        return false;
    }
    m_rows.clear();
    m_controlRows.clear();
    m_lines.clear();
    m_control->clear();
    m_summary->clear();
    m_controlCurveTaken = false;
    m_controlFailed = false;
    m_jobMemory.clear();
    m_jobControlMemory.clear();
    m_jobLaunch = runKind() == RunKind::Job;
    if (m_jobLaunch)
        return startJob();
    session::SessionOptions options;
    options.launch.extraArguments = m_extraArgs->text().split(QLatin1Char(' '), Qt::SkipEmptyParts);
    options.launch.ranks = m_ranks->value();
    options.launch.sshHost = hostKind() == HostKind::Ssh ? m_host->text().trimmed() : QString();
    options.launch.remoteWorker = qEnvironmentVariable("RS_REMOTE_WORKER");
    if (hostKind() == HostKind::Slurm) {
        options.launch.slurm = slurmSettings();
        options.launch.ranks = 1; // the job's tasks are the ranks
    }
    options.controlFirst = m_controlFirst->isChecked();
    options.reuseControl = m_reuseControl->isChecked();
    options.repeats = m_repeats->value();
    options.format = m_document->inputFormat();
    options.provenance = tr("recompute-studio local run");
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
        m_controlCurveTaken = true;
    } else if (options.controlFirst) {
        m_control->setText(tr("Control []: measured first in this launch."));
    } else {
        m_control->setText(tr("Control []: the latest stored matched one, if any, is linked."));
    }
    m_chart->setData(QString(), {});
    m_chart->setEmptyMessage(tr("Starting…"));
    setRunning(true);
    m_cancel->setFocus(); // not left in a settings box that no longer takes input
    emit runStarted();
    return true;
}

bool LaunchPage::startJob()
{
    const auto format = InputFormat(m_jobFrontEnd->currentData().toInt());
    const JobInput in
        = readJobFields(m_document->recipe(), format, m_jobLauncher->text(), m_jobChoices->text());
    auto refuse = [this](const QString& why) {
        m_status->setText(tr("Not started: %1").arg(why));
        appendLog(why);
        m_progress->setRange(0, 1);
        m_progress->setValue(0);
        m_progress->setFormat(tr("not started"));
        return false;
    };
    if (!in.error.isEmpty())
        return refuse(in.error);
    session::JobSessionOptions o;
    o.iters = m_jobIters->value();
    o.bridgeLauncher = in.bridgeLauncher;
    if (hostKind() == HostKind::Ssh)
        o.job.sshHost = m_host->text().trimmed();
    if (hostKind() == HostKind::Slurm)
        o.job.slurm = slurmSettings();
    o.repeats = m_repeats->value();
    o.reuseControl = o.reuseCandidates = m_reuseControl->isChecked();
    o.targetGb = in.base.memory_target_gb;
    o.skipByEstimate = m_jobSkip->isChecked();
    if (m_jobOneRank->isChecked())
        o.oneRank = oneRank();
    if (!m_jobSession->plan(in.base, in.format, in.choices, o))
        return refuse(m_jobSession->refusal());
    if (!m_jobSession->start())
        return refuse(m_jobSession->refusal());
    m_jobRunsStarted = 0;
    m_jobRunsPlanned = int(m_jobSession->plan().size()) * std::max(1, o.repeats);
    m_control->setText(tr("Control []: run first in this sweep (recompute off), or a stored run of the same "
                          "command reused."));
    appendLog(tr("— the [] control, then %n recompute choice(s), %1 iterations each; logs in %2", nullptr,
        int(m_jobSession->plan().size()) - 1)
                  .arg(o.iters)
                  .arg(m_jobSession->logDir()));
    m_chart->setData(QString(), {});
    m_chart->setEmptyMessage(tr("Starting…"));
    setRunning(true);
    m_cancel->setFocus();
    emit runStarted();
    return true;
}

void LaunchPage::connectJobSession()
{
    session::JobSession* s = m_jobSession.get();
    connect(s, &session::JobSession::message, this, [this](const QString& text) { appendLog(text); });
    connect(s, &session::JobSession::note, this, [this](const QString& label, const QString& text) {
        appendLog(tr("[%1] %2").arg(label, text));
        if (m_rows.isEmpty())
            m_status->setText(tr("%1: %2").arg(m_currentLabel, text));
    });
    connect(s, &session::JobSession::runStarted, this,
        [this](const QString& label, const QStringList& command, const QString& logPath) {
            ++m_jobRunsStarted;
            m_jobMemory.clear();
            beginRun(label, label == QLatin1String("[]"), m_jobIters->value());
            m_progress->setFormat(tr("%1: %v of %m iterations (run %2 of about %3)")
                                      .arg(label)
                                      .arg(m_jobRunsStarted)
                                      .arg(std::max(m_jobRunsStarted, m_jobRunsPlanned)));
            appendLog(QStringLiteral("$ ") + session::commandForDisplay(command).join(QLatin1Char(' ')));
            appendLog(tr("log: %1").arg(logPath));
        });
    connect(s, &session::JobSession::line, this, [this](const QString& label, const QString& text) {
        appendLog(label + QStringLiteral("| ") + text);
    });
    connect(s, &session::JobSession::iteration, this,
        [this](const QString& label, const storage::IterationRow& row) {
            if (row.rank != 0)
                return;
            m_rows << row;
            if (const session::JobRun* run = m_jobSession->currentRun())
                m_jobMemory = run->memoryReports();
            if (m_currentIsControl && !m_controlCurveTaken) {
                m_controlRows << row; // the pale reference curve: the control's first run
                m_jobControlMemory = m_jobMemory;
            }
            m_progress->setValue(std::min(row.iteration, m_progress->maximum()));
            m_status->setText(tr("%1: iteration %2 of %3%4")
                                  .arg(label)
                                  .arg(row.iteration)
                                  .arg(m_jobIters->value())
                                  .arg(row.stepMs ? tr(", %1 ms").arg(*row.stepMs, 0, 'f', 1) : QString()));
            redrawChart(tr("Live: %1").arg(label));
        });
    connect(s, &session::JobSession::runFailed, this,
        [this](const QString& label, const QString& reason, const QStringList& lastLines) {
            appendLog(tr("%1: %2; its last lines:").arg(label, reason));
            for (const QString& l : lastLines)
                appendLog(QStringLiteral("    ") + l);
            m_status->setText(tr("%1: %2").arg(label, reason));
            if (m_rows.isEmpty()) {
                m_chart->setData(QString(), {});
                m_chart->setEmptyMessage(tr("%1 ended before its first iteration: %2").arg(label, reason));
            }
        });
    connect(s, &session::JobSession::runStored, this,
        [this](const QString& label, qint64 runId, bool reused, const QStringList& notes) {
            appendLog(reused
                    ? tr("— %1: stored run %2 reused (same recipe, command and host)").arg(label).arg(runId)
                    : tr("— %1 stored as run %2").arg(label).arg(runId));
            for (const QString& n : notes)
                appendLog(tr("  note: %1").arg(n));
            if (label == QLatin1String("[]") && runId == m_jobSession->controlRunId().value_or(0)) {
                const auto run = m_store->run(runId);
                const bool passed = run && run->outcome == storage::outcome::Pass;
                m_controlFailed = !passed;
                m_control->setText(passed
                        ? (reused ? tr("Control []: run %1 (stored, reused).").arg(runId)
                                  : tr("Control []: run %1, measured in this sweep.").arg(runId))
                        : tr("Control []: run %1 ended %2: %3")
                              .arg(runId)
                              .arg(run ? run->outcome : tr("unstored"), run ? run->message : QString()));
                if (reused && m_jobControlMemory.isEmpty()) {
                    for (const storage::IterationRow& row : m_store->iterations(runId, 0))
                        m_controlRows << row;
                    m_jobControlMemory = m_store->memoryReports(runId);
                } else if (!reused) {
                    m_jobControlMemory = m_store->memoryReports(runId); // every line, the last one too
                }
                m_controlCurveTaken = true;
            }
            emit runStored(runId);
        });
    connect(s, &session::JobSession::calibration, this,
        [this](const QString& label, std::optional<qint64> estimate, std::optional<qint64> measured,
            const QString& error) {
            if (!estimate) {
                appendLog(tr("[%1] no estimate: %2").arg(label, error));
                return;
            }
            QString line = tr("[%1] estimate %2, measured %3").arg(label, gbText(estimate), gbText(measured));
            if (measured && *measured > 0)
                line += tr(", error %1 %")
                            .arg(QString::asprintf(
                                "%+.1f", double(*estimate - *measured) / double(*measured) * 100.0));
            appendLog(line);
        });
    connect(s, &session::JobSession::finished, this, [this] {
        setRunning(false);
        if (!m_jobSession->failure().isEmpty())
            m_status->setText(tr("Stopped: %1").arg(m_jobSession->failure()));
        else if (m_jobSession->cancelled())
            m_status->setText(tr("Cancelled; what ran is stored."));
        else
            m_status->setText(tr("Done: %n run(s) stored or reused.", nullptr, int(storedRuns().size())));
        m_progress->setValue(m_progress->maximum()); // a log may end before the iterations asked for
        m_progress->setFormat(tr("done"));
        showSummary(
            m_jobSession->controlRunId(), m_jobSession->moreControls(), m_jobSession->candidateRuns());
        m_run->setFocus();
        emit launchFinished();
    });
}

void LaunchPage::cancel()
{
    if (m_session->isRunning()) {
        appendLog(tr("— cancelled by the user"));
        m_session->cancel();
    }
    if (m_jobSession->isRunning()) {
        appendLog(tr("— cancelled by the user"));
        m_jobSession->cancel();
    }
}

void LaunchPage::onJobStarted(int index)
{
    const session::SessionJob& job = m_session->jobs()[index];
    QString label = job.label;
    if (job.repeats > 1)
        label += tr(" (run %1 of %2)").arg(job.repeat).arg(job.repeats);
    beginRun(label, job.isControl, job.recipe.train_iters);
}

void LaunchPage::redrawChart(const QString& title)
{
    m_lines = m_jobLaunch ? buildMemoryReportLines(m_jobMemory) : linesOf(m_rows);
    for (IterationLine& l : m_lines) {
        if (l.dashed)
            l.color = reservedColor(l.name); // reserved never reads as the control's pale allocated lines
    }
    if (!m_currentIsControl) {
        // The control's curve stays while the candidate runs: its allocated lines, pale.
        for (IterationLine l :
            m_jobLaunch ? buildMemoryReportLines(m_jobControlMemory) : linesOf(m_controlRows)) {
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
    const auto run = job.runId ? m_store->run(job.runId) : std::nullopt;
    if (m_rows.isEmpty()) {
        // Ended before its first iteration: the chart says how, not "waiting".
        m_chart->setData(QString(), {});
        m_chart->setEmptyMessage(run
                ? tr("%1 ended %2 before its first iteration: %3")
                      .arg(m_currentLabel, run->outcome, run->message)
                : tr("%1 ended before its first iteration: %2").arg(m_currentLabel, job.reason));
    }
    if (job.runId) {
        appendLog(tr("— %1 stored as run %2").arg(m_currentLabel).arg(job.runId));
        if (job.isControl && !job.reused && job.runId == m_session->controlRunId()) {
            const bool passed = run && run->outcome == storage::outcome::Pass;
            m_controlFailed = !passed;
            m_control->setText(passed
                    ? tr("Control []: run %1, measured in this launch.").arg(job.runId)
                    : tr("Control []: run %1 ended %2: %3")
                          .arg(job.runId)
                          .arg(run ? run->outcome : tr("unstored"), run ? run->message : job.reason));
        }
        emit runStored(job.runId);
    }
}

void LaunchPage::onSessionFinished()
{
    setRunning(false);
    if (!m_session->controlRefusal().isEmpty()) {
        m_status->setText(tr("Stopped: %1").arg(m_session->controlRefusal()));
        m_progress->setFormat(tr("refused"));
    }
    showSummary(m_session->controlRunId(), {}, m_session->candidateRuns());
    m_run->setFocus();
    emit launchFinished();
}

void LaunchPage::showSummary(
    std::optional<qint64> control, const QVector<qint64>& moreControls, const QVector<qint64>& candidates)
{
    if (candidates.isEmpty() || !m_store) {
        if (m_controlFailed)
            m_summary->setText(tr("The [] control did not pass: nothing to compare."));
        return;
    }
    // The control's runs (repeats pooled), for the one Δ step time.
    QVector<storage::RunRecord> controls;
    std::optional<qint64> controlPeak;
    if (control) {
        for (qint64 id : QVector<qint64> { *control } + moreControls) {
            if (const auto r = m_store->run(id); r && r->outcome == storage::outcome::Pass) {
                controls << *r;
                if (r->peakAllocated)
                    controlPeak = controlPeak ? std::max(*controlPeak, *r->peakAllocated) : *r->peakAllocated;
            }
        }
    }
    // Per recompute choice, in the order first run.
    QStringList order;
    QHash<QString, QVector<storage::RunRecord>> byChoice;
    for (qint64 id : candidates) {
        const auto r = m_store->run(id);
        if (!r || r->outcome != storage::outcome::Pass)
            continue;
        const QString label = r->moduleSetLabel();
        if (!byChoice.contains(label))
            order << label;
        byChoice[label] << *r;
    }
    if (order.isEmpty()) {
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
    QStringList lines;
    for (const QString& label : order) {
        QVector<double> ms, gb, dAlloc;
        for (const storage::RunRecord& r : byChoice[label]) {
            if (r.steadyStepMs)
                ms << *r.steadyStepMs;
            if (r.peakAllocated)
                gb << bytesToGb(*r.peakAllocated);
            if (r.peakAllocated && controlPeak && control && m_store->matchCheck(r.id, *control).matched)
                if (const auto p = percentAgainst(double(*r.peakAllocated), double(*controlPeak)))
                    dAlloc << *p;
        }
        const Spread g = spreadOf(gb);
        // GB with three significant figures at least (a tiny CPU run's peaks).
        const int gbDecimals = g.mean > 0 && g.mean < 0.1 ? 5 : 3;
        QString text = tr("[%1]: steady step %2, peak allocated %3")
                           .arg(label, range(spreadOf(ms), 2, QStringLiteral(" ms")),
                               range(g, gbDecimals, QStringLiteral(" GB")));
        if (control) {
            text += tr("; against the [] control (run %1): ").arg(*control);
            const bool matched = !dAlloc.isEmpty();
            const auto d = matched && !controls.isEmpty()
                ? storage::stepTimeDelta(*m_store, byChoice[label], controls)
                : std::nullopt;
            if (!matched && !d) {
                text += tr("not compared (not matched, or the control has no figures)");
            } else {
                QStringList parts;
                if (d)
                    parts << QStringLiteral("%1 %2").arg(
                        QString::fromUtf8(kStepDeltaName), QString::fromStdString(deltaCell(*d)));
                const Spread a = spreadOf(dAlloc);
                QString alloc = QString::asprintf("%+.2f%%", a.mean);
                if (a.n > 1)
                    alloc += QString::asprintf(" (%+.2f%% to %+.2f%%)", a.min, a.max);
                parts << tr("Δ allocated %1").arg(alloc);
                text += parts.join(QStringLiteral(", "));
            }
        }
        lines << text;
    }
    m_summary->setText(lines.join(QLatin1Char('\n')));
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
        if (kind == HostKind::Ssh && m_host->text().trimmed().isEmpty())
            m_host->setFocus();
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
