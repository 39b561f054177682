// SPDX-License-Identifier: Apache-2.0
// The recipe as JSON: Megatron's field names as keys, with "schema_version", the two Bridge-only settings
// as Bridge nests them ("comm_overlap": {"overlap_moe_expert_parallel_comm": ...},
// "rerun_state_machine": {"check_for_nan_in_loss": ...}), the profile by its name. Reading is strict:
// an unknown key, a wrong type or a value outside an enum-like field's allowed set is a RecipeError that
// names the field (an unknown key also names the nearest known one, by edit distance); a key given twice
// is an error too, so nothing is silently dropped. "schema_version" may be absent (then it is the current
// one); a newer one is an error that says so. Unset keys keep Recipe{}'s defaults (Megatron's).
// moe_layer_freq is an int (every N-th layer) or a list of 0/1 (layer by layer).
// recompute_granularity, recompute_method and recompute_modules are kept as read: their values are judged
// by the rules engine (R04/R05, per-profile labels).
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/recipe.h"

namespace rs {

// An unusable input. field: the recipe key, dotted where nested
// ("comm_overlap.overlap_moe_expert_parallel_comm"), or the key/flag as the user wrote it when it is unknown
// ("model.num_layer", "--num-layerz"); "" when the input as a whole is at fault (malformed JSON, a missing
// '='); where: the input ("recipe.json", "override 3", "flag --recompute-modules"). what() reads
// "<where>: <field>: <message>".
struct RecipeError : std::runtime_error {
    RecipeError(std::string field, std::string where, const std::string& message);
    std::string field;
    std::string where;
    std::string message; // what() without the "<where>: <field>: " prefix
};

// The JSON text reader refuses objects and arrays nested deeper than this (a recipe needs 2).
constexpr int kMaxJsonNesting = 32;
Recipe recipeFromJson(const nlohmann::json& j, const std::string& where = "recipe");
// Parse errors name the line and column of the offending token (1-based, a tab counts as one column).
Recipe recipeFromJsonText(const std::string& text, const std::string& where = "recipe");
// Every field, with "schema_version"; an unset optional is null.
nlohmann::json recipeToJson(const Recipe& r);
// Compact, sorted keys: the text the recipe hash is taken of.
std::string recipeCanonicalText(const Recipe& r);
// FIPS 180-4 SHA-256 of the bytes, lower-case hex (core/sha256.cpp).
std::string sha256Hex(const std::string& bytes);

// --- field access by JSON key, shared by the override and flag readers ---
// Keys are the JSON keys; the two Bridge-nested ones are dotted
// ("comm_overlap.overlap_moe_expert_parallel_comm", "rerun_state_machine.check_for_nan_in_loss").
enum class RecipeFieldType {
    Int,
    OptionalInt,
    Double,
    OptionalDouble,
    Bool,
    String,
    OptionalString,
    StringList,
    OptionalStringList,
    LayerFreq, // moe_layer_freq: an int or a list of 0/1
    Profile,
    FrontEnd, // front_end: json | bridge_overrides | megatron_flags
    // pipeline_model_parallel_layout: a layout string, or a list of per-stage lists of layer names (kept as
    // the string form; pipeline_layout.h), or null
    PipelineLayout,
};
// Every key, in the order recipe.h declares the fields.
const std::vector<std::string>& recipeFieldKeys();
// The field's type; nullopt for an unknown key.
std::optional<RecipeFieldType> recipeFieldType(const std::string& key);
// The field's value as recipeToJson writes it.
nlohmann::json recipeFieldValue(const Recipe& r, const std::string& key);
// Sets one field with the JSON reader's checks (type, allowed values); throws RecipeError(key, where, ...).
void setRecipeField(Recipe& r, const std::string& key, const nlohmann::json& value, const std::string& where);
// The allowed values of an enum-like string field that the readers enforce; nullptr for free text and for
// the fields the rules engine judges (recompute_granularity, recompute_method, label lists).
const std::vector<std::string>* allowedValues(const std::string& key);
// The candidate nearest to `name` by edit distance ("" when there are none).
std::string nearestName(const std::string& name, const std::vector<std::string>& candidates);
// The Levenshtein distance of two names, case-insensitive (what nearestName ranks by).
std::size_t nameDistance(const std::string& a, const std::string& b);
// Whether the bytes are well-formed UTF-8 (every text field must be).
bool isValidUtf8(const std::string& text);
// A JSON value for a message: at most max_chars characters (then "…"), containers below depth 4 shown as
// "[…]", bytes that are not UTF-8 as \xNN. Never recursive in the value's own depth, never throws.
std::string boundedDump(const nlohmann::json& value, std::size_t max_chars = 120);
// "a, b, c"
std::string joinNames(const std::vector<std::string>& names);

// --- front ends and explicitly set keys ---
const char* frontEndName(InputFormat f); // json | bridge_overrides | megatron_flags
std::optional<InputFormat> frontEndFromName(const std::string& name);
// The recipe a reader starts from: the front end's own defaults (see Recipe::front_end), at a profile.
Recipe frontEndDefaults(InputFormat frontEnd, Profile profile = Profile::BridgePin);
// Records that the user set `key` (a recipe key); writers then write it even at its default.
void markExplicit(Recipe& r, const std::string& key);
bool isExplicit(const Recipe& r, const std::string& key);

} // namespace rs
