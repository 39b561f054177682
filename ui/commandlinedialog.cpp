// SPDX-License-Identifier: Apache-2.0
#include "commandlinedialog.h"

#include <QDialogButtonBox>
#include <QFileInfo>
#include <QFontDatabase>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QVBoxLayout>

#include "core/recipe_json.h"
#include "shellwords.h"

namespace rs::ui {

namespace {

bool isOverride(const QString& w)
{
    // key=value, +key=value, ~key: Hydra's words (a flag's --key=value is not one).
    return !w.startsWith(QLatin1Char('-'))
        && (w.contains(QLatin1Char('=')) || w.startsWith(QLatin1Char('~')));
}

// The value of `--name VALUE` or `--name=VALUE` among the words (either spelling of a torchrun option).
std::optional<QString> optionValue(const QStringList& words, const QStringList& names)
{
    for (int i = 0; i < words.size(); ++i) {
        for (const QString& n : names) {
            if (words[i] == n && i + 1 < words.size())
                return words[i + 1];
            if (words[i].startsWith(n + QLatin1Char('=')))
                return words[i].mid(n.size() + 1);
        }
    }
    return std::nullopt;
}

} // namespace

std::optional<PastedCommand> CommandLineDialog::read(const QString& text, QString* error)
{
    QStringList words;
    if (!splitShellWords(text, &words, error))
        return std::nullopt;
    if (words.isEmpty()) {
        *error = tr("paste a Megatron-LM command line or Megatron Bridge overrides");
        return std::nullopt;
    }
    int script = -1;
    for (int i = 0; i < words.size() && script < 0; ++i) {
        if (words[i].endsWith(QLatin1String(".py")))
            script = i;
    }
    const QStringList after = script < 0 ? words : words.mid(script + 1);
    const bool bridge = std::any_of(after.begin(), after.end(), isOverride)
        || words.contains(QLatin1String("--recipe"))
        || std::any_of(words.begin(), words.end(),
            [](const QString& w) { return w.startsWith(QLatin1String("--recipe=")); });
    PastedCommand out;
    std::vector<std::string> args;
    if (!bridge) {
        // Megatron-LM: everything after --mlm-args, its launcher included (core keeps it as launch_command).
        args.push_back("--mlm-args");
        for (const QString& w : words)
            args.push_back(w.toStdString());
        out.launcher = script < 0 ? QStringList() : words.mid(0, script + 1);
    } else {
        // Bridge: the launcher is every word before the first override; --recipe NAME names the base, and
        // torchrun's --nproc-per-node (x --nnodes) is the world it is launched on.
        const auto firstOverride = std::find_if(words.begin(), words.end(), isOverride);
        out.launcher = QStringList(words.begin(), firstOverride);
        if (const auto name = optionValue(out.launcher, { QStringLiteral("--recipe") })) {
            args.insert(args.end(), { "--recipe", name->toStdString() });
            const auto perNode = optionValue(
                out.launcher, { QStringLiteral("--nproc-per-node"), QStringLiteral("--nproc_per_node") });
            const auto nodes = optionValue(out.launcher, { QStringLiteral("--nnodes") });
            bool ok = false;
            const int gpus = perNode ? perNode->toInt(&ok) : 0;
            if (ok && gpus > 0)
                args.insert(
                    args.end(), { "--gpus", std::to_string(gpus * std::max(1, nodes ? nodes->toInt() : 1)) });
        }
        if (firstOverride != words.end()) {
            args.push_back("--overrides");
            for (auto it = firstOverride; it != words.end(); ++it) {
                if (!isOverride(*it)) {
                    *error = tr("'%1' after the overrides is not an override (key=value)").arg(*it);
                    return std::nullopt;
                }
                args.push_back(it->toStdString());
            }
        }
    }
    try {
        std::vector<std::string> rest;
        out.input = readRecipeInput(args, &rest);
        if (!rest.empty()) {
            *error
                = tr("'%1' does not read as part of the command").arg(QString::fromStdString(rest.front()));
            return std::nullopt;
        }
    } catch (const std::exception& e) {
        *error = QString::fromUtf8(e.what());
        return std::nullopt;
    }
    const Recipe& r = out.input.recipe;
    out.summary = out.input.format == InputFormat::MegatronFlags
        ? tr("a Megatron-LM job: %1 layers, hidden size %2, %3 heads, launched by %4")
              .arg(r.num_layers)
              .arg(r.hidden_size)
              .arg(r.num_attention_heads)
              .arg(out.launcher.isEmpty() ? tr("(no launcher: torchrun … pretrain_gpt.py)")
                                          : out.launcher.join(QLatin1Char(' ')))
        : tr("a Megatron Bridge job%1: %2 layers, hidden size %3")
              .arg(r.name.empty() ? QString() : QStringLiteral(" (%1)").arg(QString::fromStdString(r.name)))
              .arg(r.num_layers)
              .arg(r.hidden_size);
    return out;
}

QString CommandLineDialog::jobName(const PastedCommand& command)
{
    const Recipe& r = command.input.recipe;
    if (!r.name.empty())
        return QString::fromStdString(r.name);
    QString script;
    for (const QString& w : command.launcher) {
        if (w.endsWith(QLatin1String(".py")))
            script = QFileInfo(w).fileName();
    }
    return tr("%1, %2 layers, hidden %3")
        .arg(script.isEmpty() ? (command.input.format == InputFormat::MegatronFlags ? tr("Megatron-LM job")
                                                                                    : tr("Bridge job"))
                              : script)
        .arg(r.num_layers)
        .arg(r.hidden_size);
}

CommandLineDialog::CommandLineDialog(QWidget* parent)
    : QDialog(parent)
{
    setWindowTitle(tr("Paste a command line"));
    auto* layout = new QVBoxLayout(this);
    auto* intro = new QLabel(tr(
        "Paste the command you train with: a Megatron-LM line (torchrun … pretrain_gpt.py --flags) or a "
        "Megatron Bridge one (torchrun … run_recipe.py --recipe NAME key=value …, or the overrides alone). "
        "It becomes a new recipe with its own rules; its launcher is what the Launch page runs for the real "
        "job."));
    intro->setWordWrap(true);
    layout->addWidget(intro);
    m_text = new QPlainTextEdit;
    m_text->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_text->setPlaceholderText(QStringLiteral(
        "torchrun --nproc-per-node 8 pretrain_gpt.py \\\n    --num-layers 32 --hidden-size 4096 …"));
    layout->addWidget(m_text, 1);
    m_status = new QLabel;
    m_status->setWordWrap(true);
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_status);
    m_buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    m_buttons->button(QDialogButtonBox::Ok)->setText(tr("New recipe from it"));
    layout->addWidget(m_buttons);
    connect(m_buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(m_buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(m_text, &QPlainTextEdit::textChanged, this, &CommandLineDialog::reread);
    resize(760, 420);
    reread();
}

void CommandLineDialog::setText(const QString& text)
{
    m_text->setPlainText(text);
}

QString CommandLineDialog::status() const
{
    return m_status->text();
}

void CommandLineDialog::reread()
{
    QString error;
    m_command
        = m_text->toPlainText().trimmed().isEmpty() ? std::nullopt : read(m_text->toPlainText(), &error);
    if (m_command)
        m_status->setText(tr("Reads as %1.").arg(m_command->summary));
    else
        m_status->setText(m_text->toPlainText().trimmed().isEmpty() ? tr("Nothing pasted yet.")
                                                                    : tr("Does not read: %1").arg(error));
    m_status->setStyleSheet(m_command || m_text->toPlainText().trimmed().isEmpty()
            ? QString()
            : QStringLiteral("color: #8e1b1b;"));
    m_buttons->button(QDialogButtonBox::Ok)->setEnabled(m_command.has_value());
}

} // namespace rs::ui
