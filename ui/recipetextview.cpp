// SPDX-License-Identifier: Apache-2.0
#include "recipetextview.h"

#include <stdexcept>

#include <QApplication>
#include <QClipboard>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTextCursor>
#include <QVBoxLayout>

#include "commandlinedialog.h"
#include "core/megatron_flags.h"
#include "core/overrides.h"
#include "core/recipe_json.h"
#include "recipedocument.h"
#include "shellwords.h"

namespace rs::ui {

RecipeTextView::RecipeTextView(RecipeDocument* document, Syntax syntax, QWidget* parent)
    : QWidget(parent)
    , m_document(document)
    , m_syntax(syntax)
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_edit = new QPlainTextEdit;
    m_edit->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_edit->setLineWrapMode(QPlainTextEdit::NoWrap);
    layout->addWidget(m_edit, 1);
    auto* row = new QHBoxLayout;
    m_status = new QLabel;
    m_status->setWordWrap(true);
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
    row->addWidget(m_status, 1);
    m_revert = new QPushButton(tr("Revert"));
    m_revert->setToolTip(tr("Replace the text with the recipe the form holds (the last text that read)."));
    m_revert->setVisible(false);
    connect(m_revert, &QPushButton::clicked, this, &RecipeTextView::revert);
    row->addWidget(m_revert, 0, Qt::AlignTop);
    m_copy = new QPushButton(tr("Copy"));
    m_copy->setToolTip(tr("Copy the text; it pastes into a shell as one command line. Text that does not "
                          "read as a recipe is not copied: the recipe the form holds is."));
    connect(m_copy, &QPushButton::clicked, this, [this] { copyToClipboard(); });
    row->addWidget(m_copy, 0, Qt::AlignTop);
    layout->addLayout(row);

    connect(m_edit, &QPlainTextEdit::textChanged, this, &RecipeTextView::onTextChanged);
    connect(m_document, &RecipeDocument::recipeChanged, this, &RecipeTextView::refresh);
    refresh(nullptr);
}

void RecipeTextView::showEvent(QShowEvent* event)
{
    QWidget::showEvent(event);
    if (m_stale)
        refresh(nullptr);
}

QString RecipeTextView::errorText() const
{
    return m_status->property("rsError").toBool() ? m_status->text() : QString();
}

void RecipeTextView::setError(const QString& message, bool parseError)
{
    m_status->setProperty("rsError", true);
    // A text that does not read is the thing to fix before anything else: a red box under it, the
    // editor's frame red, and Revert at hand.
    m_status->setStyleSheet(parseError
            ? QStringLiteral("color: #8e1b1b; background: #fdecea; border: 1px solid "
                             "#e0a0a0; padding: 4px;")
            : QStringLiteral("color: #b26a00;"));
    m_edit->setStyleSheet(
        parseError ? QStringLiteral("QPlainTextEdit { border: 2px solid #c62828; }") : QString());
    m_revert->setVisible(parseError);
    m_status->setText(message);
}

void RecipeTextView::clearError(const QString& message)
{
    m_status->setProperty("rsError", false);
    m_status->setStyleSheet(QString());
    m_edit->setStyleSheet(QString());
    m_revert->setVisible(false);
    m_status->setText(message);
}

QString RecipeTextView::copyToClipboard()
{
    QString text = m_edit->toPlainText();
    if (!m_revert->isHidden()) {
        // The text does not read: hand out the recipe the form holds, and say so.
        try {
            text = textFor(m_document->recipe(), m_syntax);
        } catch (const std::exception&) {
            text.clear();
        }
        QApplication::clipboard()->setText(text);
        m_status->setText(m_status->text().section(QLatin1Char('\n'), 0, 0) + QLatin1Char('\n')
            + tr("Copied the last recipe that read (the form's), not this text."));
        return text;
    }
    QApplication::clipboard()->setText(text);
    return text;
}

void RecipeTextView::revert()
{
    refresh(nullptr);
}

QString RecipeTextView::textFor(const Recipe& recipe, Syntax syntax)
{
    switch (syntax) {
    case Syntax::BridgeOverrides: {
        QList<QStringList> lines;
        for (const auto& o : recipeToBridgeOverrides(recipe))
            lines.append(QStringList { QString::fromStdString(o) });
        // Our own settings ride in a comment line, which the shell drops before Bridge sees the line.
        return QString::fromStdString(studioCommentLine(recipe)) + QLatin1Char('\n') + joinShellLines(lines);
    }
    case Syntax::MegatronFlags: {
        QStringList args;
        for (const auto& f : recipeToMegatronFlags(recipe))
            args << QString::fromStdString(f);
        return joinShellLines(groupFlagLines(args));
    }
    case Syntax::Json:
        return QString::fromStdString(recipeToJson(recipe).dump(2));
    }
    return {};
}

Recipe RecipeTextView::recipeFrom(const QString& text, Syntax syntax, const Recipe& current)
{
    if (syntax == Syntax::Json)
        return recipeFromJsonText(text.toStdString(), "JSON text");
    // '# studio:' lines first: they name the profile, whose Megatron tables the readers use.
    Recipe studio = frontEndDefaults(
        syntax == Syntax::BridgeOverrides ? InputFormat::BridgeOverrides : InputFormat::MegatronFlags,
        current.profile);
    for (const QString& line : text.split(QLatin1Char('\n'))) {
        if (line.trimmed().startsWith(QStringLiteral("# studio:")))
            applyStudioComment(studio, line.trimmed().toStdString());
    }
    QStringList words;
    QString error;
    if (!splitShellWords(text, &words, &error))
        throw std::runtime_error(error.toStdString());
    std::vector<std::string> args;
    args.reserve(std::size_t(words.size()));
    for (const QString& w : words)
        args.push_back(w.toStdString());
    if (syntax == Syntax::BridgeOverrides)
        return recipeFromBridgeOverrides(args, studio); // every field that differs from Bridge's defaults
    // Flags have no place for Bridge-only and Studio settings: those stay as they are; everything else
    // comes from the flags alone, so deleting a flag line returns that field to Megatron's default.
    Recipe base = frontEndDefaults(InputFormat::MegatronFlags, current.profile);
    base.name = current.name;
    base.memory_target_gb = current.memory_target_gb;
    base.warmup_iters = current.warmup_iters;
    base.mixed_precision = current.mixed_precision;
    base.check_for_nan_in_loss = current.check_for_nan_in_loss;
    base.te_version = current.te_version;
    base.gpu_compute_capability = current.gpu_compute_capability;
    base.extra_overrides = current.extra_overrides;
    base.data_parallel_size = current.data_parallel_size;
    if (args.empty() || args.front().rfind("--", 0) == 0)
        base.launch_command = current.launch_command; // unless the text names its own launcher
    return recipeFromMegatronFlags(args, base);
}

void RecipeTextView::refresh(QObject* origin)
{
    if (origin == this)
        return;
    // Text being fixed (it does not read) is the user's work: a change made elsewhere (a form field) must
    // not regenerate it away. It stays, and says so; Revert takes the recipe's text when the user wants it.
    if (origin && !m_revert->isHidden()) {
        m_heldBack = true;
        m_status->setText(m_status->text().section(QLatin1Char('\n'), 0, 0) + QLatin1Char('\n')
            + tr("The recipe changed elsewhere since; this text is kept as you left it. Fix it to apply it, "
                 "or "
                 "Revert to take the recipe's text."));
        return;
    }
    // A view on a hidden tab of a shown window catches up when it is shown: three text documents re-laid
    // out on every keystroke would cost more than the rules engine.
    if (!isVisible() && window()->isVisible()) {
        m_stale = true;
        return;
    }
    m_stale = false;
    m_heldBack = false;
    m_updating = true;
    // Replaced as an edit, not with setPlainText: Undo (Ctrl+Z, Edit → Undo) brings the earlier text back.
    const auto replaceText = [this](const QString& text) {
        if (m_edit->toPlainText() == text)
            return;
        QTextCursor c(m_edit->document());
        c.beginEditBlock();
        c.select(QTextCursor::Document);
        c.insertText(text);
        c.endEditBlock();
    };
    try {
        replaceText(textFor(m_document->recipe(), m_syntax));
        clearError(m_syntax == Syntax::MegatronFlags
                ? tr("Bridge-only and Studio settings have no flag and are kept as they are.")
                : QString());
    } catch (const std::exception& e) {
        // A recipe this syntax cannot express (Megatron-LM has no spelling for the [] control).
        replaceText(QStringLiteral("# ") + QString::fromStdString(e.what()));
        setError(QString::fromStdString(e.what()), false);
    }
    m_updating = false;
}

void RecipeTextView::onTextChanged()
{
    if (m_updating)
        return;
    try {
        Recipe r = recipeFrom(m_edit->toPlainText(), m_syntax, m_document->recipe());
        clearError(tr("Applied."));
        // A whole Megatron-LM line pasted here (its own launcher) is another job: its own name, and the
        // Megatron-LM rules (M1-M6) judge it, as File → Paste command line… would make it.
        const bool newJob = m_syntax == Syntax::MegatronFlags && !r.launch_command.empty()
            && r.launch_command != m_document->recipe().launch_command;
        if (newJob) {
            PastedCommand pasted;
            pasted.input.recipe = r;
            pasted.input.format = InputFormat::MegatronFlags;
            for (const std::string& w : r.launch_command)
                pasted.launcher << QString::fromStdString(w);
            r.name.clear();
            pasted.input.recipe.name.clear();
            r.name = CommandLineDialog::jobName(pasted).toStdString();
        }
        if (r != m_document->recipe())
            m_document->setRecipe(r, this);
        if (newJob) // after the recipe: the views then show the new job under its rules
            m_document->setInputFormat(InputFormat::MegatronFlags);
    } catch (const std::exception& e) {
        setError(tr("This text does not read as a recipe: %1\nThe form keeps the last recipe that read; "
                    "Copy copies that one.")
                     .arg(QString::fromStdString(e.what())),
            true);
    }
}

} // namespace rs::ui
