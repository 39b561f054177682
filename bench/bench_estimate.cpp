// SPDX-License-Identifier: Apache-2.0
// bench_estimate: the median time of one memory estimate (every pipeline stage, every phase) per recipe
// and recompute choice, over every choice the recipe's model can take. The recipe page re-estimates every
// choice on each edit, so one estimate must stay well under 50 us.
//   bench_estimate [RECIPE.json] [--runs N] [--layout megatron|worker]
// Default recipe: resources/presets/moonlight-mla-moe.json (MLA + MoE, 27 layers).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/estimator.h"
#include "core/recipe_json.h"
#include "core/rules.h"

namespace {

using Clock = std::chrono::steady_clock;

} // namespace

int main(int argc, char** argv)
{
    std::string path = RS_SOURCE_DIR "/resources/presets/moonlight-mla-moe.json";
    int runs = 20000;
    rs::Layout layout = rs::Layout::Megatron;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--runs" && i + 1 < argc) {
            runs = std::max(100, std::atoi(argv[++i]));
        } else if (a == "--layout" && i + 1 < argc) {
            const auto l = rs::layoutFromName(argv[++i]);
            if (!l) {
                std::fprintf(stderr, "bench_estimate: --layout megatron|worker\n");
                return 2;
            }
            layout = *l;
        } else if (a == "--help" || a == "-h") {
            std::printf("usage: bench_estimate [RECIPE.json] [--runs N] [--layout megatron|worker]\n");
            return 0;
        } else {
            path = a;
        }
    }
    std::ifstream in(path);
    if (!in) {
        std::fprintf(stderr, "bench_estimate: cannot read %s\n", path.c_str());
        return 2;
    }
    std::stringstream text;
    text << in.rdbuf();
    const rs::Recipe recipe = rs::validate(rs::recipeFromJsonText(text.str(), path)).resolved;
    const auto choices = rs::recomputeChoices(recipe);
    std::vector<rs::Recipe> variants;
    for (const auto& c : choices)
        variants.push_back(rs::candidateRecipe(recipe, c));

    volatile int64_t sink = 0;
    for (int i = 0; i < 200; ++i)
        for (const auto& v : variants)
            sink = sink + rs::estimateMemory(v, layout).peak_bytes;
    // Batches of every choice, each batch timed once.
    const int batches = std::max(1, runs / static_cast<int>(variants.size()));
    std::vector<double> per;
    per.reserve(static_cast<size_t>(batches));
    for (int b = 0; b < batches; ++b) {
        const auto t0 = Clock::now();
        for (const auto& v : variants)
            sink = sink + rs::estimateMemory(v, layout).peak_bytes;
        const auto t1 = Clock::now();
        per.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / variants.size());
    }
    std::sort(per.begin(), per.end());
    const auto at = [&](double q) { return per[static_cast<size_t>(q * (per.size() - 1))]; };
    std::printf("recipe %s (%s layout), %zu choices, %d estimates\n", path.c_str(), rs::layoutName(layout),
        variants.size(), batches * static_cast<int>(variants.size()));
    std::printf("per estimate: median %.2f us, p10 %.2f us, p90 %.2f us, min %.2f us\n", at(0.5), at(0.1),
        at(0.9), per.front());
    return at(0.5) < 50.0 ? 0 : 1;
}
