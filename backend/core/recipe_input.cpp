// SPDX-License-Identifier: Apache-2.0
#include "core/recipe_input.h"

#include "core/recipe_json.h"

namespace rs {

RecipeInput readRecipeInput(const std::vector<std::string>&, std::vector<std::string>*)
{
    throw RecipeError("", "arguments", "not implemented yet");
}

} // namespace rs
