// SPDX-License-Identifier: Apache-2.0
// The recipe as text, editable both ways: Megatron Bridge Hydra overrides, Megatron-LM flags, or the
// recipe JSON. A document change rewrites the text (unless this view made it, or the text does not read:
// text being fixed is kept, and says so), as an edit Undo can take back; an edit of the text that reads as
// a recipe replaces the document's recipe, and one that does not shows the reader's message (naming the
// override, flag or field) and leaves the recipe alone.
#pragma once

#include <QWidget>

#include "core/recipe.h"

class QLabel;
class QPlainTextEdit;
class QPushButton;

namespace rs::ui {

class RecipeDocument;

class RecipeTextView : public QWidget {
    Q_OBJECT
public:
    enum class Syntax { BridgeOverrides, MegatronFlags, Json };

    RecipeTextView(RecipeDocument* document, Syntax syntax, QWidget* parent = nullptr);

    Syntax syntax() const { return m_syntax; }
    QPlainTextEdit* editor() const { return m_edit; }
    // The reader's message for the current text, or "" when it reads as a recipe.
    QString errorText() const;
    // Copy: the text when it reads as the recipe; otherwise the last good recipe's text (what the form
    // shows), and the status says so. Returns what was put on the clipboard.
    QString copyToClipboard();
    // Replaces text that does not read with the recipe's own (the last good one).
    void revert();
    // The recipe changed elsewhere (a form field) while this text did not read, and the text was kept.
    bool heldBack() const { return m_heldBack; }
    QPushButton* copyButton() const { return m_copy; }
    QPushButton* revertButton() const { return m_revert; }
    QLabel* statusLabel() const { return m_status; }

    // The text for a recipe in this syntax; throws RecipeError where the syntax cannot express it.
    static QString textFor(const Recipe& recipe, Syntax syntax);
    // Reads text in this syntax; `current` supplies what the syntax has no place for (flags carry no
    // Bridge-only or Studio settings). Throws RecipeError, or std::runtime_error for bad quoting.
    static Recipe recipeFrom(const QString& text, Syntax syntax, const Recipe& current);

protected:
    void showEvent(QShowEvent* event) override;

private:
    void refresh(QObject* origin);
    void onTextChanged();

    RecipeDocument* m_document;
    Syntax m_syntax;
    QPlainTextEdit* m_edit;
    void setError(const QString& message, bool parseError);
    void clearError(const QString& message);

    QLabel* m_status;
    QPushButton* m_copy;
    QPushButton* m_revert;
    bool m_updating = false;
    bool m_stale = false; // changed while hidden
    bool m_heldBack = false; // the recipe changed elsewhere while this text did not read: the text was kept
};

} // namespace rs::ui
