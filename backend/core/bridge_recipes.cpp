// SPDX-License-Identifier: Apache-2.0
// The recipe table's facts are Bridge's (scripts/gen_bridge_recipe_table.py runs each recipe function of
// Bridge 067f987d on its own dataclasses); what setup() does with them is Bridge's training/config.py
// runtime_config_update (mixed precision, then set_data_parallel_size) and training/setup.py
// _validate_and_set_vocab_size, as the table's "setup_semantics" cites them.
#include "core/bridge_recipes.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>

#include <nlohmann/json.hpp>

#include "core/gpus.h"
#include "core/mixed_precision.h"
#include "core/overrides.h"
#include "core/recipe_json.h"

// The table's bytes, linked in by bridge_recipe_data.cpp (hidden: resolved within the program, no text
// relocation in a position-independent one).
extern "C" __attribute__((visibility("hidden"))) const char rs_bridge_recipes_json[];

namespace rs {

namespace {

using nlohmann::json;

struct Table {
    json data;
    std::vector<BridgeRecipeEntry> entries;
    std::map<std::string, size_t, std::less<>> byName; // names and short aliases -> index
    std::vector<std::string> names; // every name and alias, for suggestions
};

std::string shortName(const std::string& dotted)
{
    const auto dot = dotted.rfind('.');
    return dot == std::string::npos ? dotted : dotted.substr(dot + 1);
}

const Table& table()
{
    static Table t;
    static std::once_flag once;
    std::call_once(once, [] {
        t.data = json::parse(rs_bridge_recipes_json);
        const json& recipes = t.data.at("recipes");
        t.entries.reserve(recipes.size());
        for (size_t i = 0; i < recipes.size(); ++i) {
            const json& r = recipes[i];
            BridgeRecipeEntry e;
            e.name = r.value("name", "");
            e.source = r.value("source", "");
            e.kind = r.value("kind", "");
            e.family = r.value("family", "");
            if (r.contains("gpus") && r["gpus"].is_number_integer())
                e.gpus = r["gpus"].get<int>();
            if (r.contains("hf_model") && r["hf_model"].is_string())
                e.hf_model = r["hf_model"].get<std::string>();
            e.hf_confirmed = !r.contains("hf_config_confirmed") || !r["hf_config_confirmed"].is_boolean()
                || r["hf_config_confirmed"].get<bool>();
            if (r.contains("provider") && r["provider"].is_string())
                e.provider = r["provider"].get<std::string>();
            if (r.contains("not_modelled") && r["not_modelled"].is_object()) {
                e.not_modelled_layers = r["not_modelled"].value("layers", "");
                e.not_modelled_class = r["not_modelled"].value("class", "");
            }
            if (r.contains("unresolved") && r["unresolved"].is_array())
                for (const json& u : r["unresolved"])
                    e.unresolved.push_back(u.is_string() ? u.get<std::string>() : u.dump());
            // A name two modules define keeps its first entry for the short name (the table lists both).
            t.byName.emplace(e.name, i);
            t.names.push_back(e.name);
            if (r.contains("aliases") && r["aliases"].is_array())
                for (const json& a : r["aliases"])
                    if (a.is_string() && t.byName.emplace(shortName(a.get<std::string>()), i).second)
                        t.names.push_back(shortName(a.get<std::string>()));
            t.entries.push_back(std::move(e));
        }
    });
    return t;
}

// A JSON value as Hydra writes it on the command line (overrides.h reads it back).
std::string hydra(const json& v)
{
    if (v.is_null())
        return "null";
    if (v.is_boolean())
        return v.get<bool>() ? "true" : "false";
    if (v.is_number())
        return v.dump();
    if (v.is_string()) {
        const std::string s = v.get<std::string>();
        if (s.find_first_of(" ,[]{}=:'\"") == std::string::npos && !s.empty())
            return s;
        return "'" + s + "'";
    }
    if (v.is_array()) {
        std::string out = "[";
        for (size_t i = 0; i < v.size(); ++i)
            out += (i ? "," : "") + hydra(v[i]);
        return out + "]";
    }
    return v.dump();
}

// The provider's defaults: its class's, or for Bridge's nested config (BridgeGPTModelConfig with a
// TransformerConfig) both classes' (the recipe lists the nested fields flat).
json providerDefaults(const json& data, const std::string& provider)
{
    const json& providers = data.at("providers");
    json out = json::object();
    const auto merge = [&](const std::string& cls) {
        if (providers.contains(cls))
            for (const auto& [k, v] : providers.at(cls).items())
                out[k] = v;
    };
    const auto paren = provider.find('(');
    if (paren == std::string::npos) {
        merge(provider);
    } else {
        merge(provider.substr(0, paren));
        const auto eq = provider.find('=', paren);
        const auto close = provider.find(')', paren);
        if (eq != std::string::npos && close != std::string::npos)
            merge(provider.substr(eq + 1, close - eq - 1));
    }
    return out;
}

std::string fmtWorld(int n)
{
    return std::to_string(n) + " GPU" + (n == 1 ? "" : "s");
}

} // namespace

std::string bridgeRecipeCommit()
{
    return table().data.value("bridge_commit", "");
}

const std::vector<BridgeRecipeEntry>& bridgeRecipes()
{
    return table().entries;
}

const BridgeRecipeEntry* findBridgeRecipe(std::string_view name)
{
    const Table& t = table();
    const auto it = t.byName.find(name);
    return it == t.byName.end() ? nullptr : &t.entries[it->second];
}

std::vector<std::string> bridgeRecipeSuggestions(std::string_view name, std::size_t n)
{
    const Table& t = table();
    std::vector<std::string> pool = t.names;
    std::vector<std::string> out;
    const std::string wanted(name);
    while (out.size() < n && !pool.empty()) {
        // Names that start with what was typed come first (a family: "llama3_8b"), then the nearest.
        auto prefixed = std::find_if(pool.begin(), pool.end(),
            [&](const std::string& p) { return !wanted.empty() && p.rfind(wanted, 0) == 0; });
        const std::string pick = prefixed != pool.end() ? *prefixed : nearestName(wanted, pool);
        if (pick.empty())
            break;
        out.push_back(pick);
        pool.erase(std::remove(pool.begin(), pool.end(), pick), pool.end());
    }
    return out;
}

BridgeJob bridgeJob(std::string_view name, std::optional<int> world_size,
    const std::vector<std::string>& overrides, Profile profile)
{
    const Table& t = table();
    const std::string commit = bridgeRecipeCommit().substr(0, 8);
    const BridgeRecipeEntry* e = findBridgeRecipe(name);
    if (!e) {
        std::string hint;
        for (const std::string& s : bridgeRecipeSuggestions(name))
            hint += (hint.empty() ? "" : ", ") + s;
        throw RecipeError("recipe", "--recipe",
            "'" + std::string(name) + "' is not a Megatron Bridge recipe at " + commit
                + (hint.empty() ? std::string() : "; did you mean " + hint + "?"));
    }
    const json& r = t.data.at("recipes").at(static_cast<size_t>(e - t.entries.data()));
    if (e->kind != "text")
        throw RecipeError("recipe", "--recipe",
            e->name + " is a " + e->kind
                + " recipe: Recompute Studio models text LLMs (the language model's layers), not "
                + (e->kind == "vision" ? "vision encoders" : e->kind + " models"));
    // Before the missing-values refusal: more HF values would not help, the layers are not built.
    if (!e->not_modelled_layers.empty())
        throw RecipeError("recipe", "--recipe",
            e->name + ": Bridge builds " + e->hf_model + " with " + e->not_modelled_layers
                + ", a layer kind Recompute Studio does not model; it is " + e->not_modelled_class
                + ", and nothing is estimated for this recipe");
    if (r.contains("error") && r["error"].is_string())
        throw RecipeError("recipe", "--recipe",
            e->name + ": the recipe function did not build a configuration at Bridge " + commit + ": "
                + r["error"].get<std::string>());
    if (e->provider.empty() || !r.contains("model"))
        throw RecipeError("recipe", "--recipe",
            e->name + ": its architecture comes from the Hugging Face config of "
                + (e->hf_model.empty() ? std::string("its model") : e->hf_model)
                + ", whose values are not in resources/bridge/hf-configs.json; give the shape with "
                  "--overrides model.num_layers=... on a recipe that has one, or a recipe JSON");

    BridgeJob job;
    job.recipe_name = e->name;
    std::vector<std::string> words; // the recipe as overrides, then the user's
    std::vector<std::string> dropped;
    json model = providerDefaults(t.data, e->provider);
    for (const auto& [k, v] : r.at("model").items())
        model[k] = v;
    const json& diff = r.at("model");
    for (const auto& [k, v] : model.items()) {
        if (k == "vocab_size" || k == "seq_length" || k == "attention_backend" || k == "params_dtype")
            continue; // the tokenizer's, the dataset's; ours; bf16 / fp16 below
        const std::string key = "model." + k;
        const bool modelled = !bridgeOverrideField(key).empty();
        // Fields we model always (the provider's defaults are not Bridge's GPTModelProvider's); others
        // where the recipe sets them (kept verbatim when Megatron has them).
        if (!modelled && (!diff.contains(k) || !isBridgeModelField(k, profile)))
            continue;
        if (v.is_object() || (v.is_string() && v.get<std::string>().rfind("<", 0) == 0))
            continue; // a nested object or a callable: nothing an override can say
        // The HF-derived providers pass rope_theta as a float (500000.0) where TransformerConfig annotates
        // rotary_base int; RoPE only divides by it (rotary_pos_embedding.py), so a whole float is that int.
        if (k == "rotary_base" && v.is_number_float() && std::isfinite(v.get<double>())
            && v.get<double>() == std::floor(v.get<double>()) && std::abs(v.get<double>()) < 1e15) {
            words.push_back(key + "=" + std::to_string(static_cast<long long>(v.get<double>())));
            continue;
        }
        words.push_back(key + "=" + hydra(v));
    }
    const auto section
        = [&r](const char* s) -> json { return r.contains(s) && r[s].is_object() ? r[s] : json::object(); };
    const json train = section("train"), dataset = section("dataset"), optimizer = section("optimizer"),
               ddp = section("ddp"), tokenizer = section("tokenizer");
    for (const char* k : { "global_batch_size", "micro_batch_size", "train_iters" })
        if (train.contains(k) && train[k].is_number_integer())
            words.push_back(std::string("train.") + k + "=" + train[k].dump());
    const json seq
        = dataset.contains("seq_length") ? dataset["seq_length"] : model.value("seq_length", json());
    if (seq.is_number_integer()) {
        words.push_back("model.seq_length=" + seq.dump());
        words.push_back("dataset.seq_length=" + seq.dump());
    }
    for (const char* k : { "use_distributed_optimizer", "use_precision_aware_optimizer", "main_params_dtype",
             "main_grads_dtype", "exp_avg_dtype", "exp_avg_sq_dtype", "store_param_remainders" })
        if (optimizer.contains(k) && !optimizer[k].is_null())
            words.push_back(std::string("optimizer.") + k + "=" + hydra(optimizer[k]));
    for (const char* k : { "use_distributed_optimizer", "grad_reduce_in_fp32", "fp8_param_gather" })
        if (ddp.contains(k) && !ddp[k].is_null())
            words.push_back(std::string("ddp.") + k + "=" + hydra(ddp[k]));
    // CommOverlapConfig's None is "not asked for": only True turns the overlap on (comm_overlap.py:397,478
    // at 067f987d), so a null is left to the field's default, off.
    if (r.contains("comm_overlap") && r["comm_overlap"].is_object()
        && r["comm_overlap"].contains("overlap_moe_expert_parallel_comm")
        && !r["comm_overlap"]["overlap_moe_expert_parallel_comm"].is_null())
        words.push_back("comm_overlap.overlap_moe_expert_parallel_comm="
            + hydra(r["comm_overlap"]["overlap_moe_expert_parallel_comm"]));
    // PEFT (ConfigContainer.peft): LoRA with its rank, scale, dropout and targets; the rest of the section
    // at a value other than LoRA's default is said, not modelled.
    if (r.contains("peft") && r["peft"].is_object()) {
        const json& peft = r["peft"];
        const std::string cls = peft.value("class", std::string());
        if (cls != "LoRA")
            throw RecipeError("recipe", "--recipe",
                e->name + ": its PEFT is Bridge's " + cls
                    + "; Recompute Studio models LoRA (peft/lora.py), and nothing is estimated for this "
                      "recipe");
        words.push_back("peft=lora");
        for (const char* k : { "dim", "alpha", "dropout", "target_modules" })
            if (peft.contains(k) && !peft[k].is_null())
                words.push_back(std::string("peft.") + k + "=" + hydra(peft[k]));
        const json loraDefaults
            = { { "exclude_modules", json::array() }, { "canonical_mapping", json::object() },
                  { "dropout_position", "pre" }, { "sequence_parallel_input_regather", false },
                  { "a2a_experimental", false }, { "lora_dtype", nullptr }, { "normalize_moe_lora", false },
                  { "share_expert_adapters", true }, { "experts_shared_outer_loras", false } };
        for (const auto& [k, v] : loraDefaults.items())
            if (peft.contains(k) && peft[k] != v)
                job.notes.push_back("peft." + k + "=" + peft[k].dump()
                    + " is kept, not modelled: the estimate builds LoRA's default (" + v.dump() + ")");
    }
    // The vocabulary (setup.py _validate_and_set_vocab_size): the tokenizer's, padded, when the model sets
    // none or the tokenizer says so; else the model's as it is.
    const json modelVocab = model.value("vocab_size", json());
    const bool fromTokenizer = tokenizer.value("use_tokenizer_vocab_size", false) || modelVocab.is_null();
    json vocab = fromTokenizer ? tokenizer.value("vocab_size", json()) : modelVocab;
    if (fromTokenizer && vocab.is_null() && modelVocab.is_number_integer()) {
        vocab = modelVocab;
        job.notes.push_back("the vocabulary is the tokenizer's ("
            + tokenizer.value("tokenizer_model", json("its tokenizer")).dump()
            + "), not in the table: the model config's vocab_size " + modelVocab.dump()
            + " stands in for it");
    }
    if (vocab.is_number_integer())
        words.push_back("model.vocab_size=" + vocab.dump());
    else
        job.notes.push_back("the vocabulary size is not known (the tokenizer's): give model.vocab_size=N");
    if (!fromTokenizer)
        words.push_back("model.make_vocab_size_divisible_by=1"); // an explicit model vocabulary is not padded
    // Mixed precision last: setup() copies it onto the model, the optimizer and DDP, over what the recipe
    // set (mixed_precision.py MixedPrecisionConfig.setup).
    if (r.contains("mixed_precision") && r["mixed_precision"].is_string()) {
        words.push_back("mixed_precision=" + r["mixed_precision"].get<std::string>());
    } else if (r.contains("mixed_precision") && r["mixed_precision"].is_object()) {
        const json& mp = r["mixed_precision"];
        for (const char* k : { "bf16", "fp16", "fp8", "fp8_recipe", "fp4" })
            if (mp.contains(k) && (!mp[k].is_null() || std::string(k) == "fp8" || std::string(k) == "fp4"))
                words.push_back(std::string("model.") + k + "=" + hydra(mp[k]));
        for (const char* k : { "grad_reduce_in_fp32", "fp8_param_gather" })
            if (mp.contains(k) && mp[k].is_boolean())
                words.push_back(std::string("ddp.") + k + "=" + hydra(mp[k]));
        job.notes.push_back(
            "mixed precision: the recipe's own MixedPrecisionConfig, copied onto the model and "
            "DDP configs as setup() does");
    }
    const size_t fromTable = words.size();
    words.insert(words.end(), overrides.begin(), overrides.end());

    Recipe base = frontEndDefaults(InputFormat::BridgeOverrides, profile);
    base.profile = profile;
    // The GPU the name states ("..._8gpu_h100_bf16_config") is the job's; a '# studio:' override may say
    // another.
    const std::optional<NamedGpu> gpu = gpuNamedIn(e->name);
    if (gpu)
        base.gpu_compute_capability = gpu->compute_capability;
    // A table value the override reader cannot take (a type Megatron's annotation does not allow) is left
    // out and said; the user's own overrides are never dropped.
    for (;;) {
        try {
            job.recipe = recipeFromBridgeOverrides(words, base);
            break;
        } catch (const RecipeError& err) {
            size_t index = 0;
            if (err.where.rfind("override ", 0) == 0)
                index = static_cast<size_t>(std::stoul(err.where.substr(9)));
            if (index == 0 || index > fromTable)
                throw;
            dropped.push_back(words[index - 1] + " (" + err.message + ")");
            words.erase(words.begin() + static_cast<std::ptrdiff_t>(index - 1));
        }
    }
    for (const std::string& d : dropped)
        job.notes.push_back("not taken from the recipe: " + d);
    if (gpu && job.recipe.gpu_compute_capability == gpu->compute_capability)
        job.notes.push_back("GPU compute capability " + std::to_string(gpu->compute_capability)
            + " (gpu_compute_capability): the name's " + std::string(gpu->name));
    job.recipe.name = e->name;

    // The world: DP follows from it (set_data_parallel_size: world / (TP x PP x CP)).
    const Recipe& rr = job.recipe;
    const int model_parallel = std::max(1, rr.tensor_model_parallel_size)
        * std::max(1, rr.pipeline_model_parallel_size) * std::max(1, rr.context_parallel_size);
    const int world = world_size.value_or(e->gpus.value_or(model_parallel));
    if (world < 1 || world % model_parallel != 0)
        throw RecipeError("gpus", "--gpus",
            fmtWorld(world) + " cannot hold " + e->name + "'s layout: TP x PP x CP = "
                + std::to_string(model_parallel) + " must divide the world size");
    job.world_size = world;
    job.recipe.data_parallel_size = world / model_parallel;
    job.notes.insert(job.notes.begin(),
        e->name + " (" + e->source + " at Bridge " + commit + ") on " + fmtWorld(world)
            + ": data-parallel size " + std::to_string(job.recipe.data_parallel_size)
            + (world_size     ? std::string()
                    : e->gpus ? " (the world the name states)"
                              : " (the smallest world the layout needs)"));
    if (!e->hf_model.empty())
        job.notes.push_back("architecture from the Hugging Face config of " + e->hf_model
            + (e->hf_confirmed ? ""
                               : " (assembled from transcriptions of it, not the file itself: "
                                 "resources/bridge/hf-configs.json)"));
    return job;
}

} // namespace rs
