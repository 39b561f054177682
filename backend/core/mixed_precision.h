// SPDX-License-Identifier: Apache-2.0
// Megatron Bridge's mixed_precision recipe names and the precision settings each one sets
// (docs/rules.md#b8). The rules engine applies the mapping; readers only validate the name.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace rs {

struct MixedPrecisionRecipe {
    const char* name;
    bool bf16;
    bool fp16;
    std::optional<std::string> fp8;
    std::string fp8_recipe;
    std::optional<std::string> fp4;
    bool fp8_param_gather = false; // copied onto the model (fp8_param) and DDP (mixed_precision.py)
};

const MixedPrecisionRecipe* findMixedPrecision(const std::string& name);
const std::vector<MixedPrecisionRecipe>& mixedPrecisionRecipes();

} // namespace rs
