// SPDX-License-Identifier: Apache-2.0
// Megatron-LM command-line flags (pretrain_gpt.py's argparse spellings) to and from a recipe.
// Reading accepts `--flag value` and `--flag=value`; list flags (--recompute-modules, --cuda-graph-modules,
// --moe-layer-freq as a list) take the following non-flag arguments. Flags that cannot change activation
// memory or recompute (--lr, --data-path, --save, ...) are ignored with their value (knownIrrelevantFlags);
// any other unknown flag is a RecipeError naming the nearest known flag.
//
// Lossy cases of recipe -> flags -> recipe (megatron-rules.md (i)):
// - recompute_granularity=selective with recompute_modules=[] cannot be written: Megatron-LM's
//   --recompute-modules needs at least one label, and the control is the absence of
//   --recompute-granularity. recipeToMegatronFlags throws RecipeError for it.
// - Bridge-only settings (mixed_precision, check_for_nan_in_loss) and our own settings (profile,
//   memory_target_gb, warmup_iters, name, attention_backend is written as Megatron's enum) have no flag:
//   they are not written and come back at the base recipe's values.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/recipe.h"

namespace rs {

std::vector<std::string> recipeToMegatronFlags(const Recipe& r);
Recipe recipeFromMegatronFlags(const std::vector<std::string>& args, Recipe base = Recipe {});
// Flags accepted and ignored, each with the number of values it takes (0 or 1).
const std::vector<std::pair<std::string, int>>& knownIrrelevantFlags();

} // namespace rs
