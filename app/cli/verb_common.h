// SPDX-License-Identifier: Apache-2.0
// What every verb does the same way: its arguments parsed by the option table, the errors said as
// "recompute VERB: ..." with the verb's usage line, run ids and numbers read from option values, the recipe
// of the verbs that read one (validate, estimate, run, sweep), and the store opened from --db.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <QString>
#include <QVector>

#include "core/recipe_input.h"
#include "option_table.h"

namespace rs::storage {
class Store;
}

namespace rs::cli {

// Parses `args` for `verb` by the option table. nullopt: *out holds them; else the exit code: 0 after
// printing the verb's help (--help), 2 after saying what is wrong (unknown option, missing value, ...).
std::optional<int> parseArgs(const char* verb, const std::vector<std::string>& args, ParsedArgs* out);

// Says "recompute VERB: message" and the verb's usage line on stderr; returns 2.
int usageError(const char* verb, const std::string& message);
// Says "recompute VERB: message" on stderr; returns 2.
int inputError(const char* verb, const std::string& message);

// An option's last value as text (UTF-8), or `fallback`.
QString text(const ParsedArgs& args, const std::string& option, const QString& fallback = {});

// A run id: a positive integer; nullopt after saying "recompute VERB: WHAT: 'x' is not a run id ...".
std::optional<qint64> runIdArg(const char* verb, const std::string& what, const std::string& value);
// Every positional as a RUN id; nullopt after saying which one is not.
std::optional<QVector<qint64>> runIdPositionals(const char* verb, const ParsedArgs& args);
// The recipe of a verb that reads one: FILE.json or - (a positional), --overrides ARGS..., --mlm-args
// ARGS..., with --profile. Returns nullopt with *input read, or 2 after saying what is unusable (a second
// positional included).
std::optional<int> readRunRecipe(const char* verb, const ParsedArgs& args, RecipeInput* input);

// --db, or the per-user store.
QString storePath(const ParsedArgs& args);
enum class StoreAccess { ReadWrite, ReadOnly };
// Opens storePath(args); false after saying "recompute VERB: <why>".
bool openStore(const char* verb, const ParsedArgs& args, storage::Store* store,
    StoreAccess access = StoreAccess::ReadWrite);

} // namespace rs::cli
