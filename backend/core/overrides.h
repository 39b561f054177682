// SPDX-License-Identifier: Apache-2.0
// Megatron Bridge Hydra overrides (one argv element each), as scripts/training/run_recipe.py takes them:
// - model.<field>=<value>: every Megatron model field, attention_backend too (Megatron's AttnBackend:
//   local -> unfused, auto -> fused);
// - comm_overlap.overlap_moe_expert_parallel_comm=true, rerun_state_machine.check_for_nan_in_loss=false;
// - mixed_precision=<recipe name>: checked against findMixedPrecision, stored by name (B8 applies it later);
// - train.train_iters=<n>: Bridge's own place for the run length;
// - studio.<field>=<value>: ours, which Bridge has no place for: name, profile, memory_target_gb,
//   warmup_iters, te_version, checkpoint_activations_flag, recompute_activations.
// Reading also accepts our fields under model., and train_iters / attention_backend under studio.
// Values: null (None), true/false (any case), integers, floats, 'quoted' or "quoted" strings, bare strings,
// and flat lists in Hydra's form [core_attn,moe_act] or Python's repr form ['core_attn', 'moe_act'], [] too.
// A whole override may arrive quoted ('model.recompute_modules=[a,b]') when no shell stripped the quotes.
// Hydra's +key= and ++key= prefixes are accepted (every field exists); ~key (delete) is an error.
#pragma once

#include <string>
#include <vector>

#include "core/recipe.h"

namespace rs {

// Only the fields that differ from Recipe{}, in recipe.h's order; recipeFromBridgeOverrides reads them
// back to the same recipe.
std::vector<std::string> recipeToBridgeOverrides(const Recipe& r);
// Throws RecipeError with where = "override N" (1-based) and field = the recipe key (dotted where nested);
// an unknown key is named as written, with the nearest known key in the message.
Recipe recipeFromBridgeOverrides(const std::vector<std::string>& args, Recipe base = Recipe {});

} // namespace rs
