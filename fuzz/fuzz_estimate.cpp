// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the estimate's arithmetic on any recipe the JSON reader takes, valid or not (the GUI's
// estimate panel estimates on every edit, before the rules pass). Sizes the estimate does not take end in
// MemoryEstimate::not_estimated; every estimate made holds together: no negative term, each phase the sum
// of its terms, each rank its hottest phase, the estimate its hottest rank, all below 2^60 bytes. A broken
// invariant aborts (a finding); UBSan reports any signed overflow on the way (issue 30).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/estimator.h"
#include "core/recipe_json.h"
#include "core/rules.h"

namespace {

[[noreturn]] void finding(const std::string& what)
{
    std::fprintf(stderr, "fuzz_estimate: %s\n", what.c_str());
    std::abort();
}

void check(const rs::MemoryEstimate& e)
{
    constexpr int64_t kLimit = int64_t(1) << 60;
    if (!e.not_estimated.empty()) {
        if (!e.ranks.empty() || e.peak_bytes != 0)
            finding("a refused estimate still has ranks");
        return;
    }
    if (e.ranks.empty())
        finding("an estimate without a rank and without a reason");
    int64_t hottest = 0;
    for (const rs::RankEstimate& rank : e.ranks) {
        int64_t rankPeak = 0;
        for (const rs::PhaseEstimate& phase : rank.phases) {
            int64_t sum = 0;
            for (const rs::MemoryTerm& t : phase.terms) {
                if (t.bytes < 0 || t.bytes >= kLimit)
                    finding("term '" + t.name + "' is " + std::to_string(t.bytes) + " bytes");
                sum += t.bytes; // fewer than 64 terms below 2^60 each: no overflow
            }
            if (sum != phase.peak_bytes)
                finding("phase " + phase.phase + " is not the sum of its terms");
            rankPeak = std::max(rankPeak, phase.peak_bytes);
        }
        if (rank.peak_bytes != rankPeak || rank.peak_bytes >= kLimit)
            finding("a rank's peak is not its hottest phase");
        hottest = std::max(hottest, rank.peak_bytes);
    }
    if (e.layout == rs::Layout::Megatron && e.peak_bytes != hottest)
        finding("the estimate's peak is not its hottest rank");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const std::string text(reinterpret_cast<const char*>(data), size);
    rs::Recipe recipe;
    try {
        recipe = rs::recipeFromJsonText(text, "fuzz.json");
    } catch (const rs::RecipeError&) {
        return 0;
    }
    const rs::Validation v = rs::validate(recipe, rs::InputFormat::Json);
    check(rs::estimateMemory(v.resolved, rs::Layout::Megatron));
    check(rs::estimateMemory(v.resolved, rs::Layout::Worker));
    return 0;
}
