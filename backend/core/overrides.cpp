// SPDX-License-Identifier: Apache-2.0
// Hydra's override grammar, enough for every value a recipe holds: each override's value is parsed into
// JSON and then set through the JSON reader's field access, so the type and allowed-value checks (and
// their messages) are the JSON reader's. Keys outside the recipe are checked against Megatron's
// dataclasses (megatron_arg_table.h) and Bridge's ConfigContainer sections, then kept verbatim.
#include "core/overrides.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <regex>

#include "core/megatron_arg_table.h"
#include "core/mixed_precision.h"
#include "core/recipe_json.h"

namespace rs {

namespace {

// Our own settings, which Bridge's ConfigContainer has no place for: written in the '# studio:' comment.
const std::vector<std::string> kStudioFields = { "name", "profile", "memory_target_gb", "warmup_iters",
    "te_version", "checkpoint_activations_flag", "recompute_activations", "data_parallel_size", "front_end",
    "adam_implementation", "gpu_compute_capability" };
// Fields that are no setting at all (how the recipe was read); never written as overrides.
const std::vector<std::string> kBookkeeping
    = { "extra_overrides", "extra_flags", "launch_command", "explicit_keys" };

bool contains(const std::vector<std::string>& v, const std::string& s)
{
    return std::find(v.begin(), v.end(), s) != v.end();
}

bool isStudioField(const std::string& key)
{
    return contains(kStudioFields, key);
}

// Fields whose Bridge key says the opposite (share_embeddings_and_output_weights,
// skip_getting_attention_mask_from_dataset).
bool isNegatedInBridge(const std::string& field)
{
    return field == "untie_embeddings_and_output_weights" || field == "create_attention_mask_in_dataloader";
}

// The Bridge keys a field is written under (ConfigContainer section.field); empty for ours.
std::vector<std::string> bridgeKeys(const std::string& field)
{
    if (isStudioField(field) || contains(kBookkeeping, field))
        return {};
    if (field == "peft.scheme")
        return { "peft" }; // peft=null: no adapters; peft=lora: Bridge's default LoRA (peft_scheme="lora")
    if (field.find('.') != std::string::npos || field == "mixed_precision")
        return { field }; // comm_overlap.*, rerun_state_machine.*, and the top-level mixed_precision
    if (field == "train_iters" || field == "global_batch_size" || field == "micro_batch_size")
        return { "train." + field };
    if (field == "seq_length")
        return { "model.seq_length", "dataset.seq_length" }; // Bridge checks that the two agree
    if (field == "use_distributed_optimizer" || field == "grad_reduce_in_fp32" || field == "fp8_param_gather")
        return { "ddp." + field };
    if (field == "use_precision_aware_optimizer" || field == "main_grads_dtype"
        || field == "main_params_dtype" || field == "exp_avg_dtype" || field == "exp_avg_sq_dtype"
        || field == "store_param_remainders")
        return { "optimizer." + field }; // OptimizerConfig's
    if (field == "untie_embeddings_and_output_weights")
        return { "model.share_embeddings_and_output_weights" };
    if (field == "create_attention_mask_in_dataloader")
        return { "dataset.skip_getting_attention_mask_from_dataset" };
    return { "model." + field };
}

// The recipe field an override key sets; "" when none.
std::string fieldForKey(const std::string& key)
{
    // Every key of every field, once (a Bridge recipe by name reads a few hundred overrides).
    static const std::map<std::string, std::string, std::less<>> fields = [] {
        // Bridge's deprecated spelling of the pattern (hybrid_provider.py finalize copies it over).
        std::map<std::string, std::string, std::less<>> m {
            { "optimizer.use_distributed_optimizer", "use_distributed_optimizer" },
            { "model.hybrid_override_pattern", "hybrid_layer_pattern" },
        };
        for (const std::string& field : recipeFieldKeys())
            for (const std::string& k : bridgeKeys(field))
                m.emplace(k, field); // the first field of a key, as the search in recipe.h's order found
        return m;
    }();
    const auto it = fields.find(key);
    return it == fields.end() ? std::string() : it->second;
}

std::vector<std::string> knownOverrideKeys(const MegatronArgTable& table)
{
    std::vector<std::string> keys;
    for (const std::string& field : recipeFieldKeys()) {
        for (const std::string& k : bridgeKeys(field))
            keys.push_back(k);
    }
    for (const std::string& f : table.fieldNames())
        keys.push_back("model." + f);
    for (const ConfigField& f : bridgeProviderFields())
        keys.push_back("model." + std::string(f.name));
    return keys;
}

// A model.<name> field that Megatron / Bridge has (modelled or not): the profile's TransformerConfig,
// Bridge's model providers, then another profile's TransformerConfig (Bridge's recipes set fields of newer
// Megatron Cores on the provider object); nullptr when none has it.
const ConfigField* modelField(const MegatronArgTable& table, const std::string& name)
{
    if (const ConfigField* f = table.field(name))
        return f;
    for (Profile p : allProfiles()) {
        if (const ConfigField* f = megatronArgTable(p).field(name))
            return f;
    }
    static const std::vector<ConfigField> provider = bridgeProviderFields();
    for (const ConfigField& f : provider) {
        if (name == f.name)
            return &f;
    }
    return nullptr;
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
    std::string lower = s;
    std::transform(
        lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    // Hydra's grammar: null in any case is null, as YAML's ~; None is a plain string.
    if (lower == "null" || s == "~")
        return { nlohmann::json(nullptr), s };
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

// The elements of a bracketed list "[a, 'b', c]" as written (trimmed of nothing), split at the commas outside
// quotes and, where lists inside it are allowed (nested 1), outside those.
std::vector<std::string> listElements(const std::string& s, const std::string& where, int nested)
{
    if (s.size() < 2 || s.front() != '[' || s.back() != ']')
        throw RecipeError("", where, "a list must end with ']': " + s);
    std::vector<std::string> out;
    const std::string inner = trim(s.substr(1, s.size() - 2));
    if (inner.empty())
        return out;
    std::string current;
    char quote = 0;
    int depth = 0;
    const auto element = [&]() {
        if (trim(current).empty())
            throw RecipeError("", where, "empty list element in " + s);
        out.push_back(current);
        current.clear();
    };
    for (std::size_t i = 0; i < inner.size(); ++i) {
        const char c = inner[i];
        if (quote) {
            current.push_back(c);
            if (c == '\\' && i + 1 < inner.size())
                current.push_back(inner[++i]);
            else if (c == quote)
                quote = 0;
            continue;
        }
        if (c == '\'' || c == '"') {
            quote = c;
        } else if (c == '[' && ++depth > nested) {
            throw RecipeError("", where,
                nested == 0 ? "nested lists are not supported: " + s
                            : "lists nested more than two deep are not supported: " + s);
        } else if (c == ']' && --depth < 0) {
            throw RecipeError("", where, "unbalanced ']' in " + s);
        }
        if (c == ',' && depth == 0)
            element();
        else
            current.push_back(c);
    }
    if (quote)
        throw RecipeError("", where, "unterminated quote in " + s);
    if (depth != 0)
        throw RecipeError("", where, "unbalanced '[' in " + s);
    element();
    return out;
}

// A value: a scalar, or one flat list in Hydra's form [a,b] or Python's repr form ['a', 'b'].
std::pair<HydraValue, std::vector<HydraValue>> parseValue(
    const std::string& raw, const std::string& where, bool* isList)
{
    const std::string s = trim(raw);
    *isList = !s.empty() && s.front() == '[';
    if (!*isList)
        return { parseScalar(s, where), {} };
    std::vector<HydraValue> items;
    for (const std::string& element : listElements(s, where, 0))
        items.push_back(parseScalar(element, where));
    nlohmann::json array = nlohmann::json::array();
    for (const HydraValue& item : items)
        array.push_back(item.value);
    return { { array, s }, items };
}

// A list whose elements are lists, as Hydra reads [[a,b],[c]] (pipeline_model_parallel_layout's list form):
// each element a flat list as parseValue reads it; an element that is no list is kept as a scalar (the
// field's reader says what it wanted).
nlohmann::json parseListOfLists(const std::string& raw, const std::string& where)
{
    nlohmann::json out = nlohmann::json::array();
    for (const std::string& element : listElements(trim(raw), where, 1)) {
        bool isList = false;
        out.push_back(parseValue(element, where, &isList).first.value);
    }
    return out;
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
        && lower != "null" && lower != "none" && lower != "true" && lower != "false" && s != "~"
        && s.front() != '+' && s.front() != '#' && s.find('$') == std::string::npos
        && std::string("*&!%@`|>?").find(s.front()) == std::string::npos // YAML: '*E' an alias
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

std::string kindOf(const nlohmann::json& v)
{
    if (v.is_null())
        return "none";
    if (v.is_boolean())
        return "bool";
    if (v.is_number_integer())
        return "int";
    if (v.is_number())
        return "float";
    if (v.is_array())
        return "list";
    return "str";
}

// An override split into its parts.
struct Override {
    std::string prefix; // "", "+", "++" or "~"
    std::string key;
    std::optional<std::string> value; // absent for ~KEY
};

Override splitOverride(const std::string& raw, const std::string& where)
{
    std::string arg = trim(raw);
    // A shell that did not strip the quotes: 'model.recompute_modules=[core_attn,moe_act]'.
    if (isQuoted(arg) && arg.find('=') != std::string::npos)
        arg = arg.substr(1, arg.size() - 2);
    Override o;
    for (const char* p : { "++", "+", "~" }) {
        if (arg.rfind(p, 0) == 0) {
            o.prefix = p;
            arg.erase(0, std::string(p).size());
            break;
        }
    }
    const auto eq = arg.find('=');
    o.key = trim(arg.substr(0, eq));
    if (eq != std::string::npos)
        o.value = arg.substr(eq + 1);
    if (o.key.empty() || (!o.value && o.prefix != "~"))
        throw RecipeError("", where, "expected KEY=VALUE, got '" + raw + "'");
    return o;
}

// Sets a recipe field from an override's value text, with Hydra's meanings.
void setFromHydra(Recipe& r, const std::string& field, const std::string& text, const std::string& where)
{
    const RecipeFieldType type = *recipeFieldType(field);
    if (type == RecipeFieldType::PipelineLayout && !trim(text).empty() && trim(text).front() == '[') {
        // The list form, one list of layer names per stage: Hydra's nested list.
        nlohmann::json stages;
        try {
            stages = parseListOfLists(text, where);
        } catch (const RecipeError& e) {
            throw RecipeError(field, where, e.message);
        }
        setRecipeField(r, field, stages, where);
        return;
    }
    bool isList = false;
    std::pair<HydraValue, std::vector<HydraValue>> parsed;
    try {
        parsed = parseValue(text, where, &isList);
    } catch (const RecipeError& e) {
        throw RecipeError(field, where, e.message);
    }
    nlohmann::json value = parsed.first.value;
    const bool quoted = isQuoted(trim(text));
    if (!quoted && !isList && value == "None"
        && (type == RecipeFieldType::OptionalString || type == RecipeFieldType::PipelineLayout
            || type == RecipeFieldType::OptionalInt || type == RecipeFieldType::OptionalDouble
            || type == RecipeFieldType::OptionalStringList || type == RecipeFieldType::StringList)) {
        std::string why = "Hydra reads None as the string 'None', not as null";
        if (field == "recompute_granularity")
            why += ", and Megatron rejects recompute_granularity='None' (TransformerConfig allows 'full', "
                   "'selective' or None)";
        throw RecipeError(field, where, why + "; write " + field + "=null for None");
    }
    // Hydra reads model.name=123 as an int and [1,2] as ints: a string field keeps the text.
    if ((type == RecipeFieldType::String || type == RecipeFieldType::OptionalString
            || type == RecipeFieldType::PipelineLayout || type == RecipeFieldType::Profile
            || type == RecipeFieldType::FrontEnd)
        && !isList && !value.is_null() && !value.is_string())
        value = parsed.first.text;
    if (type == RecipeFieldType::StringList || type == RecipeFieldType::OptionalStringList) {
        if (isList) {
            value = nlohmann::json::array();
            for (const HydraValue& item : parsed.second)
                value.push_back(
                    item.value.is_string() || item.value.is_null() ? item.value : nlohmann::json(item.text));
        } else if (value.is_null() && type == RecipeFieldType::StringList) {
            value = nlohmann::json::array(); // offload_modules=None: Megatron's Optional list, nothing
        } else if (value.is_string()) {
            // Megatron's annotations allow one string where a list is usual (cuda_graph_scope="full"):
            // "full" is the dataclass default, anything else one label.
            if (value == "full" && type == RecipeFieldType::OptionalStringList)
                value = nullptr;
            else
                value = nlohmann::json::array({ value });
        }
    }
    if (field == "mixed_precision" && value.is_string() && !findMixedPrecision(value.get<std::string>())) {
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
    setRecipeField(r, field, value, where); // its errors name the recipe key, as the JSON reader's do
}

} // namespace

std::string studioCommentLine(const Recipe& r)
{
    static const Recipe defaults;
    std::string out = "# studio:";
    for (const std::string& field : kStudioFields) {
        const nlohmann::json value = recipeFieldValue(r, field);
        bool write = value != recipeFieldValue(defaults, field) || isExplicit(r, field);
        if (field == "profile")
            write = true;
        else if (field == "front_end")
            write = r.front_end != InputFormat::BridgeOverrides; // reading overrides sets Bridge's
        if (!write)
            continue;
        out += " " + field + "=" + valueText(value);
    }
    return out;
}

void applyStudioComment(Recipe& r, const std::string& line, const std::string& where)
{
    std::string rest = trim(line);
    static const std::string kTag = "# studio:";
    if (rest.rfind(kTag, 0) == 0)
        rest = rest.substr(kTag.size());
    // Words split on blanks outside quotes and brackets.
    std::vector<std::string> words;
    std::string current;
    char quote = 0;
    int depth = 0;
    for (std::size_t i = 0; i < rest.size(); ++i) {
        const char c = rest[i];
        if (quote) {
            current.push_back(c);
            if (c == '\\' && i + 1 < rest.size())
                current.push_back(rest[++i]);
            else if (c == quote)
                quote = 0;
        } else if (c == '\'' || c == '"') {
            quote = c;
            current.push_back(c);
        } else if (c == '[') {
            ++depth;
            current.push_back(c);
        } else if (c == ']') {
            --depth;
            current.push_back(c);
        } else if ((c == ' ' || c == '\t') && depth == 0) {
            if (!current.empty())
                words.push_back(current);
            current.clear();
        } else {
            current.push_back(c);
        }
    }
    if (!current.empty())
        words.push_back(current);
    for (const std::string& w : words) {
        const auto eq = w.find('=');
        const std::string key = w.substr(0, eq);
        if (eq == std::string::npos || !isStudioField(key))
            throw RecipeError(key, where,
                "a '# studio:' comment holds KEY=VALUE words of our own settings (" + joinNames(kStudioFields)
                    + ")");
        setFromHydra(r, key, w.substr(eq + 1), where);
        markExplicit(r, key);
    }
}

std::vector<std::string> recipeToBridgeOverrides(const Recipe& r)
{
    const Recipe defaults = frontEndDefaults(InputFormat::BridgeOverrides, r.profile);
    std::vector<std::string> out;
    for (const std::string& field : recipeFieldKeys()) {
        const std::vector<std::string> keys = bridgeKeys(field);
        if (keys.empty())
            continue;
        nlohmann::json value = recipeFieldValue(r, field);
        if (value == recipeFieldValue(defaults, field) && !isExplicit(r, field))
            continue;
        if (isNegatedInBridge(field))
            value = !value.get<bool>();
        for (const std::string& key : keys)
            out.push_back(key + "=" + valueText(value));
    }
    out.insert(out.end(), r.extra_overrides.begin(), r.extra_overrides.end());
    return out;
}

std::string bridgeOverrideField(const std::string& key)
{
    return fieldForKey(key);
}

bool isBridgeModelField(const std::string& name, Profile profile)
{
    return modelField(megatronArgTable(profile), name) != nullptr;
}

Recipe recipeFromBridgeOverrides(const std::vector<std::string>& args)
{
    return recipeFromBridgeOverrides(args, frontEndDefaults(InputFormat::BridgeOverrides));
}

Recipe recipeFromBridgeOverrides(const std::vector<std::string>& args, Recipe base)
{
    static const std::vector<std::string> sections = bridgeConfigSections();
    // The tables follow the profile (a '# studio:' comment may name another): built once per profile, not
    // once per override (a Bridge recipe by name is a hundred of them).
    std::optional<Profile> tablesFor;
    std::optional<InputFormat> defaultsFor;
    MegatronArgTable table = megatronArgTable(base.profile);
    Recipe defaults;
    // Which spellings of the hybrid pattern set it (Bridge asserts that at most one is not None).
    bool overridePattern = false, layerPattern = false;
    for (std::size_t n = 0; n < args.size(); ++n) {
        if (tablesFor != base.profile) {
            table = megatronArgTable(base.profile);
            tablesFor = base.profile;
            defaultsFor.reset();
        }
        if (defaultsFor != base.front_end) {
            defaults = frontEndDefaults(base.front_end, base.profile);
            defaultsFor = base.front_end;
        }
        const std::string where = "override " + std::to_string(n + 1);
        const std::string arg = trim(args[n]);
        if (arg.empty())
            continue;
        if (arg.front() == '#') {
            if (arg.rfind("# studio:", 0) == 0)
                applyStudioComment(base, arg, where);
            continue; // a comment: the shell would have dropped it
        }
        const Override o = splitOverride(arg, where);
        const std::string field = fieldForKey(o.key);
        const auto dot = o.key.find('.');
        const std::string section = o.key.substr(0, dot);
        const std::string rest = dot == std::string::npos ? std::string() : o.key.substr(dot + 1);
        const std::string head = rest.substr(0, rest.find('.'));
        const ConfigField* unmodelled
            = field.empty() && section == "model" ? modelField(table, head) : nullptr;
        // Another section's field, by Bridge's dataclasses (none listed: the section takes any key).
        static const std::vector<SectionField> sectionFields = bridgeSectionFields();
        std::vector<std::string> ofSection;
        ConfigField sectionField { nullptr, nullptr, nullptr };
        for (const SectionField& f : sectionFields) {
            if (section != f.section)
                continue;
            ofSection.push_back(section + "." + f.name);
            if (head == f.name)
                sectionField = ConfigField { f.name, f.kinds, "" };
        }
        const bool adding = o.prefix == "+" || o.prefix == "++";
        if (!adding && field.empty() && section != "model" && !rest.empty() && !ofSection.empty()
            && !sectionField.name)
            throw RecipeError(o.key, where,
                "Bridge's " + section + " section has no field '" + head + "' (++" + o.key
                    + "=VALUE adds it, as Hydra does); did you mean '" + nearestName(o.key, ofSection)
                    + "'?");
        if (sectionField.name && rest.find('.') == std::string::npos)
            unmodelled = nullptr; // checked below with the section's own annotation

        // Hydra's +KEY / ++KEY add a key the config lacks: kept as given.
        const bool adds
            = (o.prefix == "+" || o.prefix == "++") && field.empty() && !unmodelled && !sectionField.name;
        if (adds && section != "studio") {
            base.extra_overrides.push_back(arg);
            continue;
        }
        if (field.empty() && !unmodelled) {
            if (section == "studio")
                throw RecipeError(o.key, where,
                    "Bridge has no 'studio' section: our own settings go in a '# studio: KEY=VALUE' comment "
                    "line");
            if (section == "model" || (dot == std::string::npos && section != "mixed_precision"))
                throw RecipeError(o.key, where,
                    std::string(section == "model"
                            ? "Megatron's TransformerConfig and Bridge's GPTModelProvider "
                              "have no such field"
                            : "not a key of Bridge's ConfigContainer")
                        + "; did you mean '" + nearestName(o.key, knownOverrideKeys(table)) + "'?");
            if (!contains(sections, section))
                throw RecipeError(o.key, where,
                    "Bridge's ConfigContainer has no section '" + section + "'; did you mean '"
                        + nearestName(section, sections) + "'?");
        }
        const bool exists = !field.empty() || unmodelled || sectionField.name;
        if (o.prefix == "+" && exists)
            throw RecipeError(o.key, where,
                "Hydra refuses +" + o.key + ": the key exists already (Could not append to config); write "
                    + o.key + "=VALUE, or ++" + o.key + "=VALUE");
        if (o.prefix == "~") {
            if (!field.empty()) {
                setRecipeField(base, field, recipeFieldValue(defaults, field), where);
                base.explicit_keys.erase(
                    std::remove(base.explicit_keys.begin(), base.explicit_keys.end(), field),
                    base.explicit_keys.end());
            }
            base.extra_overrides.push_back(arg);
            continue;
        }
        if (field == "hybrid_layer_pattern") {
            // HybridModelProvider.finalize (hybrid_provider.py:176-193 at Bridge 067f987d): a None
            // hybrid_override_pattern is no pattern at all; with both set it asserts.
            const bool alias = o.key == "model.hybrid_override_pattern";
            Recipe probe;
            setFromHydra(probe, field, *o.value, where);
            if (!probe.hybrid_layer_pattern) {
                if (alias)
                    continue;
                (alias ? overridePattern : layerPattern) = false;
            } else {
                (alias ? overridePattern : layerPattern) = true;
                if (overridePattern && layerPattern)
                    throw RecipeError(o.key, where,
                        "hybrid_override_pattern and hybrid_layer_pattern cannot both be specified. "
                        "hybrid_override_pattern is deprecated; use hybrid_layer_pattern instead.");
            }
        }
        if (!field.empty()) {
            if (isNegatedInBridge(field)) {
                Recipe probe;
                setFromHydra(probe, "sequence_parallel", *o.value, where); // a bool, Hydra's way
                setRecipeField(base, field, !probe.sequence_parallel, where);
            } else {
                setFromHydra(base, field, *o.value, where);
            }
            markExplicit(base, field);
            continue;
        }
        const ConfigField* annotated = unmodelled ? unmodelled : sectionField.name ? &sectionField : nullptr;
        if (annotated && rest.find('.') == std::string::npos) {
            // A Megatron / Bridge field we do not model: its value must be one its annotation allows.
            bool isList = false;
            std::pair<HydraValue, std::vector<HydraValue>> parsed;
            try {
                parsed = parseValue(*o.value, where, &isList);
            } catch (const RecipeError& e) {
                throw RecipeError(o.key, where, e.message);
            }
            const nlohmann::json& v = parsed.first.value;
            const std::string text = v.is_string() ? v.get<std::string>() : parsed.first.text;
            if (!configFieldAllows(*annotated, kindOf(v), text)) {
                throw RecipeError(o.key, where,
                    "the field's annotation allows " + std::string(annotated->kinds) + " here, got "
                        + parsed.first.text);
            }
        }
        base.extra_overrides.push_back(arg);
    }
    return base;
}

std::string keptSettingsNote(const Recipe& r)
{
    std::vector<std::string> kept;
    for (const std::string& o : r.extra_overrides)
        kept.push_back(o.substr(0, o.find('=')));
    for (const std::string& w : r.extra_flags) {
        if (w.rfind("--", 0) == 0)
            kept.push_back(w);
    }
    if (kept.empty())
        return {};
    return "kept as given and written back, not modelled by the estimate: " + joinNames(kept);
}

} // namespace rs
