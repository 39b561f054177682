// SPDX-License-Identifier: Apache-2.0
#include "verb_common.h"

#include <exception>
#include <iostream>

#include "storage/store.h"

namespace rs::cli {

std::optional<int> parseArgs(const char* verb, const std::vector<std::string>& args, ParsedArgs* out)
{
    ParseResult r = parseVerbArgs(verb, args);
    if (r.args.help) {
        std::cout << verbHelp(verb);
        return 0;
    }
    if (!r.error.empty())
        return usageError(verb, r.error);
    // An empty --db (an unset variable in a script) is a mistake, not a request for the default store.
    if (r.args.has("db") && r.args.value("db").empty())
        return usageError(verb,
            "--db: empty; give the store's file path, or leave --db out for the default store ("
                + storage::Store::defaultPath().toStdString() + ")");
    *out = std::move(r.args);
    return std::nullopt;
}

int usageError(const char* verb, const std::string& message)
{
    std::cerr << "recompute " << verb << ": " << message << "\n" << usageLine(verb);
    return 2;
}

int inputError(const char* verb, const std::string& message)
{
    std::cerr << "recompute " << verb << ": " << message << "\n";
    return 2;
}

QString text(const ParsedArgs& args, const std::string& option, const QString& fallback)
{
    return args.has(option) ? QString::fromStdString(args.value(option)) : fallback;
}

std::optional<qint64> runIdArg(const char* verb, const std::string& what, const std::string& value)
{
    bool ok = false;
    const qint64 id = QString::fromStdString(value).toLongLong(&ok);
    if (!ok || id <= 0) {
        inputError(verb, what + ": '" + value + "' is not a run id (a positive integer)");
        return std::nullopt;
    }
    return id;
}

std::optional<QVector<qint64>> runIdPositionals(const char* verb, const ParsedArgs& args)
{
    QVector<qint64> ids;
    for (const auto& p : args.positionals) {
        const auto id = runIdArg(verb, "RUN", p);
        if (!id)
            return std::nullopt;
        ids << *id;
    }
    return ids;
}

std::optional<int> readRunRecipe(const char* verb, const ParsedArgs& args, RecipeInput* input)
{
    // core/recipe_input.h reads the recipe arguments as they were given: rebuilt here from the parse.
    std::vector<std::string> recipeArgs = args.positionals;
    for (const char* option : { "profile", "recipe", "gpus", "nodes", "gpus-per-node" }) {
        if (args.has(option)) {
            recipeArgs.push_back(std::string("--") + option);
            recipeArgs.push_back(args.value(option));
        }
    }
    if (const auto it = args.groups.find("overrides"); it != args.groups.end()) {
        for (const auto& group : it->second) {
            recipeArgs.push_back("--overrides");
            recipeArgs.insert(recipeArgs.end(), group.begin(), group.end());
        }
    }
    if (args.rest) {
        recipeArgs.push_back("--mlm-args");
        recipeArgs.insert(recipeArgs.end(), args.rest->begin(), args.rest->end());
    }
    try {
        std::vector<std::string> rest;
        *input = readRecipeInput(recipeArgs, &rest);
        if (!rest.empty())
            return usageError(verb, "arguments: unexpected argument '" + rest.front() + "'");
    } catch (const std::exception& e) {
        return usageError(verb, e.what());
    }
    return std::nullopt;
}

QString storePath(const ParsedArgs& args)
{
    const QString db = text(args, "db");
    return db.isEmpty() ? storage::Store::defaultPath() : db;
}

bool openStore(const char* verb, const ParsedArgs& args, storage::Store* store, StoreAccess access)
{
    QString error;
    const QString path = storePath(args);
    const bool ok
        = access == StoreAccess::ReadOnly ? store->openReadOnly(path, &error) : store->open(path, &error);
    if (!ok)
        inputError(verb, error.toStdString());
    return ok;
}

} // namespace rs::cli
