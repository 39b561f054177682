// SPDX-License-Identifier: Apache-2.0
// `recompute validate`: the rules engine on one recipe, from a JSON file, Bridge overrides or Megatron-LM
// flags, under one rules profile. Exit 0: no error finding; 1: an error finding; 2: unusable input.
#include <iostream>

#include <nlohmann/json.hpp>

#include "core/recipe_input.h"
#include "core/recipe_json.h"
#include "core/rules.h"
#include "verb_common.h"
#include "verbs.h"

namespace {

const char* formatName(rs::InputFormat f)
{
    switch (f) {
    case rs::InputFormat::Json:
        return "json";
    case rs::InputFormat::BridgeOverrides:
        return "bridge-overrides";
    case rs::InputFormat::MegatronFlags:
        return "megatron-flags";
    }
    return "json";
}

void printHuman(const rs::RecipeInput& in, const rs::Validation& v)
{
    int count[4] = { 0, 0, 0, 0 };
    for (const auto& f : v.findings) {
        ++count[static_cast<int>(f.severity)];
        std::cout << rs::severityName(f.severity) << " " << f.rule_id;
        if (!f.fields.empty()) {
            std::cout << " [";
            for (size_t i = 0; i < f.fields.size(); ++i)
                std::cout << (i ? ", " : "") << f.fields[i];
            std::cout << "]";
        }
        std::cout << "\n  " << f.message << "\n";
        if (f.fixit)
            std::cout << "  fix-it: " << f.fixit->description << "  " << f.fixit->patch.dump() << "\n";
        std::cout << "  source: " << f.source << "\n";
    }
    std::cout << in.origin << ": " << count[0] << " error(s), " << count[1] << " warning(s), " << count[2]
              << " note(s), " << count[3] << " adjustment(s) under profile "
              << rs::profileName(in.recipe.profile) << " (" << formatName(in.format) << ")\n";
    if (!in.note.empty())
        std::cout << "note: " << in.note << "\n";
    for (const std::string& n : in.setup_notes)
        std::cout << "recipe: " << n << "\n";
}

int validateMain(const std::vector<std::string>& argv)
{
    rs::cli::ParsedArgs args;
    if (const auto done = rs::cli::parseArgs("validate", argv, &args))
        return *done;
    const bool json = args.has("json");
    rs::RecipeInput input;
    if (const auto done = rs::cli::readRunRecipe("validate", args, &input))
        return *done;
    const rs::Validation v = rs::validate(input.recipe, input.format);
    if (json) {
        nlohmann::json out;
        out["input"] = input.origin;
        out["format"] = formatName(input.format);
        out["profile"] = rs::profileName(input.recipe.profile);
        out["has_errors"] = v.hasErrors();
        out["kept_note"] = input.note;
        out["recipe_notes"] = input.setup_notes;
        out["findings"] = nlohmann::json::array();
        for (const auto& f : v.findings)
            out["findings"].push_back(rs::findingToJson(f));
        out["resolved"] = rs::recipeToJson(v.resolved);
        // replace: a path or message with bytes that are not UTF-8 is printed, never an exception.
        std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    } else {
        printHuman(input, v);
    }
    return v.hasErrors() ? 1 : 0;
}

} // namespace

RS_REGISTER_VERB("validate", validateMain);
