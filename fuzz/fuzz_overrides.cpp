// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: Megatron Bridge overrides. The input is split at '\n' into arguments, as a shell
// would hand them over; each read recipe is validated and written back as overrides.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/overrides.h"
#include "core/recipe_json.h"
#include "core/rules.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    std::vector<std::string> args(1);
    for (size_t i = 0; i < size; ++i) {
        if (data[i] == '\n')
            args.emplace_back();
        else
            args.back().push_back(static_cast<char>(data[i]));
    }
    rs::Recipe recipe;
    try {
        recipe = rs::recipeFromBridgeOverrides(args);
    } catch (const rs::RecipeError&) {
        return 0;
    }
    const rs::Validation v = rs::validate(recipe, rs::InputFormat::BridgeOverrides);
    (void)rs::recipeCanonicalText(v.resolved);
    (void)rs::recipeToBridgeOverrides(recipe);
    return 0;
}
