// SPDX-License-Identifier: Apache-2.0
// The recipe form's field table: every recipe key the editor shows, in the groups a user thinks in, with
// the kind of editor it needs. Keys are the recipe JSON keys (recipe_json.h), dotted for the two Bridge
// settings that Bridge nests ("comm_overlap.overlap_moe_expert_parallel_comm"). The form, the findings
// highlighting and the recipe diff all go through this one table.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include <QString>
#include <QStringList>

namespace rs::ui {

enum class FieldKind {
    Int, // QSpinBox
    OptionalInt, // QSpinBox whose lowest value reads "None"
    Double,
    OptionalDouble,
    Bool,
    Choice, // QComboBox of allowed values
    OptionalChoice, // the same with "None" first
    Text,
    OptionalText,
    TextList, // "a, b"; empty = []
    OptionalTextList, // "a, b"; empty = None, "[]" = explicit empty list
    IntList, // moe_layer_freq: "1" or "[0,1,1]"
    Profile, // rs::Profile by name
    RecomputeModules, // the label checklist (its own widget)
};

struct FieldSpec {
    const char* key; // recipe JSON key, dotted when nested
    const char* group; // "Model", "Parallelism", ...
    const char* section; // a sub-heading inside the group, or "" for none
    FieldKind kind;
    const char* label;
    const char* tip; // what it means and where Megatron defines it
    std::vector<const char*> choices; // for Choice kinds (used when rs::allowedValues has none)
};

const std::vector<FieldSpec>& recipeFields();
const FieldSpec* findField(const std::string& key);
// The groups in display order.
QStringList fieldGroups();

// A finding's field name (plain or dotted) → the form key it highlights ("" when none).
std::string formKeyForFindingField(const std::string& findingField);

// Reads and writes one (possibly dotted) key of a recipe JSON object.
nlohmann::json jsonValueAt(const nlohmann::json& recipeJson, const std::string& dottedKey);
void setJsonValueAt(nlohmann::json& recipeJson, const std::string& dottedKey, const nlohmann::json& value);
// Merges a fix-it patch into a recipe JSON object: each key (plain or dotted) replaces its value, objects
// merge recursively, and null stays null (null is "unset", never "remove the key": an absent optional
// would come back at its default, e.g. q_lora_rank=512).
void applyRecipePatch(nlohmann::json& recipeJson, const nlohmann::json& patch);

} // namespace rs::ui
