// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: Megatron-LM flags (--moe-layer-freq's list expressions included). The input is split
// at '\n' into arguments; each read recipe is validated and written back as flags.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/megatron_flags.h"
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
        recipe = rs::recipeFromMegatronFlags(args);
    } catch (const rs::RecipeError&) {
        return 0;
    }
    const rs::Validation v = rs::validate(recipe, rs::InputFormat::MegatronFlags);
    (void)rs::recipeCanonicalText(v.resolved);
    (void)rs::recipeToMegatronFlags(recipe);
    return 0;
}
