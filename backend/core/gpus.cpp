// SPDX-License-Identifier: Apache-2.0
#include "core/gpus.h"

#include <array>
#include <cctype>
#include <string>

namespace rs {

namespace {

// NVIDIA's CUDA GPU table (developer.nvidia.com/cuda-gpus): Ampere A100 8.0; Hopper H100, H200 and GH200 9.0;
// Blackwell B200 and GB200 10.0; Blackwell Ultra B300 and GB300 10.3. Rubin (Bridge's vr200 and r100 recipes)
// is not in it: those names keep the recipe's default, which sizes what depends on the generation
// (Transformer Engine's cuBLAS workspaces) as every GPU from Hopper on.
constexpr std::array<NamedGpu, 8> kGpus { {
    { "a100", 80 },
    { "h100", 90 },
    { "h200", 90 },
    { "gh200", 90 },
    { "b200", 100 },
    { "gb200", 100 },
    { "b300", 103 },
    { "gb300", 103 },
} };

} // namespace

std::optional<NamedGpu> gpuNamedIn(std::string_view text)
{
    std::string word;
    const auto known = [&]() -> std::optional<NamedGpu> {
        for (const NamedGpu& g : kGpus)
            if (word == g.name)
                return g;
        return std::nullopt;
    };
    for (const char c : text) {
        if (std::isalnum(static_cast<unsigned char>(c))) {
            word.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
            continue;
        }
        if (const auto g = known())
            return g;
        word.clear();
    }
    return known();
}

} // namespace rs
