// SPDX-License-Identifier: Apache-2.0
// File → Paste command line…: the training command a user already runs, pasted whole, becomes a new recipe
// with its own front end (its rules), its own name and its launcher for the launch page's real job:
//   - a Megatron-LM line: `torchrun --nproc-per-node 8 pretrain_gpt.py --num-layers 32 ...` (the words up to
//     the script are its launcher);
//   - a Megatron Bridge line: `torchrun --nproc-per-node 8 scripts/training/run_recipe.py --recipe NAME
//     key=value ...` (the recipe by name on the launch's GPUs, the overrides on top), or overrides alone.
// Reading is core's (readRecipeInput: --mlm-args, --recipe/--gpus/--overrides), as the CLI reads the same
// words; what does not read is named and nothing is replaced.
#pragma once

#include <optional>

#include <QDialog>
#include <QStringList>

#include "core/recipe_input.h"

class QDialogButtonBox;
class QLabel;
class QPlainTextEdit;

namespace rs::ui {

struct PastedCommand {
    RecipeInput input; // the recipe, its front end and notes
    QStringList launcher; // the words before the flags or the overrides (empty: none given)
    QString summary; // what it read as, one line
};

class CommandLineDialog : public QDialog {
    Q_OBJECT
public:
    explicit CommandLineDialog(QWidget* parent = nullptr);

    // Reads a pasted command; nullopt with *error naming the word or field that does not read.
    static std::optional<PastedCommand> read(const QString& text, QString* error);
    // A name for a pasted job that carries none: "pretrain_gpt.py, 32 layers, hidden 4096".
    static QString jobName(const PastedCommand& command);

    void setText(const QString& text);
    const std::optional<PastedCommand>& command() const { return m_command; }
    QString status() const;

private:
    void reread();

    QPlainTextEdit* m_text;
    QLabel* m_status;
    QDialogButtonBox* m_buttons;
    std::optional<PastedCommand> m_command;
};

} // namespace rs::ui
