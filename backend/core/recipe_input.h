// SPDX-License-Identifier: Apache-2.0
// The recipe arguments shared by `recompute validate`, `recompute run` and the worker:
//   FILE.json | - (stdin) | --overrides ARGS... | --mlm-args ARGS... | --recipe NAME [--overrides ARGS...]
//   plus  --profile P (or --profile=P), --gpus N (or --nodes N --gpus-per-node M)
// - --recipe NAME: a Megatron Bridge recipe by name (bridge_recipes.h), the base that --overrides change;
//   --gpus: the launch's world size (DP = world / (TP x PP x CP)), for any recipe.
// - FILE.json: the first argument that ends in ".json" (any case) and does not start with '-'; a later
//   one goes to *rest (so a verb's own `--report out.json` after the recipe stays the verb's).
// - -: JSON on stdin, when no recipe was given before it.
// - --overrides consumes arguments until the next one that starts with "--" (Bridge Hydra overrides).
// - --mlm-args consumes everything after it (Megatron-LM has its own --profile flag).
// - --profile may appear anywhere before --mlm-args; it overrides the recipe's own profile.
// Arguments it does not own go to *rest, in order (rest may be null: then they are an error).
#pragma once

#include <string>
#include <vector>

#include "core/recipe.h"

namespace rs {

struct RecipeInput {
    Recipe recipe;
    InputFormat format;
    std::string origin; // file path, "stdin", "overrides" or "mlm-args"
    std::string
        note; // the settings kept verbatim and not modelled, in one line (keptSettingsNote); "" if none
    // A Bridge recipe by name: what was taken from where and what Bridge's setup() changed
    // (bridge_recipes.h).
    std::vector<std::string> setup_notes;
};

// Throws RecipeError: no recipe given, --overrides/--mlm-args after another recipe, unknown profile
// (names the allowed ones), unreadable file, and every reader's errors.
RecipeInput readRecipeInput(const std::vector<std::string>& args, std::vector<std::string>* rest);

} // namespace rs
