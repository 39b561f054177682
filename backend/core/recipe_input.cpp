// SPDX-License-Identifier: Apache-2.0
#include "core/recipe_input.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "core/bridge_recipes.h"
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
    // Megatron Bridge's recipe by name (--recipe NAME, the base the overrides change) and the launch's
    // world size (--gpus N, or --nodes N x --gpus-per-node M): read first, as the profile is.
    std::optional<std::string> bridgeRecipe;
    std::optional<int> gpus, nodes, gpusPerNode;
    const auto intArg = [](const std::string& flag, const std::string& text) {
        std::size_t used = 0;
        int n = 0;
        try {
            n = std::stoi(text, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used != text.size() || text.empty() || n < 1)
            throw RecipeError(flag.substr(2), "flag " + flag,
                "'" + text + "' is not a number of GPUs (a whole number from 1 to 2147483647)");
        return n;
    };
    for (std::size_t i = 0; i < args.size() && args[i] != "--mlm-args"; ++i) {
        for (const char* flag : { "--recipe", "--gpus", "--nodes", "--gpus-per-node" }) {
            const std::string f = flag;
            std::optional<std::string> value;
            if (args[i] == f) {
                if (i + 1 >= args.size())
                    throw RecipeError(f.substr(2), "flag " + f, "expects a value");
                value = args[i + 1];
            } else if (args[i].rfind(f + "=", 0) == 0) {
                value = args[i].substr(f.size() + 1);
            }
            if (!value)
                continue;
            if (f == "--recipe")
                bridgeRecipe = *value;
            else if (f == "--gpus")
                gpus = intArg(f, *value);
            else if (f == "--nodes")
                nodes = intArg(f, *value);
            else
                gpusPerNode = intArg(f, *value);
        }
    }
    if ((nodes || gpusPerNode) && gpus)
        throw RecipeError("gpus", "flag --gpus", "give --gpus N or --nodes N --gpus-per-node M, not both");
    if (nodes && gpusPerNode) {
        if (int64_t(*nodes) * *gpusPerNode > INT32_MAX)
            throw RecipeError(
                "gpus", "flag --nodes", "--nodes x --gpus-per-node is more GPUs than can be counted");
        gpus = *nodes * *gpusPerNode;
    } else if (nodes || gpusPerNode) {
        throw RecipeError(nodes ? "gpus_per_node" : "nodes", nodes ? "flag --nodes" : "flag --gpus-per-node",
            "the world size is --nodes x --gpus-per-node: give both (or --gpus N)");
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
        bool ours = false; // read above
        for (const char* flag : { "--recipe", "--gpus", "--nodes", "--gpus-per-node" }) {
            if (arg == flag) {
                ++i;
                ours = true;
            } else if (arg.rfind(std::string(flag) + "=", 0) == 0) {
                ours = true;
            }
        }
        if (ours)
            continue;
        if (arg == "--overrides" && bridgeRecipe) {
            // The recipe's own overrides: the base is the named recipe.
            std::vector<std::string> overrides;
            while (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0)
                overrides.push_back(args[++i]);
            claim("recipe " + *bridgeRecipe);
            BridgeJob job = bridgeJob(*bridgeRecipe, gpus, overrides, readProfile);
            input = RecipeInput { std::move(job.recipe), InputFormat::BridgeOverrides,
                "recipe " + job.recipe_name, "", {} };
            input->setup_notes = std::move(job.notes);
            continue;
        }
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
                InputFormat::MegatronFlags, "mlm-args", "", {} };
            break;
        } else if (arg == "--overrides") {
            claim("overrides");
            std::vector<std::string> overrides;
            while (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0)
                overrides.push_back(args[++i]);
            input = RecipeInput { recipeFromBridgeOverrides(
                                      overrides, frontEndDefaults(InputFormat::BridgeOverrides, readProfile)),
                InputFormat::BridgeOverrides, "overrides", "", {} };
        } else if (arg == "-" && !input) {
            const std::string text { std::istreambuf_iterator<char>(std::cin),
                std::istreambuf_iterator<char>() };
            input = RecipeInput { recipeFromJsonText(text, "stdin"), InputFormat::Json, "stdin", "", {} };
        } else if (endsWithJson(arg) && arg.front() != '-' && !input) {
            input = RecipeInput { recipeFromJsonText(readFile(arg), arg), InputFormat::Json, arg, "", {} };
        } else if (rest) {
            rest->push_back(arg);
        } else {
            throw RecipeError("", "arguments", "unexpected argument '" + arg + "'");
        }
    }
    if (!input && bridgeRecipe) {
        BridgeJob job = bridgeJob(*bridgeRecipe, gpus, {}, readProfile);
        input = RecipeInput { std::move(job.recipe), InputFormat::BridgeOverrides,
            "recipe " + job.recipe_name, "", {} };
        input->setup_notes = std::move(job.notes);
    } else if (input && bridgeRecipe && input->origin.rfind("recipe ", 0) != 0) {
        throw RecipeError("recipe", "flag --recipe",
            "--recipe names the Bridge recipe that --overrides change; it takes no " + input->origin
                + " (give --recipe NAME [--overrides ...] alone)");
    } else if (input && gpus && input->origin.rfind("recipe ", 0) != 0) {
        // Any recipe: DP follows from the world size as Bridge and Megatron derive it.
        Recipe& r = input->recipe;
        const int mp = std::max(1, r.tensor_model_parallel_size) * std::max(1, r.pipeline_model_parallel_size)
            * std::max(1, r.context_parallel_size);
        if (*gpus % mp != 0)
            throw RecipeError("gpus", "flag --gpus",
                std::to_string(*gpus) + " GPUs cannot hold the layout: TP x PP x CP = " + std::to_string(mp)
                    + " must divide the world size");
        r.data_parallel_size = *gpus / mp;
        markExplicit(r, "data_parallel_size");
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
