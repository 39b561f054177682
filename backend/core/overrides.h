// SPDX-License-Identifier: Apache-2.0
// Megatron Bridge Hydra overrides (one argv element each): `model.<field>=<value>` for every model field,
// `comm_overlap.overlap_moe_expert_parallel_comm=`, `rerun_state_machine.check_for_nan_in_loss=`,
// `mixed_precision=<recipe name>` (stored by name; B8 applies it later). Our own settings that Bridge has no
// place for (attention_backend, profile, memory_target_gb, warmup_iters, train_iters, name, and the other
// non-ConfigContainer fields) are written under `studio.`; reading also accepts them under `model.`.
// Values: null/None, true/false, ints, floats, [] and lists in either form ([a,b] or the repr
// ['a', 'b']), optionally quoted as a whole. Hydra's `+key=` and `++key=` prefixes are accepted.
#pragma once

#include <string>
#include <vector>

#include "core/recipe.h"

namespace rs {

// Only the fields that differ from Recipe{}.
std::vector<std::string> recipeToBridgeOverrides(const Recipe& r);
// Throws RecipeError naming the override ("override N") and, for an unknown key, the nearest known one.
Recipe recipeFromBridgeOverrides(const std::vector<std::string>& args, Recipe base = Recipe {});

} // namespace rs
