// SPDX-License-Identifier: Apache-2.0
// THE recompute label table: one row per label of `recompute_modules` that any profile knows, with every
// fact the code decides on (docs/rules.md "Recompute labels"; the reference's catalogue (c)). The rules,
// the estimator, the advisor, the step statistics, the studio and the worker read a label's facts here;
// each of them implements its part of a label by name, and recomputeLabelCoverage() (core) and
// engine::builtRecomputeLabels() (tests/engine) say which part a row still lacks.
//
// Adding a label: its name in the profile rows that know it (profiles.cpp, the source's order), one row
// in recompute_labels.cpp, then each piece the coverage test asks for: a rule that decides where it acts,
// the estimator's region (or a reason it has none), the worker's checkpoint (or a reason, in the row).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/recipe.h"

namespace rs {

// Megatron's two kinds of checkpoint (the reference's catalogue (c)): a normal checkpoint keeps the
// region's inputs and reruns it in backward (tensor_parallel.checkpoint); an output-discard one runs the
// region without grad, frees its outputs and rebuilds them from a hook (CheckpointWithoutOutput).
enum class CheckpointKind { Normal, OutputDiscard };

// Does a label act on this recipe's model (rules.h's recomputeLabelEffect answers through it)?
struct LabelEffect {
    bool exists = false; // the recipe's profile knows the label (R11)
    bool has_effect = false;
    std::string reason;
};

struct RecomputeLabel {
    std::string_view name; // as recompute_modules spells it
    CheckpointKind kind = CheckpointKind::Normal;
    std::string_view what; // the region it checkpoints, in Megatron's module names
    // The label whose region encloses this one's ("moe" for moe_act and shared_experts): with both given,
    // the inner one runs inside the outer replay and checkpoints nothing of its own.
    std::string_view parent;
    // The worker's peak-attribution regions this label recomputes (the advisor names the label from them).
    std::vector<std::string_view> worker_regions;
    // How much of a layer the label replays, for ties inside the noise (narrowest first; step_stats.h).
    int boundary_width = 0;
    std::vector<std::string_view> rules; // the rule ids that decide where it is allowed and acts
    // Whether it acts on this recipe's model (the recipe's profile knows it: the caller checked R11).
    LabelEffect (*effect)(const Recipe&) = nullptr;
    // Empty where the estimator has a region for the label (estimatorModelsLabel); else why not.
    std::string_view not_estimated;
    // Empty where the worker builds its checkpoint (engine::builtRecomputeLabels); else why not.
    std::string_view not_built;
    // The step-time model's regions (step_time.h) its replay reruns in backward: the forward work of each
    // again, and for an output-discard label the copy of the outputs back into their storage. Needed where
    // the estimator models the label.
    std::vector<std::string_view> replays = {};
};

// Every label any profile knows, in the reference's catalogue order.
const std::vector<RecomputeLabel>& recomputeLabels();
const RecomputeLabel* findRecomputeLabel(std::string_view name);
// The profiles whose R11 set holds the label, in profile-table order.
std::vector<Profile> profilesKnowing(std::string_view label);

// recompute_modules as Megatron reads it: unset means ["core_attn"] (R10); [] is the explicit control.
std::vector<std::string> effectiveRecomputeModules(const Recipe& r);
inline constexpr std::string_view kDefaultRecomputeLabel = "core_attn";

// The peak-attribution region's label ("input_layernorm" -> "layernorm"), or "" when no label
// recomputes it.
std::string recomputeLabelOfRegion(std::string_view region);

// Is this norm of a layer a real module that `layernorm` can checkpoint (RT1)? Under the Transformer Engine
// spec a norm is fused into the next linear (TELayerNormColumnParallelLinear, the norm an IdentityOp) except
// MLA's input_layernorm and the MoE layers' pre_mlp_layernorm; the local spec builds both; a hybrid stack
// is TE's spec always. `pre_mlp`: pre_mlp_layernorm, else input_layernorm.
bool layernormIsModule(const Recipe& r, bool moe_layer, bool pre_mlp);

// What a table lacks, one sentence per missing piece ("gdn: no row"; "mhc: rule R99 does not exist";
// "x: the estimator has no region and the row gives no reason"). `labels`: the label names to check (every
// profile's R11 set by default). Empty for the real table.
std::vector<std::string> recomputeLabelCoverage(
    const std::vector<RecomputeLabel>& table, const std::vector<std::string>& labels);
std::vector<std::string> recomputeLabelCoverage();

} // namespace rs
