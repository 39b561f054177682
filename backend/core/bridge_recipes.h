// SPDX-License-Identifier: Apache-2.0
// Megatron Bridge's recipes by name: every recipe function of Bridge at the profiles' Bridge commit, with
// the ConfigContainer it builds (resources/bridge/recipes-067f987d.json, written by
// scripts/gen_bridge_recipe_table.py from Bridge's own source, its Hugging Face architectures from
// resources/bridge/hf-configs.json), linked into the program as data.
//
// bridgeJob() is the job as its user defines it: the recipe, the overrides on top (Bridge's order, Hydra's
// meanings: overrides.h), the launch's world size, then what Bridge's setup() does before anything runs
// (training/config.py runtime_config_update): the mixed-precision preset copied onto the model, optimizer
// and DDP configs, and the data-parallel size from the world size. The padded vocabulary and the
// precision-aware optimizer's dtypes are the estimator's and the worker's, from the recipe's fields.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/recipe.h"

namespace rs {

struct BridgeRecipeEntry {
    std::string name; // the function's name, as a user types it
    std::string source; // file:line of its def at the Bridge commit
    std::string kind; // text | vision | audio | diffusion | other
    std::string family;
    std::optional<int> gpus; // the world size the name states ("..._8gpu_...")
    std::string hf_model; // the Hugging Face model its architecture comes from ("" when none)
    bool hf_confirmed = true; // the HF values are the config itself (false: assembled from transcriptions)
    std::string provider; // the model provider class ("" when it could not be built)
    std::vector<std::string> unresolved; // what the table could not resolve, and why
    // Where Bridge's conversion of its HF model builds a layer kind the estimate does not (hf-configs.json's
    // architecture_not_modelled): those layers in words and the class that has them; "" otherwise.
    std::string not_modelled_layers;
    std::string not_modelled_class;
};

// The Bridge commit the table was generated at (the profiles' bridge_commit).
std::string bridgeRecipeCommit();
// Every recipe, in the table's order (names may repeat when two modules define one; aliases are apart).
const std::vector<BridgeRecipeEntry>& bridgeRecipes();
// By name or alias; nullptr when Bridge has none.
const BridgeRecipeEntry* findBridgeRecipe(std::string_view name);
// Up to `n` names nearest to `name` (edit distance, then a shared prefix), for "did you mean".
std::vector<std::string> bridgeRecipeSuggestions(std::string_view name, std::size_t n = 3);

struct BridgeJob {
    Recipe recipe; // InputFormat::BridgeOverrides's recipe, ready for validate()
    std::string recipe_name; // the entry's name (an alias resolved)
    int world_size = 1;
    std::vector<std::string> notes; // what was set from where, and what Bridge's setup changed
};

// The job `name` builds with `overrides` on top, launched on `world_size` GPUs (nullopt: the number the
// name states, else the smallest world the layout needs: TP x PP x CP), on the GPU the name states (its
// gpu_compute_capability, gpus.h; recipe.h's default when the name states none the table knows). Throws
// RecipeError with field "recipe" for an unknown name (naming the nearest ones), a recipe that is not a text
// LLM, one whose architecture has a layer kind the estimate does not model (naming it and its class), or one
// whose architecture the table could not resolve; field "gpus" for a world size the layout does not divide;
// the overrides' own errors as recipeFromBridgeOverrides throws them.
BridgeJob bridgeJob(std::string_view name, std::optional<int> world_size = std::nullopt,
    const std::vector<std::string>& overrides = {}, Profile profile = Profile::BridgePin);

} // namespace rs
