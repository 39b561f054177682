// SPDX-License-Identifier: Apache-2.0
#include "core/recipe_input.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "core/megatron_flags.h"
#include "core/overrides.h"
#include "core/recipe_json.h"

namespace rs {

namespace {

bool endsWithJson(const std::string& arg)
{
    if (arg.size() <= 5)
        return false;
    std::string tail = arg.substr(arg.size() - 5);
    for (char& c : tail)
        c = char(std::tolower(static_cast<unsigned char>(c)));
    return tail == ".json";
}

std::string readFile(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw RecipeError("", path, std::string("cannot read the recipe file: ") + std::strerror(errno));
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

} // namespace

RecipeInput readRecipeInput(const std::vector<std::string>& args, std::vector<std::string>* rest)
{
    std::optional<std::string> profile;
    std::optional<RecipeInput> input;
    // The profile picks Megatron's tables, so the readers need it first: it may come after the recipe.
    Profile readProfile = Profile::BridgePin;
    for (std::size_t i = 0; i < args.size() && args[i] != "--mlm-args"; ++i) {
        std::string name;
        if (args[i] == "--profile" && i + 1 < args.size())
            name = args[i + 1];
        else if (args[i].rfind("--profile=", 0) == 0)
            name = args[i].substr(std::string("--profile=").size());
        if (const auto p = profileFromName(name))
            readProfile = *p;
    }
    auto claim = [&](const std::string& origin) {
        if (input) {
            throw RecipeError("", origin,
                "a second recipe: " + input->origin
                    + " was given already (give one of FILE.json, -, "
                      "--overrides, --mlm-args)");
        }
    };

    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (arg == "--profile" || arg.rfind("--profile=", 0) == 0) {
            std::string name;
            if (arg == "--profile") {
                if (i + 1 >= args.size())
                    throw RecipeError("profile", "flag --profile", "expects a profile name");
                name = args[++i];
            } else {
                name = arg.substr(std::string("--profile=").size());
            }
            if (!profileFromName(name)) {
                std::vector<std::string> names;
                for (Profile p : allProfiles())
                    names.emplace_back(profileName(p));
                throw RecipeError("profile", "flag --profile",
                    "unknown profile '" + name + "'; allowed: " + joinNames(names));
            }
            profile = name;
        } else if (arg == "--mlm-args") {
            claim("mlm-args");
            // Everything after it is Megatron-LM's, including its own --profile flag.
            const std::vector<std::string> flags(args.begin() + std::ptrdiff_t(i) + 1, args.end());
            input = RecipeInput { recipeFromMegatronFlags(
                                      flags, frontEndDefaults(InputFormat::MegatronFlags, readProfile)),
                InputFormat::MegatronFlags, "mlm-args", "" };
            break;
        } else if (arg == "--overrides") {
            claim("overrides");
            std::vector<std::string> overrides;
            while (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0)
                overrides.push_back(args[++i]);
            input = RecipeInput { recipeFromBridgeOverrides(
                                      overrides, frontEndDefaults(InputFormat::BridgeOverrides, readProfile)),
                InputFormat::BridgeOverrides, "overrides", "" };
        } else if (arg == "-" && !input) {
            const std::string text { std::istreambuf_iterator<char>(std::cin),
                std::istreambuf_iterator<char>() };
            input = RecipeInput { recipeFromJsonText(text, "stdin"), InputFormat::Json, "stdin", "" };
        } else if (endsWithJson(arg) && arg.front() != '-' && !input) {
            input = RecipeInput { recipeFromJsonText(readFile(arg), arg), InputFormat::Json, arg, "" };
        } else if (rest) {
            rest->push_back(arg);
        } else {
            throw RecipeError("", "arguments", "unexpected argument '" + arg + "'");
        }
    }
    if (!input) {
        throw RecipeError("", "arguments",
            "no recipe given: give FILE.json, - (JSON on stdin), --overrides KEY=VALUE... or --mlm-args "
            "FLAGS...");
    }
    if (profile)
        input->recipe.profile = *profileFromName(*profile);
    input->note = keptSettingsNote(input->recipe);
    return *input;
}

} // namespace rs
