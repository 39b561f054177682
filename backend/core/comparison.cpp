// SPDX-License-Identifier: Apache-2.0
#include "core/comparison.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include "core/recompute_labels.h"

namespace rs {

namespace {

std::string trimmed(const std::string& s)
{
    const auto b = s.find_first_not_of(" \t");
    if (b == std::string::npos)
        return {};
    const auto e = s.find_last_not_of(" \t");
    return s.substr(b, e - b + 1);
}

std::vector<std::string> split(const std::string& s, char sep)
{
    std::vector<std::string> out;
    std::string::size_type start = 0;
    for (;;) {
        const auto at = s.find(sep, start);
        out.push_back(s.substr(start, at == std::string::npos ? std::string::npos : at - start));
        if (at == std::string::npos)
            return out;
        start = at + 1;
    }
}

} // namespace

std::string RecomputeChoice::label() const
{
    if (granularity == "full")
        return "full " + method + " " + std::to_string(num_layers);
    if (modules.empty())
        return "[]";
    std::string s;
    for (const auto& m : modules)
        s += (s.empty() ? "" : ", ") + m;
    return s;
}

bool RecomputeChoice::sameAs(const RecomputeChoice& o) const
{
    auto a = modules, b = o.modules;
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    return granularity == o.granularity && a == b && method == o.method && num_layers == o.num_layers;
}

RecomputeChoice parseRecomputeChoice(const std::string& text)
{
    RecomputeChoice c;
    const std::string t = trimmed(text);
    if (t.rfind("full", 0) == 0 && (t.size() == 4 || t[4] == ':')) {
        const auto parts = split(t, ':');
        int n = 0;
        bool ok = false;
        if (parts.size() == 3 && !parts[2].empty()
            && parts[2].find_first_not_of("0123456789") == std::string::npos && parts[2].size() < 9) {
            n = std::stoi(parts[2]);
            ok = true;
        }
        if (parts.size() != 3 || (parts[1] != "uniform" && parts[1] != "block") || !ok || n < 1)
            throw std::invalid_argument("'" + text
                + "': full recompute is full:METHOD:N with recompute_method uniform or block and "
                  "recompute_num_layers a positive integer (e.g. full:uniform:1)");
        c.granularity = "full";
        c.method = parts[1];
        c.num_layers = n;
        return c;
    }
    for (const auto& part : split(t, ',')) {
        const std::string label = trimmed(part);
        if (label.empty() || label == "[]")
            throw std::invalid_argument("'" + text
                + "': a set is one or more recompute_modules labels separated by commas (e.g. "
                  "layernorm,moe_act); the [] control is always run first");
        c.modules.push_back(label);
    }
    return c;
}

std::optional<RecomputeChoice> readChoiceSpelling(const std::string& text)
{
    if (trimmed(text) == "[]" || trimmed(text).empty())
        return RecomputeChoice {};
    try {
        return parseRecomputeChoice(text);
    } catch (const std::invalid_argument&) {
        return std::nullopt;
    }
}

std::string choiceSpelling(const RecomputeChoice& c)
{
    if (c.granularity == "full")
        return "full:" + c.method + ":" + std::to_string(c.num_layers);
    if (c.modules.empty())
        return "[]";
    std::string s;
    for (const auto& m : c.modules)
        s += (s.empty() ? "" : ",") + m;
    return s;
}

RecomputeChoice recipeChoice(const Recipe& r)
{
    RecomputeChoice c;
    const std::string granularity = r.recompute_granularity.value_or("");
    if (granularity == "full") {
        c.granularity = "full";
        c.method = r.recompute_method.value_or("");
        c.num_layers = r.recompute_num_layers.value_or(0);
    } else if (granularity == "selective") {
        c.modules = effectiveRecomputeModules(r);
    }
    return c;
}

Recipe controlRecipe(const Recipe& recipe)
{
    Recipe control = recipe;
    control.recompute_granularity = std::string("selective");
    control.recompute_modules = std::vector<std::string> {};
    control.recompute_method.reset();
    control.recompute_num_layers.reset();
    control.distribute_saved_activations = false;
    control.moe_layer_recompute = false;
    control.recompute_activations = false;
    return control;
}

bool isControlRecipe(const Recipe& recipe)
{
    return controlRecipe(recipe) == recipe;
}

Recipe candidateRecipe(const Recipe& recipe, const RecomputeChoice& choice)
{
    Recipe r = controlRecipe(recipe);
    r.recompute_granularity = choice.granularity;
    if (choice.granularity == "full") {
        r.recompute_modules.reset();
        r.recompute_method = choice.method;
        r.recompute_num_layers = choice.num_layers;
    } else {
        r.recompute_modules = choice.modules;
    }
    return r;
}

const std::vector<std::string>& fieldsThatMayDiffer()
{
    static const std::vector<std::string> keys = { "name", "recompute_granularity", "recompute_modules",
        "recompute_method", "recompute_num_layers", "distribute_saved_activations", "moe_layer_recompute",
        "memory_target_gb", "checkpoint_activations_flag", "recompute_activations", "schema_version" };
    return keys;
}

bool mayDifferBetweenMatchedRuns(const std::string& key)
{
    const auto& keys = fieldsThatMayDiffer();
    return std::find(keys.begin(), keys.end(), key) != keys.end();
}

MatchResult matchRuns(const RunFacts& run, const RunFacts& control)
{
    MatchResult m;
    auto show = [](const std::optional<std::string>& v) { return v ? *v : std::string("unknown"); };
    for (std::size_t i = 0; i < run.fields.size(); ++i) {
        // Not a structured binding: clang before 16 (the fuzz build) cannot capture one in the lambda below.
        const std::string& name = run.fields[i].first;
        const std::optional<std::string>& value = run.fields[i].second;
        std::optional<std::string> other;
        if (i < control.fields.size() && control.fields[i].first == name) {
            other = control.fields[i].second;
        } else {
            const auto it = std::find_if(
                control.fields.begin(), control.fields.end(), [&](const auto& f) { return f.first == name; });
            if (it != control.fields.end())
                other = it->second;
        }
        if (value != other)
            m.reasons.push_back(name + ": " + show(value) + " vs " + show(other));
    }

    // Both recipes known: every other recipe field must agree too (dropout, CUDA graphs, overlap, ...).
    // Equal match keys say so without reading the recipes.
    if (!run.recipe_match_key.empty() && run.recipe_match_key == control.recipe_match_key) {
        // matched as far as the recipes go
    } else if (run.recipe && control.recipe) {
        static const nlohmann::json kEmpty = nlohmann::json::object();
        const nlohmann::json& a = run.recipe->is_object() ? *run.recipe : kEmpty;
        const nlohmann::json& b = control.recipe->is_object() ? *control.recipe : kEmpty;
        std::set<std::string> keys;
        for (auto it = a.begin(); it != a.end(); ++it)
            keys.insert(it.key());
        for (auto it = b.begin(); it != b.end(); ++it)
            keys.insert(it.key());
        auto text = [](const nlohmann::json& o, const std::string& key) {
            const auto it = o.find(key);
            return it == o.end() ? std::string("absent") : it->dump();
        };
        for (const std::string& key : keys) {
            if (mayDifferBetweenMatchedRuns(key))
                continue;
            const auto ia = a.find(key), ib = b.find(key);
            const bool same
                = (ia == a.end() && ib == b.end()) || (ia != a.end() && ib != b.end() && *ia == *ib);
            if (same)
                continue;
            const std::string line = key + ": " + text(a, key) + " vs " + text(b, key);
            if (std::find(m.reasons.begin(), m.reasons.end(), line) == m.reasons.end())
                m.reasons.push_back(line);
        }
    } else {
        m.notes.push_back("stored fields compared; no full recipe");
    }
    if (run.run_id != 0 && run.run_id == control.run_id)
        m.notes.push_back("the run is its own control");
    m.matched = m.reasons.empty();
    return m;
}

std::optional<double> percentAgainst(double value, double control)
{
    if (!(control > 0))
        return std::nullopt;
    return (value - control) / control * 100.0;
}

ControlDeltas deltasAgainstControl(const MeasuredRun& run, const MeasuredRun& control)
{
    ControlDeltas d;
    if (run.peak_allocated && control.peak_allocated && *control.peak_allocated > 0) {
        if (run.peak_note == control.peak_note) {
            d.allocated_pct = percentAgainst(double(*run.peak_allocated), double(*control.peak_allocated));
        } else {
            auto show = [](const std::string& s) { return s.empty() ? std::string("unknown") : s; };
            d.notes.push_back("peak taken " + show(run.peak_note) + ", the control's "
                + show(control.peak_note) + ": not compared");
        }
    }
    if (run.steady_step_ms && control.steady_step_ms)
        d.time_pct = percentAgainst(*run.steady_step_ms, *control.steady_step_ms);
    return d;
}

} // namespace rs
