// SPDX-License-Identifier: Apache-2.0
// One AdamW element, shared by the CUDA kernel (adamw_main_params.cu) and the host loop of
// MainParamAdamW (optimizer.cpp), so both make the same update and keep master weights the same way.
// Plain C++ on integer bits: no torch or CUDA type, so both translation units can include it.
#pragma once

#include <cmath>
#include <cstdint>

#ifdef __CUDACC__
#define RS_ADAMW_HD __host__ __device__ __forceinline__
#else
#define RS_ADAMW_HD inline
#endif

namespace rs::engine::kernels {

struct AdamWHyper {
    float lr = 0;
    float beta1 = 0;
    float beta2 = 0;
    float weight_decay = 0;
    float eps = 0;
    float bias_correction1 = 1; // 1 - beta1^step
    float bias_correction2_sqrt = 1; // sqrt(1 - beta2^step)
};

// The update torch.optim.AdamW (decoupled weight decay) makes, element by element.
RS_ADAMW_HD void adamwUpdate(float& p, float& m, float& v, float g, const AdamWHyper& h)
{
    p *= 1.0f - h.lr * h.weight_decay;
    m = h.beta1 * m + (1.0f - h.beta1) * g;
    v = h.beta2 * v + (1.0f - h.beta2) * g * g;
    p -= (h.lr / h.bias_correction1) * (m / (sqrtf(v) / h.bias_correction2_sqrt + h.eps));
}

// Master weights as remainders (Transformer Engine's FusedAdam with store_param_remainders, what Megatron
// Core's precision-aware optimizer keeps for bf16 parameters): an fp32 master weight is its bf16
// parameter's 16 bits and 16 more. The parameter is the master rounded to nearest (the low half's top
// bit set rounds the magnitude up), so the stored low half, read as int16, is negative exactly when the
// parameter was rounded up: joining takes that one back off.
RS_ADAMW_HD uint32_t joinRemainder(uint16_t param_bits, int16_t remainder)
{
    const uint32_t high = uint16_t(param_bits - (remainder < 0 ? 1 : 0));
    return (high << 16) | uint16_t(remainder);
}

RS_ADAMW_HD void splitRemainder(uint32_t master_bits, uint16_t& param_bits, int16_t& remainder)
{
    const uint16_t low = uint16_t(master_bits & 0xffffu);
    param_bits = uint16_t((master_bits >> 16) + (low >= 0x8000u ? 1 : 0));
    remainder = int16_t(low);
}

} // namespace rs::engine::kernels
