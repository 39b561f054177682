// SPDX-License-Identifier: Apache-2.0
// The rules engine around the table (rules_table.cpp): the evaluation loop, Python renderings of
// placeholder values, sources with their commits, the catalogue, and the label effects.
#include "core/rules.h"

#include <algorithm>
#include <cstring>

#include "core/model_shape.h"
#include "core/recipe_json.h"
#include "core/rules_detail.h"

namespace rs {

using namespace rules_detail;

namespace rules_detail {

unsigned profileBit(Profile p)
{
    return 1u << profileIndex(p);
}

unsigned formatBit(InputFormat f)
{
    switch (f) {
    case InputFormat::Json:
        return kJson;
    case InputFormat::BridgeOverrides:
        return kBridge;
    case InputFormat::MegatronFlags:
        return kFlags;
    }
    return kJson;
}

bool Ctx::has(std::string_view label) const
{
    if (!r.recompute_modules)
        return false;
    for (const auto& l : *r.recompute_modules)
        if (l == label)
            return true;
    return false;
}

bool Ctx::cg(std::string_view module) const
{
    if (!r.cuda_graph_modules)
        return false;
    for (const auto& m : *r.cuda_graph_modules)
        if (m == module)
            return true;
    return false;
}

int Ctx::moeLayers() const
{
    return moeLayerCount(r);
}

int Ctx::denseLayers() const
{
    if (isHybrid(r)) {
        const std::string main = parseHybridPattern(*r.hybrid_layer_pattern).main;
        return static_cast<int>(std::count(main.begin(), main.end(), '-'));
    }
    return r.num_layers - moeLayers();
}

int Ctx::chunkLayers() const
{
    return largestChunkLayers(r);
}

const char* pyBool(bool b)
{
    return b ? "True" : "False";
}

std::string pyStr(const std::optional<std::string>& s)
{
    return s ? *s : std::string("None");
}

std::string pyRepr(const std::string& s)
{
    // Python picks double quotes when the text holds a single quote and no double quote.
    const bool dq = s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
    const char q = dq ? '"' : '\'';
    std::string out(1, q);
    for (char ch : s) {
        if (ch == '\\' || ch == q)
            out += '\\';
        out += ch;
    }
    out += q;
    return out;
}

std::string pyList(const std::vector<std::string>& v)
{
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i) {
        if (i)
            out += ", ";
        out += pyRepr(v[i]);
    }
    return out + "]";
}

std::string pyOptList(const std::optional<std::vector<std::string>>& v)
{
    return v ? pyList(*v) : std::string("None");
}

std::string pySet(const std::vector<std::string>& v)
{
    std::string out;
    std::vector<const std::string*> seen;
    for (const auto& s : v) {
        if (std::any_of(seen.begin(), seen.end(), [&](const std::string* p) { return *p == s; }))
            continue;
        seen.push_back(&s);
        out += out.empty() ? "{" : ", ";
        out += pyRepr(s);
    }
    return out.empty() ? std::string("set()") : out + "}";
}

std::string pyInt(const std::optional<int>& v)
{
    return v ? std::to_string(*v) : std::string("None");
}

std::vector<std::string> modulesWithout(const Ctx& c, std::initializer_list<const char*> drop)
{
    std::vector<std::string> out;
    if (!c.r.recompute_modules)
        return out;
    for (const auto& l : *c.r.recompute_modules) {
        bool dropped = false;
        for (const char* d : drop)
            dropped = dropped || l == d;
        if (!dropped)
            out.push_back(l);
    }
    return out;
}

std::vector<std::string> modulesWith(const Ctx& c, const char* add)
{
    std::vector<std::string> out = c.r.recompute_modules.value_or(std::vector<std::string> {});
    if (std::find(out.begin(), out.end(), add) == out.end())
        out.emplace_back(add);
    return out;
}

bool rowExists(const Row& row, Profile p)
{
    std::string_view list(row.profiles);
    if (list == "*")
        return true;
    while (!list.empty()) {
        const size_t sp = list.find(' ');
        const std::string_view name = list.substr(0, sp);
        if (!name.empty() && profileIsOrIsBasedOn(p, name))
            return true;
        if (sp == std::string_view::npos)
            break;
        list.remove_prefix(sp + 1);
    }
    return false;
}

std::vector<std::string> unknownProfileNames(const Row& row)
{
    std::vector<std::string> out;
    auto check = [&out](std::string_view name) {
        if (name != "*" && !findProfileInfo(name))
            out.emplace_back(name);
    };
    std::string_view list(row.profiles);
    while (!list.empty()) {
        const size_t sp = list.find(' ');
        if (sp != 0)
            check(list.substr(0, sp));
        if (sp == std::string_view::npos)
            break;
        list.remove_prefix(sp + 1);
    }
    if (std::string_view(row.profiles).empty())
        out.emplace_back("(empty profile list)");
    for (const Src& s : row.sources)
        check(s.profile);
    return out;
}

} // namespace rules_detail

namespace {

std::string expandSource(const std::string& s, Origin origin); // below

// The source a row gives for a profile: its own, then its bases', then the reference profile's, then the
// first in table order. `from` is the profile the line was read at ("*": the one asked about).
const Src* findSource(const Row& row, Profile p, const ProfileInfo*& from)
{
    auto own = [&row](std::string_view name) -> const Src* {
        for (const Src& s : row.sources)
            if (name == s.profile)
                return &s;
        return nullptr;
    };
    if (const Src* s = own("*")) {
        from = &profileInfo(p);
        return s;
    }
    std::vector<const ProfileInfo*> order;
    for (const ProfileInfo* at = &profileInfo(p); at && order.size() <= profileTable().size();
         at = at->based_on ? findProfileInfo(at->based_on) : nullptr)
        order.push_back(at);
    order.push_back(&referenceProfile());
    for (const ProfileInfo& row_info : profileTable())
        order.push_back(&row_info);
    for (const ProfileInfo* at : order) {
        if (const Src* s = own(at->name)) {
            from = at;
            return s;
        }
    }
    from = nullptr;
    return nullptr;
}

} // namespace

namespace rules_detail {

// The source of a row under a profile, with the commit it was read at.
std::string rowSource(const Row& row, Profile p)
{
    const ProfileInfo& asked = profileInfo(p);
    const ProfileInfo* from = nullptr;
    const Src* src = findSource(row, p, from);
    if (!src)
        return {};
    switch (row.origin) {
    case Origin::Bridge:
        return expandSource(src->where, row.origin) + " @ Megatron-Bridge " + from->shortBridgeCommit();
    case Origin::Guide: {
        // docs/rules.md#<id>, then the Megatron lines the advice rests on, read at the reference profile.
        std::string out = expandSource(src->where, row.origin);
        if (out.find("megatron/") != std::string::npos)
            out += " @ Megatron-LM " + referenceProfile().shortCommit() + " (" + referenceProfile().name
                + ")";
        return out;
    }
    case Origin::Observed:
        return expandSource(src->where, row.origin) + " (observed on Megatron-LM " + referenceProfile().name
            + " " + referenceProfile().shortCommit() + ")";
    case Origin::MCore:
        break;
    }
    std::string out
        = expandSource(src->where, row.origin) + " @ Megatron-LM " + from->shortCommit() + " (" + from->name;
    // No line given at this profile's commit: the nearest one given, and say so.
    if (from != &asked)
        out += std::string("; the reference gives no line at ") + asked.name + " " + asked.shortCommit();
    return out + ")";
}

} // namespace rules_detail

namespace {

// "TC:1884" -> "megatron/core/transformer/transformer_config.py:1884", each ';'-separated part.
std::string expandSource(const std::string& s, Origin origin)
{
    static const std::pair<const char*, const char*> abbrev[] = {
        { "TC(dev)", "megatron/core/transformer/transformer_config.py" },
        { "TC", "megatron/core/transformer/transformer_config.py" },
        { "MPC", "megatron/core/model_parallel_config.py" },
        { "ARGS", "megatron/training/arguments.py" },
        { "TL", "megatron/core/transformer/transformer_layer.py" },
        { "TB", "megatron/core/transformer/transformer_block.py" },
        { "RND", "megatron/core/tensor_parallel/random.py" },
        { "RC", "megatron/core/recompute.py" },
    };
    std::string out;
    size_t start = 0;
    while (start <= s.size()) {
        size_t end = s.find("; ", start);
        std::string part = s.substr(start, end == std::string::npos ? std::string::npos : end - start);
        const size_t colon = part.find(':');
        bool expanded = false;
        if (colon != std::string::npos) {
            for (const auto& [from, to] : abbrev) {
                if (part.compare(0, colon, from) == 0 && std::strlen(from) == colon) {
                    part = to + part.substr(colon);
                    expanded = true;
                    break;
                }
            }
        }
        if (!expanded && origin == Origin::Bridge && part.rfind("scripts/", 0) != 0)
            part = "src/megatron/bridge/" + part;
        out += (out.empty() ? "" : "; ") + part;
        if (end == std::string::npos)
            break;
        start = end + 2;
    }
    return out;
}

std::vector<std::string> splitFields(const char* fields)
{
    std::vector<std::string> out;
    const char* p = fields;
    while (*p) {
        while (*p == ' ')
            ++p;
        const char* b = p;
        while (*p && *p != ' ')
            ++p;
        if (p > b)
            out.emplace_back(b, p);
    }
    return out;
}

// Per-row data built once, so a validation copies it instead of building it.
struct RowMeta {
    std::vector<std::string> fields;
    unsigned profiles = 0; // profileBit of every profile where the row exists
    std::vector<std::string> source; // per profile table row
    bool is_r36 = false;
};

const std::vector<RowMeta>& rowMeta()
{
    static const std::vector<RowMeta> meta = [] {
        std::vector<RowMeta> m;
        for (const Row& row : ruleRows()) {
            RowMeta rm;
            rm.fields = splitFields(row.fields);
            rm.source.resize(profileTable().size());
            for (Profile p : allProfiles()) {
                if (rowExists(row, p))
                    rm.profiles |= profileBit(p);
                rm.source[profileIndex(p)] = rowSource(row, p);
            }
            rm.is_r36 = std::strcmp(row.id, "R36") == 0;
            m.push_back(std::move(rm));
        }
        return m;
    }();
    return meta;
}

std::string renderMessage(const char* tmpl, const Args& args)
{
    std::string out;
    out.reserve(std::strlen(tmpl) + 64);
    const char* p = tmpl;
    while (*p) {
        const char* open = std::strchr(p, '{');
        if (!open) {
            out.append(p);
            break;
        }
        out.append(p, open);
        p = open;
        const char* close = std::strchr(open, '}');
        const Args::Value* value = nullptr;
        if (close) {
            const std::string_view name(open + 1, static_cast<size_t>(close - open - 1));
            for (size_t i = 0; i < args.n && !value; ++i)
                if (name == args.kv[i].first)
                    value = &args.kv[i];
        }
        if (value) {
            out += value->second;
            p = close + 1;
        } else {
            out += *p++; // a literal brace
        }
    }
    return out;
}

int severityRank(Severity s)
{
    switch (s) {
    case Severity::Error:
        return 3;
    case Severity::Warning:
        return 2;
    case Severity::Note:
        return 1;
    case Severity::Adjustment:
        return 0;
    }
    return 0;
}

void addUnique(std::vector<std::string>& v, const std::string& s)
{
    if (!s.empty() && std::find(v.begin(), v.end(), s) == v.end())
        v.push_back(s);
}

std::string join(const std::vector<std::string>& v, const char* sep)
{
    std::string out;
    for (const auto& s : v)
        out += (out.empty() ? "" : sep) + s;
    return out;
}

} // namespace

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
    return firstError() != nullptr;
}

const Finding* Validation::firstError() const
{
    const auto it = std::find_if(
        findings.begin(), findings.end(), [](const Finding& f) { return f.severity == Severity::Error; });
    return it == findings.end() ? nullptr : &*it;
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

Validation validate(const Recipe& recipe, InputFormat format)
{
    Validation v;
    Ctx c;
    c.r = recipe;
    c.profile = recipe.profile;
    c.format = format;
    c.modules_given = recipe.recompute_modules.has_value();
    if (format == InputFormat::BridgeOverrides && !recipe.explicit_keys.empty()) {
        // Read from overrides (which mark what they set): Bridge's providers default these to 0, and an
        // override that does not set one leaves it unknown.
        const std::pair<const char*, int> shape[] = { { "num_layers", recipe.num_layers },
            { "hidden_size", recipe.hidden_size }, { "num_attention_heads", recipe.num_attention_heads } };
        for (const auto& [key, value] : shape)
            if (value == 0 && !isExplicit(recipe, key))
                c.unknown_shape.emplace_back(key);
        // Whether the model has experts is the recipe's too (unset: dense is only Bridge's default).
        if (!c.unknown_shape.empty() && !recipe.num_moe_experts && !isExplicit(recipe, "num_moe_experts"))
            c.unknown_shape.emplace_back("num_moe_experts");
    }
    c.out = &v.findings;
    v.findings.reserve(16);
    const unsigned pbit = profileBit(c.profile);
    const unsigned fbit = formatBit(format);
    const std::size_t pi = profileIndex(c.profile);
    const auto& rows = ruleRows();
    const auto& meta = rowMeta();
    for (size_t i = 0; i < rows.size(); ++i) {
        const Row& row = rows[i];
        if (!row.when || !(meta[i].profiles & pbit) || !(row.formats & fbit))
            continue;
        if (!c.unknown_shape.empty() && std::strcmp(row.id, "RS30") != 0
            && std::any_of(meta[i].fields.begin(), meta[i].fields.end(), [&c](const std::string& f) {
                   return std::find(c.unknown_shape.begin(), c.unknown_shape.end(), f)
                       != c.unknown_shape.end();
               }))
            continue;
        if (!row.when(c))
            continue;
        Finding f;
        if (row.args) {
            Args a;
            row.args(c, a);
            f.message = renderMessage(row.message, a);
        } else {
            f.message = row.message;
        }
        // Under Bridge, B4 has already said what R36's recompute asserts would say again at finalize.
        if (meta[i].is_r36 && format == InputFormat::BridgeOverrides
            && std::any_of(v.findings.begin(), v.findings.end(),
                [&](const Finding& g) { return g.rule_id == "B4" && g.message == f.message; }))
            continue;
        f.rule_id = row.id;
        f.severity = row.severity;
        f.fields = meta[i].fields;
        f.source = meta[i].source[pi];
        if (row.fix) {
            FixIt fix;
            row.fix(c, fix);
            if (!fix.description.empty()) // a fix-it may have nothing to offer for this recipe
                f.fixit = std::move(fix);
        }
        v.findings.push_back(std::move(f));
        if (row.adjust)
            row.adjust(c);
    }
    v.resolved = std::move(c.r);
    return v;
}

std::string frontEndRuleRange(InputFormat format)
{
    const unsigned bit = formatBit(format);
    std::string prefix;
    int lo = 0, hi = 0;
    for (const Row& row : ruleRows()) {
        if (row.formats != bit)
            continue;
        const std::string id = row.id;
        const size_t digits = id.find_first_of("0123456789");
        if (digits != 1)
            continue; // B / M: Bridge's and Megatron-LM's own; RS rules are ours, whatever the front end
        prefix = id.substr(0, digits);
        const int n = std::stoi(id.substr(digits));
        lo = lo == 0 ? n : std::min(lo, n);
        hi = std::max(hi, n);
    }
    return prefix.empty() ? std::string() : prefix + std::to_string(lo) + "-" + prefix + std::to_string(hi);
}

const std::vector<RuleInfo>& ruleCatalogue()
{
    static const std::vector<RuleInfo> catalogue = [] {
        std::vector<RuleInfo> out;
        const auto& rows = ruleRows();
        std::vector<std::string> ids;
        for (const Row& row : rows)
            addUnique(ids, row.id);
        for (const auto& id : ids) {
            RuleInfo info;
            info.id = id;
            unsigned profiles = 0;
            std::vector<std::string> summaries, fixits, reasons;
            int rank = -1;
            for (const Row& row : rows) {
                if (id != row.id)
                    continue;
                profiles |= rowMeta()[size_t(&row - rows.data())].profiles;
                for (const auto& f : splitFields(row.fields))
                    addUnique(info.fields, f);
                addUnique(summaries, row.summary);
                addUnique(fixits, row.fixit);
                addUnique(reasons, row.reason);
                if (severityRank(row.severity) > rank) {
                    rank = severityRank(row.severity);
                    info.severity = row.severity;
                }
            }
            for (Profile p : allProfiles())
                if (profiles & profileBit(p))
                    info.profiles.push_back(p);
            // Per profile: its messages and sources; equal neighbours merge into one variant.
            for (Profile p : info.profiles) {
                std::vector<std::string> msgs, srcs;
                for (size_t i = 0; i < rows.size(); ++i) {
                    if (id != rows[i].id || !(rowMeta()[i].profiles & profileBit(p)))
                        continue;
                    addUnique(msgs, rows[i].message);
                    addUnique(srcs, rowMeta()[i].source[profileIndex(p)]);
                }
                RuleVariant var { { p }, join(msgs, "\n"), join(srcs, "; ") };
                auto same = std::find_if(info.variants.begin(), info.variants.end(),
                    [&](const RuleVariant& x) { return x.message == var.message && x.source == var.source; });
                if (same != info.variants.end())
                    same->profiles.push_back(p);
                else
                    info.variants.push_back(std::move(var));
            }
            const Profile reference = referenceProfile().id;
            const Profile primary = (profiles & profileBit(reference)) ? reference : info.profiles.front();
            for (const auto& var : info.variants) {
                if (std::find(var.profiles.begin(), var.profiles.end(), primary) != var.profiles.end()) {
                    info.message = var.message;
                    info.source = var.source;
                }
            }
            info.summary = join(summaries, "\n");
            info.fixit = join(fixits, "; ");
            info.reason = join(reasons, " ");
            out.push_back(std::move(info));
        }
        return out;
    }();
    return catalogue;
}

const RuleInfo* findRule(const std::string& id)
{
    for (const auto& r : ruleCatalogue())
        if (r.id == id)
            return &r;
    return nullptr;
}

const std::vector<std::string>& allowedRecomputeModules(Profile p)
{
    // In the order the source lists them (R11's set literal), which is also the order R11 prints them in.
    return profileInfo(p).recompute_labels;
}

std::optional<std::string> suggestedRecomputeLabel(const std::string& label, Profile p)
{
    const auto& allowed = allowedRecomputeModules(p);
    if (std::find(allowed.begin(), allowed.end(), label) != allowed.end())
        return std::nullopt;
    const std::string near = nearestName(label, allowed);
    // A typo, not another word: "core_atn" is 1 from "core_attn"; "foo" is 5 from "mlp" and no suggestion.
    if (near.empty() || nameDistance(label, near) > std::max<std::size_t>(2, label.size() / 3))
        return std::nullopt;
    return near;
}

LabelEffect recomputeLabelEffect(const Recipe& r, const std::string& label)
{
    const auto& allowed = allowedRecomputeModules(r.profile);
    const RecomputeLabel* row = findRecomputeLabel(label);
    if (!row || std::find(allowed.begin(), allowed.end(), label) == allowed.end()) {
        LabelEffect e;
        e.reason
            = std::string("'") + label + "' is not a recompute label at " + profileName(r.profile) + " (R11)";
        return e;
    }
    return row->effect(r);
}

} // namespace rs
