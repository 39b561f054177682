// SPDX-License-Identifier: Apache-2.0
// `recompute explain RULE_ID`: one rule of the catalogue, with its profiles, sources and messages.
#include <algorithm>
#include <cctype>
#include <iostream>

#include <nlohmann/json.hpp>

#include "core/recipe_json.h"
#include "core/rules.h"
#include "verb_common.h"
#include "verbs.h"

namespace {

std::string upper(std::string s)
{
    for (char& c : s)
        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return s;
}

std::string profiles(const std::vector<rs::Profile>& ps)
{
    std::string out;
    for (rs::Profile p : ps)
        out += (out.empty() ? "" : ", ") + std::string(rs::profileName(p));
    return out;
}

void indent(const std::string& text, const char* pad)
{
    size_t start = 0;
    while (start <= text.size()) {
        const size_t end = text.find('\n', start);
        std::cout << pad << text.substr(start, end == std::string::npos ? std::string::npos : end - start)
                  << "\n";
        if (end == std::string::npos)
            break;
        start = end + 1;
    }
}

int explainMain(const std::vector<std::string>& argv)
{
    rs::cli::ParsedArgs args;
    if (const auto done = rs::cli::parseArgs("explain", argv, &args))
        return *done;
    const bool json = args.has("json"), list = args.has("list");
    if (args.positionals.size() > 1)
        return rs::cli::inputError("explain",
            "one RULE_ID at a time (got " + args.positionals[0] + " and " + args.positionals[1] + ")");
    const std::string id = args.positionals.empty() ? std::string() : args.positionals.front();
    if (list) {
        for (const auto& r : rs::ruleCatalogue())
            std::cout << r.id << std::string(r.id.size() < 6 ? 6 - r.id.size() : 1, ' ')
                      << rs::severityName(r.severity)
                      << std::string(
                             12 - std::min<size_t>(11, std::string(rs::severityName(r.severity)).size()), ' ')
                      << r.summary.substr(0, r.summary.find('\n')) << "\n";
        return 0;
    }
    if (id.empty()) {
        return rs::cli::usageError("explain", "give a RULE_ID");
    }
    const rs::RuleInfo* rule = rs::findRule(upper(id));
    if (!rule) {
        std::vector<std::string> ids;
        for (const auto& r : rs::ruleCatalogue())
            ids.push_back(r.id);
        std::cerr << "recompute explain: RULE_ID: unknown rule '" << id
                  << "'; nearest: " << rs::nearestName(upper(id), ids)
                  << " (recompute explain --list lists them all)\n";
        return 2;
    }
    if (json) {
        nlohmann::json j = { { "id", rule->id }, { "severity", rs::severityName(rule->severity) },
            { "fields", rule->fields }, { "summary", rule->summary }, { "message", rule->message },
            { "source", rule->source }, { "fixit", rule->fixit }, { "reason", rule->reason } };
        j["profiles"] = nlohmann::json::array();
        for (rs::Profile p : rule->profiles)
            j["profiles"].push_back(rs::profileName(p));
        j["variants"] = nlohmann::json::array();
        for (const auto& v : rule->variants) {
            nlohmann::json pj = nlohmann::json::array();
            for (rs::Profile p : v.profiles)
                pj.push_back(rs::profileName(p));
            j["variants"].push_back({ { "profiles", pj }, { "message", v.message }, { "source", v.source } });
        }
        std::cout << j.dump(2) << "\n";
        return 0;
    }
    std::cout << rule->id << " (" << rs::severityName(rule->severity) << ")\n";
    indent(rule->summary, "  - ");
    std::cout << "profiles: " << profiles(rule->profiles) << "\n";
    if (!rule->fields.empty()) {
        std::string f;
        for (const auto& x : rule->fields)
            f += (f.empty() ? "" : ", ") + x;
        std::cout << "fields:   " << f << "\n";
    }
    std::cout << "message:\n";
    indent(rule->message, "  ");
    if (!rule->fixit.empty())
        std::cout << "fix-it:   " << rule->fixit << "\n";
    if (!rule->reason.empty())
        std::cout << "why:      " << rule->reason << "\n";
    std::cout << "sources:\n";
    for (const auto& v : rule->variants) {
        std::cout << "  " << profiles(v.profiles) << ": " << v.source << "\n";
        if (v.message != rule->message) // this profile's wording differs
            indent(v.message, "    ");
    }
    return 0;
}

} // namespace

RS_REGISTER_VERB("explain", explainMain);
