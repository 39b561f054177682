// SPDX-License-Identifier: Apache-2.0
// A subset of Hydra's override grammar, enough for every value a recipe holds: each override's value is
// parsed into JSON and then set through the JSON reader's field access, so the type and allowed-value
// checks (and their messages) are the JSON reader's.
#include "core/overrides.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <regex>

#include "core/mixed_precision.h"
#include "core/recipe_json.h"

namespace rs {

namespace {

// Our own settings, which Bridge's ConfigContainer has no place for: written under "studio.".
const std::vector<std::string> kStudioFields = { "name", "profile", "memory_target_gb", "warmup_iters",
    "te_version", "checkpoint_activations_flag", "recompute_activations" };

bool isStudioField(const std::string& key)
{
    return std::find(kStudioFields.begin(), kStudioFields.end(), key) != kStudioFields.end();
}

// The override key recipeToBridgeOverrides writes for a field.
std::string overrideKey(const std::string& field)
{
    if (field.find('.') != std::string::npos || field == "mixed_precision")
        return field; // comm_overlap.*, rerun_state_machine.*, and the top-level mixed_precision
    if (field == "train_iters")
        return "train.train_iters"; // Bridge's own place for it
    if (isStudioField(field))
        return "studio." + field;
    return "model." + field;
}

// Every key the reader accepts, for the nearest-key suggestion.
const std::vector<std::string>& knownOverrideKeys()
{
    static const std::vector<std::string> keys = [] {
        std::vector<std::string> k;
        for (const std::string& field : recipeFieldKeys())
            k.push_back(overrideKey(field));
        return k;
    }();
    return keys;
}

// The field an override key names; "" when none.
std::string fieldForKey(const std::string& key)
{
    for (const std::string& field : recipeFieldKeys()) {
        if (key == overrideKey(field))
            return field;
    }
    const auto dot = key.find('.');
    if (dot == std::string::npos)
        return {};
    const std::string prefix = key.substr(0, dot);
    const std::string rest = key.substr(dot + 1);
    if (rest.find('.') != std::string::npos || !recipeFieldType(rest))
        return {};
    // Our own fields are accepted under model. too; train_iters and attention_backend under studio.
    if (prefix == "model" && rest != "mixed_precision")
        return rest;
    if (prefix == "studio" && (isStudioField(rest) || rest == "train_iters" || rest == "attention_backend"))
        return rest;
    return {};
}

struct HydraValue {
    nlohmann::json value;
    std::string text; // the element as written, unquoted: a string field takes it whatever it parses as
};

std::string trim(const std::string& s)
{
    const auto b = s.find_first_not_of(" \t");
    if (b == std::string::npos)
        return {};
    const auto e = s.find_last_not_of(" \t");
    return s.substr(b, e - b + 1);
}

bool isQuoted(const std::string& s)
{
    return s.size() >= 2 && (s.front() == '\'' || s.front() == '"') && s.back() == s.front();
}

std::string unquote(const std::string& s, const std::string& where)
{
    std::string out;
    for (std::size_t i = 1; i + 1 < s.size(); ++i) {
        if (s[i] == '\\' && i + 2 < s.size()) {
            out.push_back(s[++i]);
        } else if (s[i] == s.front()) {
            throw RecipeError("", where, "unescaped quote inside the quoted value " + s);
        } else {
            out.push_back(s[i]);
        }
    }
    return out;
}

HydraValue parseScalar(const std::string& raw, const std::string& where)
{
    static const std::regex kInt("[+-]?[0-9]+");
    static const std::regex kFloat("[+-]?([0-9]+\\.[0-9]*|\\.[0-9]+|[0-9]+)([eE][+-]?[0-9]+)?");
    const std::string s = trim(raw);
    if (isQuoted(s)) {
        const std::string text = unquote(s, where);
        return { nlohmann::json(text), text };
    }
    if (s == "null" || s == "None" || s == "NULL")
        return { nlohmann::json(nullptr), s };
    std::string lower = s;
    std::transform(
        lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    if (lower == "true")
        return { nlohmann::json(true), s };
    if (lower == "false")
        return { nlohmann::json(false), s };
    // std::regex recurses once per character: a long value is never a number (and must not reach it).
    const bool short_enough = s.size() <= 400;
    if (short_enough && std::regex_match(s, kInt)) {
        try {
            return { nlohmann::json(std::stoll(s)), s };
        } catch (const std::out_of_range&) {
            throw RecipeError(
                "", where, "the integer " + s + " is out of range (allowed: -2147483648 to 2147483647)");
        }
    }
    if (short_enough && std::regex_match(s, kFloat)) {
        errno = 0;
        const double x = std::strtod(s.c_str(), nullptr);
        if (!std::isfinite(x) || (errno == ERANGE && std::abs(x) > 1.0))
            throw RecipeError("", where,
                "the number " + s
                    + " is out of range: a number must be finite, at most 1.8e308 in magnitude");
        return { nlohmann::json(x), s };
    }
    if (s.find_first_of("[]{}'\",=") != std::string::npos)
        throw RecipeError(
            "", where, "cannot read the value '" + s + "' (quote a string that holds [ ] { } , = or quotes)");
    return { nlohmann::json(s), s };
}

// A value: a scalar, or one flat list in Hydra's form [a,b] or Python's repr form ['a', 'b'].
std::pair<HydraValue, std::vector<HydraValue>> parseValue(
    const std::string& raw, const std::string& where, bool* isList)
{
    const std::string s = trim(raw);
    *isList = !s.empty() && s.front() == '[';
    if (!*isList)
        return { parseScalar(s, where), {} };
    if (s.back() != ']')
        throw RecipeError("", where, "a list must end with ']': " + s);
    std::vector<HydraValue> items;
    const std::string inner = trim(s.substr(1, s.size() - 2));
    if (inner.empty())
        return { { nlohmann::json::array(), s }, items };
    std::string current;
    char quote = 0;
    for (std::size_t i = 0; i < inner.size(); ++i) {
        const char c = inner[i];
        if (quote) {
            current.push_back(c);
            if (c == '\\' && i + 1 < inner.size())
                current.push_back(inner[++i]);
            else if (c == quote)
                quote = 0;
        } else if (c == '\'' || c == '"') {
            quote = c;
            current.push_back(c);
        } else if (c == '[' || c == ']') {
            throw RecipeError("", where, "nested lists are not supported: " + s);
        } else if (c == ',') {
            if (trim(current).empty())
                throw RecipeError("", where, "empty list element in " + s);
            items.push_back(parseScalar(current, where));
            current.clear();
        } else {
            current.push_back(c);
        }
    }
    if (quote)
        throw RecipeError("", where, "unterminated quote in " + s);
    if (trim(current).empty())
        throw RecipeError("", where, "empty list element in " + s);
    items.push_back(parseScalar(current, where));
    nlohmann::json array = nlohmann::json::array();
    for (const HydraValue& item : items)
        array.push_back(item.value);
    return { { array, s }, items };
}

// A value as Hydra reads it back to the same JSON value.
std::string scalarText(const nlohmann::json& v)
{
    if (!v.is_string())
        return v.dump(); // null, true/false, integers, and doubles in their shortest round-trip form
    const std::string s = v.get<std::string>();
    static const std::regex kNumber("[+-]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][+-]?[0-9]+)?");
    std::string lower = s;
    std::transform(
        lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    const bool plain = !s.empty() && s.find_first_of("[]{}()'\",=:\\ \t") == std::string::npos
        && lower != "null" && lower != "none" && lower != "true" && lower != "false"
        && (s.size() > 400 || !std::regex_match(s, kNumber)); // regex recursion: see parseScalar
    if (plain)
        return s;
    std::string out = "'";
    for (char c : s) {
        if (c == '\'' || c == '\\')
            out.push_back('\\');
        out.push_back(c);
    }
    return out + "'";
}

std::string valueText(const nlohmann::json& v)
{
    if (!v.is_array())
        return scalarText(v);
    std::string out = "[";
    for (std::size_t i = 0; i < v.size(); ++i) {
        if (i)
            out += ",";
        out += scalarText(v[i]);
    }
    return out + "]";
}

} // namespace

std::vector<std::string> recipeToBridgeOverrides(const Recipe& r)
{
    static const Recipe defaults;
    std::vector<std::string> out;
    for (const std::string& field : recipeFieldKeys()) {
        const nlohmann::json value = recipeFieldValue(r, field);
        if (value != recipeFieldValue(defaults, field))
            out.push_back(overrideKey(field) + "=" + valueText(value));
    }
    return out;
}

Recipe recipeFromBridgeOverrides(const std::vector<std::string>& args, Recipe base)
{
    for (std::size_t n = 0; n < args.size(); ++n) {
        const std::string where = "override " + std::to_string(n + 1);
        std::string arg = trim(args[n]);
        // A shell that did not strip the quotes: 'model.recompute_modules=[core_attn,moe_act]'.
        if (isQuoted(arg) && arg.find('=') != std::string::npos)
            arg = arg.substr(1, arg.size() - 2);
        const auto eq = arg.find('=');
        if (eq == std::string::npos)
            throw RecipeError("", where, "expected KEY=VALUE, got '" + args[n] + "'");
        std::string key = trim(arg.substr(0, eq));
        if (!key.empty() && key.front() == '~')
            throw RecipeError(key, where, "deleting a key (~) is not supported: every field has a value");
        // Hydra's +key (add) and ++key (add or override) mean the same here: every field exists.
        if (key.rfind("++", 0) == 0)
            key.erase(0, 2);
        else if (key.rfind("+", 0) == 0)
            key.erase(0, 1);
        if (key.empty())
            throw RecipeError("", where, "expected KEY=VALUE, got '" + args[n] + "'");
        const std::string field = fieldForKey(key);
        if (field.empty()) {
            throw RecipeError(key, where,
                "unknown override key; did you mean '" + nearestName(key, knownOverrideKeys()) + "'?");
        }

        bool isList = false;
        std::pair<HydraValue, std::vector<HydraValue>> parsed;
        try {
            parsed = parseValue(arg.substr(eq + 1), where, &isList);
        } catch (const RecipeError& e) {
            throw RecipeError(field, where, e.message);
        }
        nlohmann::json value = parsed.first.value;
        const RecipeFieldType type = *recipeFieldType(field);
        // Hydra reads model.name=123 as an int and [1,2] as ints: a string field keeps the text.
        if ((type == RecipeFieldType::String || type == RecipeFieldType::OptionalString
                || type == RecipeFieldType::Profile)
            && !isList && !value.is_null() && !value.is_string())
            value = parsed.first.text;
        if ((type == RecipeFieldType::StringList || type == RecipeFieldType::OptionalStringList) && isList) {
            value = nlohmann::json::array();
            for (const HydraValue& item : parsed.second)
                value.push_back(
                    item.value.is_string() || item.value.is_null() ? item.value : nlohmann::json(item.text));
        }
        if (field == "mixed_precision" && value.is_string()
            && !findMixedPrecision(value.get<std::string>())) {
            std::vector<std::string> names;
            for (const MixedPrecisionRecipe& m : mixedPrecisionRecipes())
                names.emplace_back(m.name);
            throw RecipeError(field, where,
                "unknown mixed-precision recipe '" + value.get<std::string>() + "'; did you mean '"
                    + nearestName(value.get<std::string>(), names) + "'? Known: " + joinNames(names));
        }
        // Bridge's attention_backend is Megatron's AttnBackend enum; ours has no local/auto.
        if (field == "attention_backend" && value.is_string()) {
            if (value == "local")
                value = "unfused";
            else if (value == "auto")
                value = "fused";
        }
        setRecipeField(base, field, value, where); // its errors name the recipe key, as the JSON reader's do
    }
    return base;
}

} // namespace rs
