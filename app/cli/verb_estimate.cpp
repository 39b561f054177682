// SPDX-License-Identifier: Apache-2.0
// `recompute estimate`: every rank's predicted peak allocated bytes per phase and category, for the
// recipe's own recompute choice or every choice its model can take (core/estimator.h). Exit 0: estimated;
// 1: the recipe has a rule error (estimated anyway, as Megatron would not run it); 2: unusable input.
#include <algorithm>
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "core/estimator.h"
#include "core/recipe_input.h"
#include "core/rules.h"
#include "core/units.h"
#include "verb_common.h"
#include "verbs.h"

namespace {

std::string gb(int64_t bytes)
{
    return rs::formatGb(bytes);
}

const char* kCategories[] = { "parameters", "main_parameters", "gradients", "optimizer_states", "activations",
    "transient", "other" };

void printTable(const rs::MemoryEstimate& e)
{
    std::cout << "choice " << e.choice << " (" << rs::layoutName(e.layout) << " layout): peak "
              << gb(e.peak_bytes) << " GB on stage " << e.ranks[static_cast<size_t>(e.hottest)].stage << "\n";
    // Megatron-LM's "after iteration 1" / "after iteration 2" (the guide's Nemotron 3 Nano table): the
    // first iteration runs before its optimizer step creates Adam's moments.
    std::cout << "first iteration (no Adam moments before its step): " << gb(e.first_iteration_peak_bytes)
              << " GB; from iteration 2 on: " << gb(e.peak_bytes) << " GB\n";
    // Local CUDA graphs: part of the peak is the graphs' private pool, which Megatron's `max allocated` does
    // not count after capture.
    if (e.max_allocated_bytes != e.peak_bytes)
        std::cout << "of which local CUDA graphs' pool: " << gb(e.peak_bytes - e.max_allocated_bytes)
                  << " GB (Megatron's max allocated reads " << gb(e.max_allocated_bytes) << " GB)\n";
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

int estimateMain(const std::vector<std::string>& argv)
{
    rs::cli::ParsedArgs args;
    if (const auto done = rs::cli::parseArgs("estimate", argv, &args))
        return *done;
    const bool json = args.has("json"), all = args.has("all-choices");
    rs::Layout layout = rs::Layout::Megatron;
    if (args.has("layout")) {
        const auto l = rs::layoutFromName(args.value("layout"));
        if (!l)
            return rs::cli::inputError(
                "estimate", "--layout: '" + args.value("layout") + "' is not megatron or worker");
        layout = *l;
    }
    rs::RecipeInput input;
    if (const auto done = rs::cli::readRunRecipe("estimate", args, &input))
        return *done;
    const rs::Validation v = rs::validate(input.recipe, input.format);
    const rs::Recipe& r = v.resolved;
    if (r.num_layers <= 0 || r.hidden_size <= 0 || r.num_attention_heads <= 0) {
        std::cerr << "recompute estimate: " << input.origin
                  << ": the recipe needs num_layers, hidden_size and num_attention_heads"
                  << (input.format == rs::InputFormat::BridgeOverrides && input.origin == "overrides"
                             ? " (overrides change a recipe: give it with --recipe NAME)"
                             : "")
                  << "\n";
        return 2;
    }
    if (!json)
        for (const std::string& n : input.setup_notes)
            std::cout << "recipe: " << n << "\n";
    const rs::MemoryEstimate own = rs::estimateMemory(r, layout);
    if (!own.not_estimated.empty()) {
        std::cerr << "recompute estimate: " << input.origin << ": not estimated: " << own.not_estimated
                  << "\n";
        return 2;
    }
    std::vector<rs::MemoryEstimate> choices;
    std::vector<std::string> refused_by; // a choice's first rule error: Megatron cannot run it (RT30 ...)
    if (all)
        for (const auto& c : rs::recomputeChoices(r)) {
            const rs::Validation cv = rs::validate(rs::candidateRecipe(r, c));
            choices.push_back(rs::estimateMemory(cv.resolved, layout));
            const rs::Finding* error = cv.firstError();
            refused_by.push_back(error ? error->rule_id : std::string());
        }
    if (json) {
        nlohmann::json out = rs::estimateToJson(own);
        out["input"] = input.origin;
        out["recipe_notes"] = input.setup_notes;
        out["has_errors"] = v.hasErrors();
        if (r.memory_target_gb)
            out["memory_target_bytes"] = rs::gbToBytes(*r.memory_target_gb);
        if (all) {
            out["choices"] = nlohmann::json::array();
            for (size_t i = 0; i < choices.size(); ++i) {
                const auto& c = choices[i];
                auto j = rs::estimateToJson(c);
                out["choices"].push_back({ { "choice", c.choice }, { "peak_allocated_bytes", c.peak_bytes },
                    { "max_allocated_bytes", c.max_allocated_bytes },
                    { "first_iteration_peak_allocated_bytes", c.first_iteration_peak_bytes },
                    { "hottest_stage", j["hottest_stage"] }, { "ranks", j["ranks"] },
                    { "refused_by",
                        refused_by[i].empty() ? nlohmann::json(nullptr) : nlohmann::json(refused_by[i]) } });
            }
        }
        std::cout << out.dump(2) << "\n";
    } else {
        if (v.hasErrors())
            std::cout << input.origin
                      << ": the recipe has rule errors (recompute validate); estimated anyway\n";
        printTable(own);
        if (all) {
            std::cout << "\nevery recompute choice (hottest stage's peak; the first iteration's):\n";
            for (size_t i = 0; i < choices.size(); ++i) {
                const auto& c = choices[i];
                const auto& hot = c.ranks[static_cast<size_t>(c.hottest)];
                std::printf("  %-28s %10s GB  stage %d  %-10s  iteration 1: %s GB%s\n", c.choice.c_str(),
                    gb(c.peak_bytes).c_str(), hot.stage, hot.peak_phase.c_str(),
                    gb(c.first_iteration_peak_bytes).c_str(),
                    refused_by[i].empty() ? "" : ("  refused: " + refused_by[i]).c_str());
            }
        }
    }
    return v.hasErrors() ? 1 : 0;
}

} // namespace

RS_REGISTER_VERB("estimate", estimateMain);
