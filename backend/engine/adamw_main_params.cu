// SPDX-License-Identifier: Apache-2.0
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "engine/adamw_main_params.h"

namespace rs::engine::kernels {
namespace {

// Tensors go to the GPU in batches that fit a kernel's parameter space; each block takes one chunk of
// one tensor, found from the batch's running block counts.
constexpr int kBatchTensors = 32;
constexpr int kThreads = 256;
constexpr int kVector = 4; // elements per thread and load
constexpr int64_t kChunk = int64_t(kThreads) * kVector * 8; // elements per block

struct Batch {
    AdamWMainParamTensor tensors[kBatchTensors];
    int first_block[kBatchTensors + 1];
    int count;
};

__device__ __forceinline__ float toFloat(__nv_bfloat16 v)
{
    return __bfloat162float(v);
}
__device__ __forceinline__ float toFloat(__half v)
{
    return __half2float(v);
}
template <typename Half> __device__ __forceinline__ Half fromFloat(float v);
template <> __device__ __forceinline__ __nv_bfloat16 fromFloat<__nv_bfloat16>(float v)
{
    return __float2bfloat16_rn(v);
}
template <> __device__ __forceinline__ __half fromFloat<__half>(float v)
{
    return __float2half_rn(v);
}

// The update torch.optim.AdamW (decoupled weight decay) makes, element by element.
__device__ __forceinline__ void update(float& p, float& m, float& v, float g, const AdamWHyper& h)
{
    p *= 1.0f - h.lr * h.weight_decay;
    m = h.beta1 * m + (1.0f - h.beta1) * g;
    v = h.beta2 * v + (1.0f - h.beta2) * g * g;
    const float denom = sqrtf(v) / h.bias_correction2_sqrt + h.eps;
    p -= (h.lr / h.bias_correction1) * (m / denom);
}

template <typename Half>
__global__ void __launch_bounds__(kThreads) adamwKernel(const Batch batch, const AdamWHyper hyper)
{
    int t = 0;
    while (t + 1 < batch.count && int(blockIdx.x) >= batch.first_block[t + 1])
        ++t;
    const AdamWMainParamTensor& x = batch.tensors[t];
    const int64_t begin = int64_t(blockIdx.x - batch.first_block[t]) * kChunk;
    const int64_t end = begin + kChunk < x.numel ? begin + kChunk : x.numel;
    const Half* grad = static_cast<const Half*>(x.grad);
    Half* param = static_cast<Half*>(x.param);
    // Vector loads when every array of the tensor is aligned for them (the caching allocator's blocks
    // are; views at odd offsets are not).
    const bool aligned = ((reinterpret_cast<uintptr_t>(x.main) | reinterpret_cast<uintptr_t>(x.exp_avg)
                              | reinterpret_cast<uintptr_t>(x.exp_avg_sq))
                                 % 16
                             == 0)
        && ((reinterpret_cast<uintptr_t>(grad) | reinterpret_cast<uintptr_t>(param)) % 8 == 0);
    int64_t i = begin + int64_t(threadIdx.x) * kVector;
    if (aligned) {
        for (; i + kVector <= end; i += int64_t(kThreads) * kVector) {
            float4 p = *reinterpret_cast<const float4*>(x.main + i);
            float4 m = *reinterpret_cast<const float4*>(x.exp_avg + i);
            float4 v = *reinterpret_cast<const float4*>(x.exp_avg_sq + i);
            float g[kVector] = { 0, 0, 0, 0 };
            if (grad) {
                const uint2 raw = *reinterpret_cast<const uint2*>(grad + i);
                const Half* h = reinterpret_cast<const Half*>(&raw);
                for (int k = 0; k < kVector; ++k)
                    g[k] = toFloat(h[k]);
            }
            update(p.x, m.x, v.x, g[0], hyper);
            update(p.y, m.y, v.y, g[1], hyper);
            update(p.z, m.z, v.z, g[2], hyper);
            update(p.w, m.w, v.w, g[3], hyper);
            *reinterpret_cast<float4*>(x.main + i) = p;
            *reinterpret_cast<float4*>(x.exp_avg + i) = m;
            *reinterpret_cast<float4*>(x.exp_avg_sq + i) = v;
            alignas(8) Half out[kVector]
                = { fromFloat<Half>(p.x), fromFloat<Half>(p.y), fromFloat<Half>(p.z), fromFloat<Half>(p.w) };
            *reinterpret_cast<uint2*>(param + i) = *reinterpret_cast<const uint2*>(out);
        }
    }
    // The rest (a tensor's last partial vector, or all of an unaligned tensor) element by element.
    const int64_t tail_begin = aligned ? (begin + ((end - begin) / kVector) * kVector) : begin;
    for (int64_t j = tail_begin + threadIdx.x; j < end; j += kThreads) {
        float p = x.main[j], m = x.exp_avg[j], v = x.exp_avg_sq[j];
        update(p, m, v, grad ? toFloat(grad[j]) : 0.0f, hyper);
        x.main[j] = p;
        x.exp_avg[j] = m;
        x.exp_avg_sq[j] = v;
        param[j] = fromFloat<Half>(p);
    }
}

} // namespace

const char* adamwMainParams(
    const AdamWMainParamTensor* tensors, int count, HalfKind kind, const AdamWHyper& hyper, void* stream)
{
    int next = 0;
    while (next < count) {
        Batch batch {};
        batch.count = 0;
        int blocks = 0;
        for (; next < count && batch.count < kBatchTensors; ++next) {
            if (tensors[next].numel <= 0)
                continue;
            batch.first_block[batch.count] = blocks;
            batch.tensors[batch.count++] = tensors[next];
            blocks += int((tensors[next].numel + kChunk - 1) / kChunk);
        }
        if (batch.count == 0)
            break;
        batch.first_block[batch.count] = blocks;
        auto s = static_cast<cudaStream_t>(stream);
        if (kind == HalfKind::BFloat16)
            adamwKernel<__nv_bfloat16><<<blocks, kThreads, 0, s>>>(batch, hyper);
        else
            adamwKernel<__half><<<blocks, kThreads, 0, s>>>(batch, hyper);
        const cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess)
            return cudaGetErrorString(e);
    }
    return "";
}

} // namespace rs::engine::kernels
