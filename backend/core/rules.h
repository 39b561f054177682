// SPDX-License-Identifier: Apache-2.0
// The validation rules engine: every Megatron Core / Megatron Bridge rule that can be decided from a
// recipe (docs/rules.md), evaluated in Megatron's own order with Megatron's own messages, plus
// the guide's advice that no Megatron check carries (RS rules). The table of rules lives in one file,
// rules_table.cpp, the way transformer_config.py keeps its checks in one __post_init__.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/recipe.h"
#include "core/recompute_labels.h"

namespace rs {

enum class Severity { Error, Warning, Note, Adjustment };
const char* severityName(Severity s); // "error", "warning", "note", "adjustment"

// patch: recipe JSON keys -> new value (null = unset). Applying a fix-it = merge the patch into
// recipeToJson(r), then recipeFromJson.
struct FixIt {
    std::string description;
    nlohmann::json patch;
};

struct Finding {
    std::string rule_id;
    Severity severity = Severity::Error;
    std::vector<std::string> fields; // recipe keys the finding points at
    std::string message; // Megatron's exact words where it has them (placeholders rendered as Python would)
    std::optional<FixIt> fixit;
    std::string source; // file:line at the profile's commit
};

struct Validation {
    Recipe resolved; // after Megatron's silent adjustments (R10, R19, R25, R26, R29, B1, B8, M2, M5, M6 ...)
    std::vector<Finding> findings; // in Megatron's evaluation order
    bool hasErrors() const;
    // The first error in evaluation order, the one Megatron raises; nullptr without one.
    const Finding* firstError() const;
};

// Validates under recipe.profile. The format selects the front-end rules: M1-M6 for MegatronFlags,
// B1-B9 for BridgeOverrides, only the MCore rules for Json (a JSON recipe's mixed_precision is not applied:
// RS20 says so). Findings come in Megatron's evaluation order; Megatron stops at its first error, the engine
// goes on, so the first Error listed is the one Megatron raises. Placeholders render as Python's f-strings
// do: True/False, None, str() of strings, list reprs ['a', 'b'], and set reprs {'a', 'b'} in a fixed order
// (Python's own order is hash-dependent): a set built from the recipe keeps the recipe's order, a set
// literal of the source keeps the source's order (R11's allowed labels, R24b's offload modules).
// `resolved` carries every adjustment; deprecated spellings are migrated there (moe_layer_recompute,
// enable_cuda_graph, external_cuda_graph, cuda_graph_scope are cleared once their effect is applied), so
// validating `resolved` again adjusts nothing.
Validation validate(const Recipe& recipe, InputFormat format = InputFormat::Json);

nlohmann::json findingToJson(const Finding& f);

// Where a rule's wording or source differs by profile.
struct RuleVariant {
    std::vector<Profile> profiles;
    std::string message;
    std::string source;
};

struct RuleInfo {
    std::string id;
    Severity severity = Severity::Error;
    std::vector<Profile> profiles; // the profiles where the rule exists
    std::vector<std::string> fields;
    std::string summary; // the condition in words, one line per row of the rule
    std::string message; // the message (main's, or the first profile's) with {x} placeholders
    std::string source; // file:line (main) [pin] [skill] as the reference gives them
    std::vector<RuleVariant> variants; // per profile where it differs from message/source
    std::string fixit; // the fix-it in words, empty when there is none
    std::string reason; // for RS rules: why, from the guide
};

const std::vector<RuleInfo>& ruleCatalogue();
const RuleInfo* findRule(const std::string& id);
// The rules only one front end gets, as a range of their ids ("B1-B12" for Bridge overrides, "M1-M12" for
// Megatron-LM flags; "" for JSON, which gets none of its own): what the interfaces name beside a front end.
std::string frontEndRuleRange(InputFormat format);

// The recompute labels: which exist on a profile, and whether one has any effect on this architecture.
// Their facts are the label table's (recompute_labels.h).
const std::vector<std::string>& allowedRecomputeModules(Profile p);
LabelEffect recomputeLabelEffect(const Recipe& r, const std::string& label);
// The label of profile `p` a mistyped `label` most likely means ("core_attn" for "core_atn"): the nearest by
// edit distance when it is within a third of the label's length (at least 2); nullopt for a label the
// profile knows or one no label is near. R11's fix-it and the studio's "did you mean" both read it.
std::optional<std::string> suggestedRecomputeLabel(const std::string& label, Profile p);

} // namespace rs
