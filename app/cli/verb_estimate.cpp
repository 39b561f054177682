// SPDX-License-Identifier: Apache-2.0
// `recompute estimate`: every rank's predicted peak allocated bytes per phase and category, for the
// recipe's own recompute choice or every choice its model can take (core/estimator.h). Exit 0: estimated;
// 1: the recipe has a rule error (estimated anyway, as Megatron would not run it); 2: unusable input.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/estimator.h"
#include "core/recipe_input.h"
#include "core/rules.h"
#include "verbs.h"

namespace {

const char* kUsage
    = "usage: recompute estimate FILE.json | - | --overrides KEY=VALUE... | --mlm-args FLAGS...\n"
      "                          [--profile P] [--layout megatron|worker] [--json] [--all-choices]\n"
      "  Predicts every pipeline stage's peak allocated memory per phase (forward, backward, optimizer,\n"
      "  optimizer-init) and category (parameters, main parameters, gradients, optimizer states,\n"
      "  activations, transient, other), hottest stage first, for the recipe after Megatron's adjustments.\n"
      "  --layout megatron (default): what Megatron-LM / Megatron Core allocate on a GPU;\n"
      "  --layout worker: what recompute-bench allocates today (docs/estimator.md says how they differ).\n"
      "  --all-choices: also every recompute choice the model can take ([], each label with an effect,\n"
      "  full uniform 1, full block over a whole chunk), one line each.\n"
      "  --json prints {\"peak_allocated_bytes\": hottest stage's peak, \"ranks\": [...], \"choices\": "
      "[...]}.\n"
      "  Exit status: 0 estimated, 1 the recipe has a rule error (estimated anyway), 2 unusable input.\n";

std::string gb(int64_t bytes)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(bytes) / 1e9);
    return buf;
}

const char* kCategories[] = { "parameters", "main_parameters", "gradients", "optimizer_states", "activations",
    "transient", "other" };

void printTable(const rs::MemoryEstimate& e)
{
    std::cout << "choice " << e.choice << " (" << rs::layoutName(e.layout) << " layout): peak "
              << gb(e.peak_bytes) << " GB on stage " << e.ranks[static_cast<size_t>(e.hottest)].stage << "\n";
    std::vector<const rs::RankEstimate*> order;
    for (const auto& r : e.ranks)
        order.push_back(&r);
    std::stable_sort(order.begin(), order.end(),
        [](const rs::RankEstimate* a, const rs::RankEstimate* b) { return a->peak_bytes > b->peak_bytes; });
    std::printf("%-6s %-15s %10s", "stage", "phase", "peak GB");
    const char* heads[] = { "params", "main", "grads", "states", "acts", "transient", "other" };
    for (const char* h : heads)
        std::printf(" %10s", h);
    std::printf("\n");
    for (const auto* r : order) {
        for (const auto& p : r->phases) {
            std::printf("%-6d %-15s %10s", r->stage,
                (p.phase + (p.phase == r->peak_phase ? " *" : "")).c_str(), gb(p.peak_bytes).c_str());
            for (const char* c : kCategories)
                std::printf(" %10s", gb(p.category(c)).c_str());
            std::printf("\n");
        }
        std::cout << "       " << r->scope << "; " << r->in_flight_micro_batches
                  << " micro-batch(es) in flight\n";
    }
    std::cout << "terms at the peak of stage " << e.ranks[static_cast<size_t>(e.hottest)].stage << ":\n";
    for (const auto& t : e.ranks[static_cast<size_t>(e.hottest)].peak().terms)
        std::cout << "  " << gb(t.bytes) << " GB  " << t.category << ": " << t.name << "  [" << t.source
                  << "] " << t.note << "\n";
    for (const auto& a : e.assumptions)
        std::cout << "assumes: " << a << "\n";
}

int estimateMain(const std::vector<std::string>& rawArgs)
{
    const auto mlm = std::find(rawArgs.begin(), rawArgs.end(), "--mlm-args");
    if (rawArgs.empty() || std::any_of(rawArgs.begin(), mlm, [](const std::string& a) {
            return a == "--help" || a == "-h";
        })) {
        (rawArgs.empty() ? std::cerr : std::cout) << kUsage;
        return rawArgs.empty() ? 2 : 0;
    }
    bool json = false, all = false;
    rs::Layout layout = rs::Layout::Megatron;
    std::vector<std::string> args;
    for (size_t i = 0; i < rawArgs.size(); ++i) {
        const auto& a = rawArgs[i];
        const bool ours = rawArgs.begin() + static_cast<long>(i) < mlm;
        if (a == "--json") {
            json = true;
        } else if (ours && a == "--all-choices") {
            all = true;
        } else if (ours && (a == "--layout" || a.rfind("--layout=", 0) == 0)) {
            std::string v = a == "--layout" ? (i + 1 < rawArgs.size() ? rawArgs[++i] : "") : a.substr(9);
            const auto l = rs::layoutFromName(v);
            if (!l) {
                std::cerr << "recompute estimate: --layout: '" << v << "' is not megatron or worker\n";
                return 2;
            }
            layout = *l;
        } else {
            args.push_back(a);
        }
    }
    rs::RecipeInput input;
    try {
        std::vector<std::string> rest;
        input = rs::readRecipeInput(args, &rest);
        if (!rest.empty()) {
            std::cerr << "recompute estimate: arguments: unexpected argument '" << rest.front() << "'\n"
                      << kUsage;
            return 2;
        }
    } catch (const std::exception& e) {
        std::cerr << "recompute estimate: " << e.what() << "\n";
        return 2;
    }
    const rs::Validation v = rs::validate(input.recipe, input.format);
    const rs::Recipe& r = v.resolved;
    if (r.num_layers <= 0 || r.hidden_size <= 0 || r.num_attention_heads <= 0) {
        std::cerr << "recompute estimate: " << input.origin
                  << ": the recipe needs num_layers, hidden_size and num_attention_heads\n";
        return 2;
    }
    const rs::MemoryEstimate own = rs::estimateMemory(r, layout);
    std::vector<rs::MemoryEstimate> choices;
    if (all)
        for (const auto& c : rs::recomputeChoices(r))
            choices.push_back(rs::estimateMemory(rs::validate(rs::candidateRecipe(r, c)).resolved, layout));
    if (json) {
        nlohmann::json out = rs::estimateToJson(own);
        out["input"] = input.origin;
        out["has_errors"] = v.hasErrors();
        if (r.memory_target_gb)
            out["memory_target_bytes"] = static_cast<int64_t>(*r.memory_target_gb * 1e9);
        if (all) {
            out["choices"] = nlohmann::json::array();
            for (const auto& c : choices) {
                auto j = rs::estimateToJson(c);
                out["choices"].push_back({ { "choice", c.choice }, { "peak_allocated_bytes", c.peak_bytes },
                    { "hottest_stage", j["hottest_stage"] }, { "ranks", j["ranks"] } });
            }
        }
        std::cout << out.dump(2) << "\n";
    } else {
        if (v.hasErrors())
            std::cout << input.origin
                      << ": the recipe has rule errors (recompute validate); estimated anyway\n";
        printTable(own);
        if (all) {
            std::cout << "\nevery recompute choice (hottest stage's peak):\n";
            for (const auto& c : choices) {
                const auto& hot = c.ranks[static_cast<size_t>(c.hottest)];
                std::printf("  %-28s %10s GB  stage %d  %s\n", c.choice.c_str(), gb(c.peak_bytes).c_str(),
                    hot.stage, hot.peak_phase.c_str());
            }
        }
    }
    return v.hasErrors() ? 1 : 0;
}

} // namespace

RS_REGISTER_VERB("estimate", "predict every rank's peak memory per phase, for one or every recompute choice",
    estimateMain);
