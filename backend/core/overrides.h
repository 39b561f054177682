// SPDX-License-Identifier: Apache-2.0
// Megatron Bridge Hydra overrides (one argv element each), as scripts/training/run_recipe.py takes them.
//
// Reading takes every section of Bridge's ConfigContainer:
// - read into the recipe: model.<field> for every modelled TransformerConfig / GPTModelProvider field
//   (model.share_embeddings_and_output_weights is the inverse of untie_embeddings_and_output_weights),
//   train.global_batch_size, train.micro_batch_size, train.train_iters, dataset.seq_length (=
//   model.seq_length), ddp.use_distributed_optimizer (optimizer.use_distributed_optimizer too),
//   ddp.grad_reduce_in_fp32, optimizer.use_precision_aware_optimizer, mixed_precision=<recipe name>,
//   comm_overlap.overlap_moe_expert_parallel_comm, rerun_state_machine.check_for_nan_in_loss;
// - kept verbatim in Recipe::extra_overrides (and written back): any other model.<field> that Megatron's
//   TransformerConfig / ModelParallelConfig / MLATransformerConfig or Bridge's GPTModelProvider has at the
//   recipe's profile, with its value checked against the field's annotation; any key of another
//   ConfigContainer section (logger.*, checkpoint.*, optimizer.*, ...);
// - errors that name the nearest name: a model.<field> that Megatron does not have, an unknown section.
// Hydra's meanings: null (any case) and ~ are null; None is the STRING 'None' (Megatron then rejects it
// for recompute_granularity: said so); true/false any case; 'quoted' and "quoted" strings; flat lists
// [a,b] (Python's repr ['a', 'b'] too). +KEY= on a key that exists is refused as Hydra refuses it;
// ++KEY= sets it; ~KEY deletes: a modelled field returns to the front end's default, and the deletion is
// kept verbatim. A whole override may arrive quoted when no shell stripped the quotes.
// A leading comment '# studio: KEY=VALUE ...' (which Bridge never sees: the shell drops it) carries our
// own settings (name, profile, memory target, run lengths, the front end, ...); other '#' elements are
// skipped.
#pragma once

#include <string>
#include <vector>

#include "core/recipe.h"

namespace rs {

// The overrides that Bridge runs as given: every field that differs from Bridge's defaults or that the
// user set (Recipe::explicit_keys), in recipe.h's order, then Recipe::extra_overrides. Our own settings
// are not among them: see studioCommentLine.
std::vector<std::string> recipeToBridgeOverrides(const Recipe& r);
// "# studio: name='...' profile=main ..." (always at least the profile).
std::string studioCommentLine(const Recipe& r);
// Reads a '# studio:' line (or its words after "# studio:") into r; throws RecipeError.
void applyStudioComment(Recipe& r, const std::string& line, const std::string& where = "studio comment");

// Throws RecipeError with where = "override N" (1-based) and field = the recipe key (dotted where nested);
// an unknown key is named as written, with the nearest known key in the message. The default base is
// Bridge's defaults at the bridge-pin profile; a base's profile picks the Megatron tables.
Recipe recipeFromBridgeOverrides(const std::vector<std::string>& args);
Recipe recipeFromBridgeOverrides(const std::vector<std::string>& args, Recipe base);

// The recipe field an override key sets ("model.hidden_size" -> "hidden_size"); "" for a key no field models.
std::string bridgeOverrideField(const std::string& key);
// Whether model.<name> is a field of Megatron's TransformerConfig (at `profile` or another profile's) or of
// Bridge's model providers: an override of it is taken (kept verbatim when no recipe field models it).
bool isBridgeModelField(const std::string& name, Profile profile);

// One line naming what was kept verbatim and not modelled ("" when nothing was).
std::string keptSettingsNote(const Recipe& r);

} // namespace rs
