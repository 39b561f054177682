// SPDX-License-Identifier: Apache-2.0
// Argument vectors as text a user pastes into a shell: splitting honours single and double quotes,
// backslash escapes, "\<newline>" continuations and '#' comments; writing quotes only the words that need
// it, the way a Bridge user writes 'model.recompute_modules=[core_attn,moe_act]'.
#pragma once

#include <QString>
#include <QStringList>

namespace rs::ui {

// Returns false with a message (naming the line) on an unterminated quote.
bool splitShellWords(const QString& text, QStringList* words, QString* error);
QString quoteShellWord(const QString& word);
// One line per group of words, joined with " \" continuations so the text pastes as one command.
QString joinShellLines(const QList<QStringList>& lines);
// Megatron-LM flags: each "--flag" with the values that follow it on one line.
QList<QStringList> groupFlagLines(const QStringList& args);

} // namespace rs::ui
