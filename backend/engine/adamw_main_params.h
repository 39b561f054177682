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

namespace rs::engine::kernels {

enum class HalfKind { BFloat16, Float16 };

struct AdamWMainParamTensor {
    float* main = nullptr; // fp32 main parameter, updated in place
    float* exp_avg = nullptr;
    float* exp_avg_sq = nullptr;
    const void* grad = nullptr; // 16-bit gradient; null: no gradient this step (taken as zero)
    void* param = nullptr; // 16-bit model parameter, overwritten with the rounded main parameter
    int64_t numel = 0;
};

struct AdamWHyper {
    float lr = 0;
    float beta1 = 0;
    float beta2 = 0;
    float weight_decay = 0;
    float eps = 0;
    float bias_correction1 = 1; // 1 - beta1^step
    float bias_correction2_sqrt = 1; // sqrt(1 - beta2^step)
};

// Launches the update of `count` tensors on `stream` (a cudaStream_t). Returns an empty string, or the
// CUDA error's text.
const char* adamwMainParams(
    const AdamWMainParamTensor* tensors, int count, HalfKind kind, const AdamWHyper& hyper, void* stream);

} // namespace rs::engine::kernels
