// SPDX-License-Identifier: Apache-2.0
// The recipe arguments shared by `recompute validate`, `recompute run` and the worker:
//   FILE.json | - (stdin) | --overrides ARGS... | --mlm-args ARGS...   plus  --profile P
// --profile may appear anywhere before --mlm-args; --mlm-args consumes everything after it (Megatron-LM has
// its own --profile flag). --overrides consumes arguments until the next one that starts with "--".
// Arguments it does not own go to *rest, in order. A --profile given here overrides the recipe's own.
#pragma once

#include <string>
#include <vector>

#include "core/recipe.h"

namespace rs {

struct RecipeInput {
    Recipe recipe;
    InputFormat format;
    std::string origin; // file path, "stdin", "overrides" or "mlm-args"
};

// Throws RecipeError: no recipe given, two recipes given, unknown profile (names the allowed ones),
// unreadable file, and every reader's errors.
RecipeInput readRecipeInput(const std::vector<std::string>& args, std::vector<std::string>* rest);

} // namespace rs
