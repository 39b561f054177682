// SPDX-License-Identifier: Apache-2.0
#include "core/mixed_precision.h"

namespace rs {

const std::vector<MixedPrecisionRecipe>& mixedPrecisionRecipes()
{
    static const std::vector<MixedPrecisionRecipe> recipes;
    return recipes;
}

const MixedPrecisionRecipe* findMixedPrecision(const std::string& name)
{
    for (const MixedPrecisionRecipe& m : mixedPrecisionRecipes()) {
        if (name == m.name)
            return &m;
    }
    return nullptr;
}

} // namespace rs
