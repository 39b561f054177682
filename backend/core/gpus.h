// SPDX-License-Identifier: Apache-2.0
// GPUs by name: the CUDA compute capability (major x 10 + minor, as recipe.h's gpu_compute_capability holds
// it) of the data-centre GPUs that Megatron Bridge's recipe names ("..._8gpu_h100_bf16_config") and the runs'
// own reports ("GPU: NVIDIA H100 80GB HBM3") state. Source: NVIDIA's table of CUDA GPUs and their compute
// capabilities (https://developer.nvidia.com/cuda-gpus).
#pragma once

#include <optional>
#include <string_view>

namespace rs {

struct NamedGpu {
    std::string_view name; // as the table spells it, lower case: "h100"
    int compute_capability = 0; // 90
};

// The first GPU of the table that `text` names as a word of its own: words are split at every character
// but letters and digits and compared without case, so "llama3_8b_pretrain_8gpu_h100_bf16_config" and
// "NVIDIA H100 80GB HBM3" name h100, "8gpu" or "a100x" nothing. nullopt when it names none the table knows.
std::optional<NamedGpu> gpuNamedIn(std::string_view text);

} // namespace rs
