// SPDX-License-Identifier: Apache-2.0
#include "core/megatron_flags.h"

#include "core/recipe_json.h"

namespace rs {

std::vector<std::string> recipeToMegatronFlags(const Recipe&)
{
    return {};
}

Recipe recipeFromMegatronFlags(const std::vector<std::string>& args, Recipe base)
{
    if (!args.empty())
        throw RecipeError(args.front(), "flag " + args.front(), "not implemented yet");
    return base;
}

const std::vector<std::pair<std::string, int>>& knownIrrelevantFlags()
{
    static const std::vector<std::pair<std::string, int>> flags;
    return flags;
}

} // namespace rs
