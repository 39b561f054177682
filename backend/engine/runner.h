// SPDX-License-Identifier: Apache-2.0
// The worker's run: validate the recipe with backend/core, build the stack, train it for warm-up and
// steady iterations, and write the JSON-lines stream of docs/stream.md as it goes.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/recipe.h"

namespace rs::engine {

// The most warm-up or steady iterations one run takes (--warmup, --iters): a run of a million steps is
// no memory measurement, and their sum stays far from int's limit.
inline constexpr long long kMaxIterations = 1000000;

struct RunOptions {
    std::string device
        = "auto"; // auto (cuda when this build has a GPU to use, else cpu) | cpu | cuda | cuda:N
    std::optional<int> warmup; // default: the recipe's warmup_iters
    std::optional<int> iters; // steady iterations; default: train_iters - warmup_iters
    uint64_t seed = 1234;
    // Flags of the user's command line that the worker accepted and does not model (data, tokenizer,
    // logging ...): listed in one `note` event.
    std::vector<std::string> ignored_flags;
    // The rank of the recipe's parallel layout to run (engine/layout_rank.h); default: the hottest one,
    // as the estimator names it.
    std::optional<int> rank_of_layout;
};

// Exit codes of recompute-bench, one per result status.
enum ExitCode { kPass = 0, kError = 1, kInvalid = 2, kOom = 3, kNonfinite = 4 };

// Runs one recipe and writes the stream to `out` (each line flushed). `input_error` non-empty: the recipe
// could not be read; the stream then says so with result `invalid`.
int runRecipe(const Recipe& recipe, InputFormat format, const RunOptions& options, std::ostream& out,
    const std::string& input_error = {});

} // namespace rs::engine
