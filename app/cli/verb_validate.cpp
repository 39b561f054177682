// SPDX-License-Identifier: Apache-2.0
// `recompute validate`: the rules engine on one recipe, from a JSON file, Bridge overrides or Megatron-LM
// flags, under one rules profile. Exit 0: no error finding; 1: an error finding; 2: unusable input.
#include <algorithm>
#include <exception>
#include <iostream>

#include <nlohmann/json.hpp>

#include "core/recipe_input.h"
#include "core/recipe_json.h"
#include "core/rules.h"
#include "verbs.h"

namespace {

const char* kUsage
    = "usage: recompute validate FILE.json | - | --overrides KEY=VALUE... | --mlm-args FLAGS...\n"
      "                          [--profile bridge-pin|guide|main|dev] [--json]\n"
      "  Checks a recipe against the Megatron Core rules of the profile's revision (default: the recipe's\n"
      "  own profile, bridge-pin if unset), in Megatron's evaluation order. Bridge overrides also get the\n"
      "  Megatron Bridge rules (B1-B9), Megatron-LM flags the Megatron-LM argument rules (M1-M6).\n"
      "  Each finding shows its severity, rule id, fields, message, fix-it and source (file:line at the\n"
      "  profile's commit); `recompute explain RULE_ID` tells more about a rule.\n"
      "  --json prints {\"findings\": [...], \"resolved\": recipe after Megatron's adjustments, ...}.\n"
      "  --overrides takes arguments up to the next one that starts with --; --mlm-args takes the rest.\n"
      "  Exit status: 0 no error finding, 1 an error finding, 2 the input is unusable.\n";

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
}

int validateMain(const std::vector<std::string>& rawArgs)
{
    // --help before --mlm-args is ours; after it, the flags are Megatron-LM's.
    const auto mlm = std::find(rawArgs.begin(), rawArgs.end(), "--mlm-args");
    if (rawArgs.empty() || std::any_of(rawArgs.begin(), mlm, [](const std::string& a) {
            return a == "--help" || a == "-h";
        })) {
        (rawArgs.empty() ? std::cerr : std::cout) << kUsage;
        return rawArgs.empty() ? 2 : 0;
    }
    // Megatron-LM has no flag spelled exactly --json, so it is ours wherever it stands.
    bool json = false;
    std::vector<std::string> args;
    for (const auto& a : rawArgs) {
        if (a == "--json")
            json = true;
        else
            args.push_back(a);
    }
    rs::RecipeInput input;
    try {
        std::vector<std::string> rest;
        input = rs::readRecipeInput(args, &rest);
        if (!rest.empty()) {
            std::cerr << "recompute validate: arguments: unexpected argument '" << rest.front() << "'\n"
                      << kUsage;
            return 2;
        }
    } catch (const std::exception& e) {
        std::cerr << "recompute validate: " << e.what() << "\n";
        return 2;
    }
    const rs::Validation v = rs::validate(input.recipe, input.format);
    if (json) {
        nlohmann::json out;
        out["input"] = input.origin;
        out["format"] = formatName(input.format);
        out["profile"] = rs::profileName(input.recipe.profile);
        out["has_errors"] = v.hasErrors();
        out["kept_note"] = input.note;
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

RS_REGISTER_VERB("validate", "check a recipe against Megatron's rules for a profile", validateMain);
