// SPDX-License-Identifier: Apache-2.0
#include "core/overrides.h"

#include "core/recipe_json.h"

namespace rs {

std::vector<std::string> recipeToBridgeOverrides(const Recipe&)
{
    return {};
}

Recipe recipeFromBridgeOverrides(const std::vector<std::string>& args, Recipe base)
{
    if (!args.empty())
        throw RecipeError("", "override 1", "not implemented yet");
    return base;
}

} // namespace rs
