// SPDX-License-Identifier: Apache-2.0
// AdamW over fp32 main parameters whose model copies are bf16 or fp16, in one pass: each element's
// 16-bit gradient is read, the fp32 main parameter and both moments are updated, and the 16-bit model
// parameter is written back, so no fp32 copy of the gradients is ever made. This is the optimizer
// Megatron Core runs with --use-precision-aware-optimizer (Transformer Engine's FusedAdam with master
// weights); torch's _fused_adamw_ needs gradients of the parameters' own dtype, which would mean a
// converted fp32 gradient and a separate copy back, about 40 bytes of traffic per parameter against 28.
// Plain C++ types only: this header is shared by the CUDA translation unit and the LibTorch one.
#pragma once

#include <cstdint>

#include "engine/adamw_element.h"

namespace rs::engine::kernels {

enum class HalfKind { BFloat16, Float16 };
// The moments' dtype (the precision-aware optimizer's exp_avg_dtype = exp_avg_sq_dtype).
enum class StateKind { Float32, BFloat16, Float16 };
// The master weights: fp32, or int16 remainders beside bf16 parameters (adamw_element.h).
enum class MasterKind { Float32, Remainder16 };

struct AdamWKinds {
    HalfKind half = HalfKind::BFloat16;
    StateKind state = StateKind::Float32;
    MasterKind master = MasterKind::Float32;
};

struct AdamWMainParamTensor {
    void* main = nullptr; // fp32 main parameter or int16 remainder (AdamWKinds::master), updated in place
    void* exp_avg = nullptr; // in AdamWKinds::state
    void* exp_avg_sq = nullptr;
    const void* grad = nullptr; // 16-bit gradient; null: no gradient this step (taken as zero)
    void* param = nullptr; // 16-bit model parameter, overwritten with the rounded main parameter
    int64_t numel = 0;
};

// Launches the update of `count` tensors on `stream` (a cudaStream_t). Returns an empty string, or the
// CUDA error's text (also for a remainder master beside fp16 parameters, which has no meaning).
const char* adamwMainParams(const AdamWMainParamTensor* tensors, int count, const AdamWKinds& kinds,
    const AdamWHyper& hyper, void* stream);

} // namespace rs::engine::kernels
