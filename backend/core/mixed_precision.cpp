// SPDX-License-Identifier: Apache-2.0
// The table follows Megatron Bridge's training/mixed_precision.py (MIXED_PRECISION_RECIPES; docs/rules.md
// B8). MixedPrecisionConfig.fp8_recipe defaults to "tensorwise", not MCore's "delayed", so the recipes
// without fp8 carry "tensorwise" too: B8 overwrites the model's fp8_recipe with it. The last column is
// fp8_param_gather (true in every fp8 recipe but the subchannel ones).
#include "core/mixed_precision.h"

#include <algorithm>

namespace rs {

const std::vector<MixedPrecisionRecipe>& mixedPrecisionRecipes()
{
    static const std::vector<MixedPrecisionRecipe> recipes = {
        { "bf16_mixed", true, false, std::nullopt, "tensorwise", std::nullopt },
        { "fp16_mixed", false, true, std::nullopt, "tensorwise", std::nullopt },
        { "bf16_with_fp8_delayed_scaling_mixed", true, false, std::string("hybrid"), "delayed", std::nullopt,
            true },
        { "fp16_with_fp8_delayed_scaling_mixed", false, true, std::string("hybrid"), "delayed", std::nullopt,
            true },
        { "bf16_with_mxfp8_mixed", true, false, std::string("e4m3"), "mxfp8", std::nullopt, true },
        { "fp16_with_mxfp8_mixed", false, true, std::string("e4m3"), "mxfp8", std::nullopt, true },
        { "bf16_with_fp8_current_scaling_mixed", true, false, std::string("hybrid"), "tensorwise",
            std::nullopt, true },
        { "nemotron_h_bf16_with_fp8_current_scaling_mixed", true, false, std::string("hybrid"), "tensorwise",
            std::nullopt, true },
        // The one current-scaling recipe that Bridge gives blockwise (B8).
        { "nanov2_bf16_with_fp8_current_scaling_mixed", true, false, std::string("hybrid"), "blockwise",
            std::nullopt, true },
        { "fp16_with_fp8_current_scaling_mixed", false, true, std::string("hybrid"), "tensorwise",
            std::nullopt, true },
        { "bf16_with_fp8_subchannel_scaling_mixed", true, false, std::string("hybrid"), "blockwise",
            std::nullopt },
        { "fp16_with_fp8_subchannel_scaling_mixed", false, true, std::string("hybrid"), "blockwise",
            std::nullopt },
        // Bridge sets fp8_recipe=None here; with fp8 unset no rule reads it, and the recipe's field is a
        // string, so the MixedPrecisionConfig default stands in.
        { "bf16_with_nvfp4_mixed", true, false, std::nullopt, "tensorwise", std::string("e2m1") },
        { "nemotron_3_super_bf16_with_nvfp4_mixed", true, false, std::nullopt, "tensorwise",
            std::string("e2m1") },
    };
    return recipes;
}

const MixedPrecisionRecipe* findMixedPrecision(const std::string& name)
{
    // Bridge registers every name with hyphens too ("bf16-mixed") and looks names up with '-' -> '_'.
    std::string key = name;
    std::replace(key.begin(), key.end(), '-', '_');
    for (const MixedPrecisionRecipe& m : mixedPrecisionRecipes()) {
        if (key == m.name)
            return &m;
    }
    return nullptr;
}

} // namespace rs
