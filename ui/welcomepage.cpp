// SPDX-License-Identifier: Apache-2.0
#include "welcomepage.h"

#include <QCommandLinkButton>
#include <QFile>
#include <QLabel>
#include <QProcess>
#include <QRegularExpression>
#include <QScrollArea>
#include <QVBoxLayout>

#include "core/estimator.h"
#include "core/rules.h"
#include "core/units.h"
#include "presets.h"

namespace rs::ui {

namespace {
const QString kTinyPreset = QStringLiteral("tiny-gpt-cpu");
} // namespace

MachineInfo probeMachine()
{
    MachineInfo m;
    QFile meminfo(QStringLiteral("/proc/meminfo"));
    if (meminfo.open(QIODevice::ReadOnly)) {
        const QRegularExpression total(
            QStringLiteral("^MemTotal:\\s+(\\d+) kB"), QRegularExpression::MultilineOption);
        const auto match = total.match(QString::fromLatin1(meminfo.readAll()));
        if (match.hasMatch())
            m.hostMemoryBytes = match.captured(1).toLongLong() * 1024;
    }
    QProcess smi;
    smi.start(QStringLiteral("nvidia-smi"),
        { QStringLiteral("--query-gpu=name,memory.total"), QStringLiteral("--format=csv,noheader,nounits") });
    if (smi.waitForStarted(1000) && smi.waitForFinished(2000) && smi.exitCode() == 0) {
        for (const QString& line :
            QString::fromLocal8Bit(smi.readAllStandardOutput()).split(QLatin1Char('\n'))) {
            const QStringList parts = line.split(QLatin1Char(','));
            bool ok = false;
            const qint64 mib = parts.size() == 2 ? parts[1].trimmed().toLongLong(&ok) : 0;
            if (!ok || mib <= 0)
                continue;
            const qint64 bytes = mib * 1024 * 1024;
            if (!m.gpuMemoryBytes || bytes < *m.gpuMemoryBytes) {
                m.gpuMemoryBytes = bytes;
                m.gpuName = parts[0].trimmed();
            }
        }
    } else if (smi.state() != QProcess::NotRunning) {
        smi.kill();
        smi.waitForFinished(1000);
    }
    return m;
}

QString defaultPresetFor(const MachineInfo& machine, QString* why)
{
    QString chosen = kTinyPreset;
    QString reason = QObject::tr("no GPU found: the tiny GPT runs on this CPU with the worker in seconds");
    if (machine.gpuMemoryBytes) {
        const double room = 0.9 * double(*machine.gpuMemoryBytes);
        qint64 best = -1;
        reason = QObject::tr("no preset's one-rank estimate fits %1 of %2: the tiny GPT")
                     .arg(QString::fromStdString(formatGbUnit(*machine.gpuMemoryBytes)), machine.gpuName);
        for (const QString& name : presetNames()) {
            try {
                const MemoryEstimate e
                    = estimateMemory(validate(presetRecipe(name)).resolved, Layout::Worker);
                if (!e.not_estimated.empty() || double(e.peak_bytes) > room || e.peak_bytes <= best)
                    continue;
                best = e.peak_bytes;
                chosen = name;
                reason
                    = QObject::tr("the largest preset whose one-rank estimate (%1, the worker's layout) fits "
                                  "the %2 of %3")
                          .arg(QString::fromStdString(formatGbUnit(e.peak_bytes)),
                              QString::fromStdString(formatGbUnit(*machine.gpuMemoryBytes)), machine.gpuName);
            } catch (const std::exception&) {
                // a preset that does not read is no candidate (tst_recipe_io fails on it)
            }
        }
    }
    if (why)
        *why = reason;
    return chosen;
}

WelcomePage::WelcomePage(const MachineInfo& machine, QWidget* parent)
    : QWidget(parent)
{
    QString why;
    m_preset = defaultPresetFor(machine, &why);
    auto* outer = new QVBoxLayout(this);
    auto* scroll = new QScrollArea;
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    outer->addWidget(scroll);
    auto* inner = new QWidget;
    scroll->setWidget(inner);
    auto* layout = new QVBoxLayout(inner);
    layout->setContentsMargins(40, 24, 40, 24);
    auto* title = new QLabel(
        tr("<h2>Choose activation recompute by measurement</h2>"
           "<p>A recipe is your training job's model, layout and recompute choice. The studio "
           "checks it against Megatron's rules as you edit, estimates every rank's memory, runs "
           "the matched <tt>[]</tt> control (no recompute) and one run per recompute choice, and "
           "advises the cheapest choice that fits your memory target.</p>"
           "<p><b>Start here</b> — pick how you want to begin:</p>"));
    title->setWordWrap(true);
    title->setTextFormat(Qt::RichText);
    layout->addWidget(title);
    auto button = [&](const QString& text, const QString& description) {
        auto* b = new QCommandLinkButton(text, description);
        b->setMaximumWidth(820);
        layout->addWidget(b);
        return b;
    };
    m_start = button(tr("Start with “%1”").arg(presetTitle(m_preset)),
        tr("A recipe that fits this machine (%1). Open the Launch page and press Run: the [] control and the "
           "recipe are measured and compared.")
            .arg(why));
    m_start->setObjectName(QStringLiteral("welcomeStart"));
    m_open = button(tr("Open a recipe file…"), tr("A *.recipe.json you saved before."));
    m_bridge = button(tr("A Megatron Bridge recipe by name…"),
        tr("Every recipe function of Megatron Bridge: search by name (qwen3 sft, llama3 8b), set your "
           "GPUs."));
    m_paste = button(tr("Paste your command line…"),
        tr("The Megatron-LM line (torchrun … pretrain_gpt.py --flags) or Bridge overrides you already train "
           "with; "
           "the Launch page can then run it once per recompute choice."));
    m_import = button(tr("Import training logs…"),
        tr("Megatron-LM or Megatron Bridge logs of runs you already made: compared against their "
           "no-recompute "
           "run and advised on."));
    m_guide = button(tr("Look at the guide's published measurements"),
        tr("Moonlight 16B and Nemotron 3 Nano on H100: the runs page with the trade-off chart and the "
           "advisor."));
    layout->addStretch(1);
    auto* later
        = new QLabel(tr("This page is in Help → Start page; the command-line twin is <tt>recompute</tt> "
                        "(Help → The command line)."));
    later->setWordWrap(true);
    later->setStyleSheet(QStringLiteral("color: gray;"));
    layout->addWidget(later);
    m_start->setDefault(true);
    setFocusProxy(m_start); // Enter starts with the recipe that fits
    connect(m_start, &QCommandLinkButton::clicked, this, [this] { emit startFromPreset(m_preset); });
    connect(m_open, &QCommandLinkButton::clicked, this, &WelcomePage::openRecipe);
    connect(m_bridge, &QCommandLinkButton::clicked, this, &WelcomePage::bridgeRecipe);
    connect(m_paste, &QCommandLinkButton::clicked, this, &WelcomePage::pasteCommandLine);
    connect(m_import, &QCommandLinkButton::clicked, this, &WelcomePage::importLogs);
    connect(m_guide, &QCommandLinkButton::clicked, this, &WelcomePage::showGuideRuns);
}

} // namespace rs::ui
