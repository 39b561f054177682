// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the recipe JSON reader, then everything a read recipe goes through in `validate`
// (the rules, the canonical text and its hash, the overrides and flags writers). A RecipeError is the
// reader's answer to bad input; any other exception, a crash or a sanitizer report is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/megatron_flags.h"
#include "core/overrides.h"
#include "core/recipe_json.h"
#include "core/rules.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const std::string text(reinterpret_cast<const char*>(data), size);
    rs::Recipe recipe;
    try {
        recipe = rs::recipeFromJsonText(text, "fuzz.json");
    } catch (const rs::RecipeError&) {
        return 0;
    }
    const rs::Validation v = rs::validate(recipe, rs::InputFormat::Json);
    (void)rs::sha256Hex(rs::recipeCanonicalText(v.resolved));
    (void)rs::recipeToBridgeOverrides(recipe);
    // A value outside a flag's choices at the profile is a documented RecipeError (megatron_flags.h), as the
    // GUI's text view expects; anything else escaping is a finding. Seed:
    // corpus/.../granularity-not-a-choice.json.
    try {
        (void)rs::recipeToMegatronFlags(recipe);
    } catch (const rs::RecipeError&) {
    }
    return 0;
}
