// SPDX-License-Identifier: Apache-2.0
// The guide's matched comparison, in one place: the explicit [] control of a recipe, the candidate for one
// recompute choice, which recipe fields may differ between matched runs, whether two runs are matched (and
// why not), and the deltas against the control. The store, the CLI and the studio all call these, so a
// `recompute sweep` and the launch page build the same control (same recipe hash) and the runs page and
// the reports agree on every delta. Pure C++ (nlohmann/json for the recipe text).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/recipe.h"

namespace rs {

// What a matched comparison varies: the recompute choice of one run.
struct RecomputeChoice {
    std::string granularity = "selective"; // selective | full
    std::vector<std::string> modules; // selective: the recompute_modules labels ([]: the control)
    std::string method; // full: uniform | block
    int num_layers = 0; // full: recompute_num_layers
    // The guide's label: "[]", "moe_act", "layernorm, moe_act" (as given), "full uniform 1".
    std::string label() const;
    // The same choice (module order does not matter).
    bool sameAs(const RecomputeChoice& other) const;
};

// "moe_act" | "layernorm,moe_act" | "full:uniform:1" | "full:block:2". Throws std::invalid_argument with a
// message that quotes `text` and says what is allowed. "[]" is refused: the control is not a candidate.
RecomputeChoice parseRecomputeChoice(const std::string& text);
// The same spelling, "[]" (the control) included; nullopt where parseRecomputeChoice would throw.
std::optional<RecomputeChoice> readChoiceSpelling(const std::string& text);
// The inverse: "[]", "layernorm,moe_act", "full:uniform:1" (what --modules and the estimator's JSON use).
std::string choiceSpelling(const RecomputeChoice& choice);
// The recipe's own choice; recompute_granularity None (no recompute) reads as [] like the explicit control.
RecomputeChoice recipeChoice(const Recipe& recipe);

// The explicit no-recompute control of a recipe (the guide's `[]`): recompute_granularity=selective,
// recompute_modules=[], no recompute_method / recompute_num_layers, and every other way a recipe asks for
// recompute switched off (distribute_saved_activations, the deprecated moe_layer_recompute of R19, the
// --recompute-activations of M2). Everything else, the name included, is the recipe's.
Recipe controlRecipe(const Recipe& recipe);
// True when the recipe is its own control (controlRecipe(recipe) == recipe).
bool isControlRecipe(const Recipe& recipe);
// The candidate for one recompute choice: the recipe's control with only that choice set, so the two
// differ in nothing but the recompute choice.
Recipe candidateRecipe(const Recipe& recipe, const RecomputeChoice& choice);

// The recipe keys (JSON, Megatron names) that may differ between matched runs: the recompute choice itself,
// and what is not part of the workload (name, memory target, schema version).
const std::vector<std::string>& fieldsThatMayDiffer();
bool mayDifferBetweenMatchedRuns(const std::string& key);

// What is known about one run for the match check: named facts compared one by one (shape, precision,
// parallelism, device, revisions; nullopt = unknown), and the full recipe when it is stored.
struct RunFacts {
    std::int64_t run_id = 0;
    std::vector<std::pair<std::string, std::optional<std::string>>> fields;
    std::optional<nlohmann::json> recipe; // an object with Megatron field names
    // Equal non-empty keys say the recipes match without reading them (the store's recipe_match_key).
    std::string recipe_match_key;
};

struct MatchResult {
    bool matched = false;
    std::vector<std::string> reasons; // one line per differing field: "seq_length: 4096 vs 8192"
    std::vector<std::string> notes; // what could not be checked
};

// Whether `run` may be compared with `control`: every fact equal (the run's facts are looked up by name in
// the control's; a fact only one side has counts as unknown on the other) and, when both recipes are
// known, every recipe key that is not in fieldsThatMayDiffer().
MatchResult matchRuns(const RunFacts& run, const RunFacts& control);

// The measurements the deltas are computed from.
struct MeasuredRun {
    std::optional<std::int64_t> peak_allocated; // bytes
    std::string peak_note; // where the peak was taken ("after iteration 2"); "" unknown
    std::optional<double> steady_step_ms;
};

struct ControlDeltas {
    std::optional<double> allocated_pct; // (run - control) / control * 100
    std::optional<double> time_pct;
    std::vector<std::string> notes; // why a delta is missing although both values are known
};

// (value - control) / control * 100; nullopt when control is not positive.
std::optional<double> percentAgainst(double value, double control);
// The guide's "Allocated vs []" and "Time vs []" of a matched run. Peaks taken at different points (after
// iteration 1 vs 2) are not one quantity: no allocated delta then, with a note.
ControlDeltas deltasAgainstControl(const MeasuredRun& run, const MeasuredRun& control);

} // namespace rs
