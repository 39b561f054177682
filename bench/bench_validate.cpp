// SPDX-License-Identifier: Apache-2.0
// bench_validate: the median time of one validation (the whole rule table, every profile's rows that
// apply) of a realistic recipe. The GUI validates on every edit, so this must stay far below a frame.
//   bench_validate [RECIPE.json] [--runs N]
// Default recipe: resources/presets/moonlight-mla-moe.json (MLA + MoE, the guide's Moonlight study).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/recipe_json.h"
#include "core/rules.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Stats {
    double median_us, p10_us, p90_us, min_us;
    size_t findings;
};

// Batches of `batch` validations, each batch timed once: the clock's own cost stays out of the figure.
Stats measure(const rs::Recipe& recipe, rs::InputFormat format, int runs, int batch)
{
    volatile size_t sink = 0;
    for (int i = 0; i < 2000; ++i) // warm the caches and the catalogue statics
        sink = sink + rs::validate(recipe, format).findings.size();
    std::vector<double> perValidation;
    perValidation.reserve(static_cast<size_t>(runs / batch + 1));
    for (int done = 0; done < runs; done += batch) {
        const auto t0 = Clock::now();
        for (int i = 0; i < batch; ++i)
            sink = sink + rs::validate(recipe, format).findings.size();
        const auto t1 = Clock::now();
        perValidation.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / batch);
    }
    std::sort(perValidation.begin(), perValidation.end());
    const auto at
        = [&](double q) { return perValidation[static_cast<size_t>(q * (perValidation.size() - 1))]; };
    return { at(0.5), at(0.1), at(0.9), perValidation.front(), rs::validate(recipe, format).findings.size() };
}

} // namespace

int main(int argc, char** argv)
{
    std::string path = RS_SOURCE_DIR "/resources/presets/moonlight-mla-moe.json";
    int runs = 200000;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--runs" && i + 1 < argc)
            runs = std::max(1000, std::atoi(argv[++i]));
        else if (a == "--help" || a == "-h") {
            std::printf("usage: bench_validate [RECIPE.json] [--runs N]\n");
            return 0;
        } else
            path = a;
    }
    std::ifstream in(path);
    if (!in) {
        std::fprintf(stderr, "bench_validate: cannot read %s\n", path.c_str());
        return 2;
    }
    std::stringstream text;
    text << in.rdbuf();
    rs::Recipe recipe;
    try {
        recipe = rs::recipeFromJsonText(text.str(), path);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_validate: %s\n", e.what());
        return 2;
    }
    std::printf("recipe: %s\n%d validations per case, batches of 100; microseconds per validation\n",
        path.c_str(), runs);
    std::printf(
        "%-11s %-17s %8s %8s %8s %8s %9s\n", "profile", "format", "median", "p10", "p90", "min", "findings");
    const std::pair<rs::InputFormat, const char*> formats[]
        = { { rs::InputFormat::Json, "json" }, { rs::InputFormat::BridgeOverrides, "bridge-overrides" },
              { rs::InputFormat::MegatronFlags, "megatron-flags" } };
    for (rs::Profile p : rs::allProfiles()) {
        for (const auto& [format, name] : formats) {
            rs::Recipe r = recipe;
            r.profile = p;
            const Stats s = measure(r, format, runs, 100);
            std::printf("%-11s %-17s %8.3f %8.3f %8.3f %8.3f %9zu\n", rs::profileName(p), name, s.median_us,
                s.p10_us, s.p90_us, s.min_us, s.findings);
        }
    }
    // The same model in a state that fires many rules: full recompute under TE CUDA graphs with EP overlap,
    // CPU offloading and MTP (errors, warnings, notes and adjustments all rendered with their fix-its).
    rs::Recipe busy = recipe;
    busy.recompute_granularity = "full";
    busy.recompute_method = "block";
    busy.recompute_num_layers = 40;
    busy.cuda_graph_impl = "transformer_engine";
    busy.overlap_moe_expert_parallel_comm = true;
    busy.cpu_offloading = true;
    busy.mtp_num_layers = 2;
    busy.attention_dropout = 0.1;
    std::printf(
        "\nthe same model with full recompute, TE CUDA graphs, EP overlap, CPU offloading and MTP:\n");
    for (rs::Profile p : rs::allProfiles()) {
        busy.profile = p;
        const Stats s = measure(busy, rs::InputFormat::Json, runs, 100);
        std::printf("%-11s %-17s %8.3f %8.3f %8.3f %8.3f %9zu\n", rs::profileName(p), "json", s.median_us,
            s.p10_us, s.p90_us, s.min_us, s.findings);
    }
    return 0;
}
