// SPDX-License-Identifier: Apache-2.0
// bench_plan: the median time of one whole plan (core/plan.h): every recompute choice a recipe's model can
// take at its profile validated, estimated on every rank and timed, the front and the cheapest that fits.
// The goal (issue 31): under 100 ms a plan; exits 1 above it.
//   bench_plan [--runs N] [--recipe moonlight|nemotron]
// Default: the guide's Moonlight 16B job (moonlight_16b_pretrain_8gpu_h100_bf16_config on 8 GPUs, GBS 4),
// rates from the provisional H100 record of resources/calibration.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/advisor.h"
#include "core/bridge_recipes.h"
#include "core/calibration.h"
#include "core/plan.h"
#include "core/rules.h"

int main(int argc, char** argv)
{
    int runs = 20;
    std::string which = "moonlight";
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--runs" && i + 1 < argc)
            runs = std::max(3, std::atoi(argv[++i]));
        else if (a == "--recipe" && i + 1 < argc)
            which = argv[++i];
        else {
            std::fprintf(stderr, "bench_plan: [--runs N] [--recipe moonlight|nemotron]\n");
            return 2;
        }
    }
    const rs::BridgeJob job = which == "nemotron"
        ? rs::bridgeJob("nemotron_3_nano_pretrain_16gpu_h100_bf16_config", 16,
            { "train.global_batch_size=16", "model.vocab_size=131072" })
        : rs::bridgeJob("moonlight_16b_pretrain_8gpu_h100_bf16_config", 8, { "train.global_batch_size=4" });
    const rs::Recipe r = rs::validate(job.recipe, rs::InputFormat::BridgeOverrides).resolved;
    const rs::CalibrationRates rates = rs::readCalibrationFile(
        RS_SOURCE_DIR "/resources/calibration/h100-bf16-PROVISIONAL.json");
    std::vector<double> ms;
    size_t choices = 0;
    for (int i = 0; i < runs; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        const rs::Plan p
            = rs::planRecompute(r, rs::InputFormat::BridgeOverrides, rates, 60.0, rs::kEstimateErrorFraction);
        ms.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        choices = p.candidates.size();
    }
    std::sort(ms.begin(), ms.end());
    const double median = ms[ms.size() / 2], p90 = ms[ms.size() * 9 / 10];
    std::printf("%s: %zu choices, plan median %.1f ms (p90 %.1f ms) over %d runs\n", which.c_str(), choices,
        median, p90, runs);
    return median < 100 ? 0 : 1;
}
