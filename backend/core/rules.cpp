// SPDX-License-Identifier: Apache-2.0
// First increment: the interface compiles and answers; the rule table follows in rules_table.cpp.
#include "core/rules.h"

#include <algorithm>

namespace rs {

const char* severityName(Severity s)
{
    switch (s) {
    case Severity::Error:
        return "error";
    case Severity::Warning:
        return "warning";
    case Severity::Note:
        return "note";
    case Severity::Adjustment:
        return "adjustment";
    }
    return "error";
}

bool Validation::hasErrors() const
{
    return std::any_of(
        findings.begin(), findings.end(), [](const Finding& f) { return f.severity == Severity::Error; });
}

nlohmann::json findingToJson(const Finding& f)
{
    nlohmann::json j = { { "rule_id", f.rule_id }, { "severity", severityName(f.severity) },
        { "fields", f.fields }, { "message", f.message }, { "source", f.source } };
    if (f.fixit)
        j["fixit"] = { { "description", f.fixit->description }, { "patch", f.fixit->patch } };
    else
        j["fixit"] = nullptr;
    return j;
}

const std::vector<std::string>& allowedRecomputeModules(Profile p)
{
    static const std::vector<std::string> pin = { "core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp",
        "moe", "shared_experts", "gdn_norm_out" };
    static const std::vector<std::string> main = { "core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp",
        "moe", "shared_experts", "gdn_norm_out", "gdp_in_proj", "gdp_qkv", "mhc" };
    static const std::vector<std::string> dev = { "core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp",
        "moe", "shared_experts", "mhc", "gdn", "gdn_norm_out" };
    switch (p) {
    case Profile::Main:
        return main;
    case Profile::Dev:
        return dev;
    case Profile::BridgePin:
    case Profile::Guide:
        return pin;
    }
    return pin;
}

const std::vector<RuleInfo>& ruleCatalogue()
{
    static const std::vector<RuleInfo> rules;
    return rules;
}

const RuleInfo* findRule(const std::string& id)
{
    for (const auto& r : ruleCatalogue())
        if (r.id == id)
            return &r;
    return nullptr;
}

Validation validate(const Recipe& recipe, InputFormat /*format*/)
{
    Validation v;
    v.resolved = recipe;
    return v;
}

LabelEffect recomputeLabelEffect(const Recipe& r, const std::string& label)
{
    const auto& allowed = allowedRecomputeModules(r.profile);
    LabelEffect e;
    e.exists = std::find(allowed.begin(), allowed.end(), label) != allowed.end();
    e.has_effect = e.exists;
    return e;
}

} // namespace rs
