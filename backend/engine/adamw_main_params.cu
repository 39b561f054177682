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
template <typename T> __device__ __forceinline__ T fromFloat(float v);
template <> __device__ __forceinline__ __nv_bfloat16 fromFloat<__nv_bfloat16>(float v)
{
    return __float2bfloat16_rn(v);
}
template <> __device__ __forceinline__ __half fromFloat<__half>(float v)
{
    return __float2half_rn(v);
}

__device__ __forceinline__ float toFloat(float v)
{
    return v;
}
template <> __device__ __forceinline__ float fromFloat<float>(float v)
{
    return v;
}

template <typename Half>
__global__ void __launch_bounds__(kThreads) adamwKernel(const Batch batch, const AdamWHyper hyper)
{
    int t = 0;
    while (t + 1 < batch.count && int(blockIdx.x) >= batch.first_block[t + 1])
        ++t;
    const AdamWMainParamTensor& x = batch.tensors[t];
    float* const main = static_cast<float*>(x.main);
    float* const exp_avg = static_cast<float*>(x.exp_avg);
    float* const exp_avg_sq = static_cast<float*>(x.exp_avg_sq);
    const int64_t begin = int64_t(blockIdx.x - batch.first_block[t]) * kChunk;
    const int64_t end = begin + kChunk < x.numel ? begin + kChunk : x.numel;
    const Half* grad = static_cast<const Half*>(x.grad);
    Half* param = static_cast<Half*>(x.param);
    // Vector loads when every array of the tensor is aligned for them (the caching allocator's blocks
    // are; views at odd offsets are not).
    const bool aligned = ((reinterpret_cast<uintptr_t>(main) | reinterpret_cast<uintptr_t>(exp_avg)
                              | reinterpret_cast<uintptr_t>(exp_avg_sq))
                                 % 16
                             == 0)
        && ((reinterpret_cast<uintptr_t>(grad) | reinterpret_cast<uintptr_t>(param)) % 8 == 0);
    int64_t i = begin + int64_t(threadIdx.x) * kVector;
    if (aligned) {
        for (; i + kVector <= end; i += int64_t(kThreads) * kVector) {
            float4 p = *reinterpret_cast<const float4*>(main + i);
            float4 m = *reinterpret_cast<const float4*>(exp_avg + i);
            float4 v = *reinterpret_cast<const float4*>(exp_avg_sq + i);
            float g[kVector] = { 0, 0, 0, 0 };
            if (grad) {
                const uint2 raw = *reinterpret_cast<const uint2*>(grad + i);
                const Half* h = reinterpret_cast<const Half*>(&raw);
                for (int k = 0; k < kVector; ++k)
                    g[k] = toFloat(h[k]);
            }
            adamwUpdate(p.x, m.x, v.x, g[0], hyper);
            adamwUpdate(p.y, m.y, v.y, g[1], hyper);
            adamwUpdate(p.z, m.z, v.z, g[2], hyper);
            adamwUpdate(p.w, m.w, v.w, g[3], hyper);
            *reinterpret_cast<float4*>(main + i) = p;
            *reinterpret_cast<float4*>(exp_avg + i) = m;
            *reinterpret_cast<float4*>(exp_avg_sq + i) = v;
            alignas(8) Half out[kVector]
                = { fromFloat<Half>(p.x), fromFloat<Half>(p.y), fromFloat<Half>(p.z), fromFloat<Half>(p.w) };
            *reinterpret_cast<uint2*>(param + i) = *reinterpret_cast<const uint2*>(out);
        }
    }
    // The rest (a tensor's last partial vector, or all of an unaligned tensor) element by element.
    const int64_t tail_begin = aligned ? (begin + ((end - begin) / kVector) * kVector) : begin;
    for (int64_t j = tail_begin + threadIdx.x; j < end; j += kThreads) {
        float p = main[j], m = exp_avg[j], v = exp_avg_sq[j];
        adamwUpdate(p, m, v, grad ? toFloat(grad[j]) : 0.0f, hyper);
        main[j] = p;
        exp_avg[j] = m;
        exp_avg_sq[j] = v;
        param[j] = fromFloat<Half>(p);
    }
}

// The precision-aware optimizer's other layouts, element by element: moments in State, and the master
// weight either fp32 or an int16 remainder beside the bf16 parameter (kRemainder).
template <typename Half, typename State, bool kRemainder>
__global__ void __launch_bounds__(kThreads) adamwStateKernel(const Batch batch, const AdamWHyper hyper)
{
    int t = 0;
    while (t + 1 < batch.count && int(blockIdx.x) >= batch.first_block[t + 1])
        ++t;
    const AdamWMainParamTensor& x = batch.tensors[t];
    const int64_t begin = int64_t(blockIdx.x - batch.first_block[t]) * kChunk;
    const int64_t end = begin + kChunk < x.numel ? begin + kChunk : x.numel;
    const Half* grad = static_cast<const Half*>(x.grad);
    Half* param = static_cast<Half*>(x.param);
    State* exp_avg = static_cast<State*>(x.exp_avg);
    State* exp_avg_sq = static_cast<State*>(x.exp_avg_sq);
    for (int64_t j = begin + threadIdx.x; j < end; j += kThreads) {
        float p;
        if constexpr (kRemainder)
            p = __uint_as_float(joinRemainder(
                reinterpret_cast<const uint16_t*>(param)[j], static_cast<const int16_t*>(x.main)[j]));
        else
            p = static_cast<const float*>(x.main)[j];
        float m = toFloat(exp_avg[j]), v = toFloat(exp_avg_sq[j]);
        adamwUpdate(p, m, v, grad ? toFloat(grad[j]) : 0.0f, hyper);
        exp_avg[j] = fromFloat<State>(m);
        exp_avg_sq[j] = fromFloat<State>(v);
        if constexpr (kRemainder) {
            uint16_t bits;
            int16_t remainder;
            splitRemainder(__float_as_uint(p), bits, remainder);
            reinterpret_cast<uint16_t*>(param)[j] = bits;
            static_cast<int16_t*>(x.main)[j] = remainder;
        } else {
            static_cast<float*>(x.main)[j] = p;
            param[j] = fromFloat<Half>(p);
        }
    }
}

template <typename Half>
void launch(int blocks, cudaStream_t s, const Batch& batch, const AdamWKinds& k, const AdamWHyper& h)
{
    const bool rem = k.master == MasterKind::Remainder16;
    if (k.state == StateKind::Float32 && !rem)
        adamwKernel<Half><<<blocks, kThreads, 0, s>>>(batch, h);
    else if (k.state == StateKind::Float32)
        adamwStateKernel<Half, float, true><<<blocks, kThreads, 0, s>>>(batch, h);
    else if (k.state == StateKind::BFloat16 && rem)
        adamwStateKernel<Half, __nv_bfloat16, true><<<blocks, kThreads, 0, s>>>(batch, h);
    else if (k.state == StateKind::BFloat16)
        adamwStateKernel<Half, __nv_bfloat16, false><<<blocks, kThreads, 0, s>>>(batch, h);
    else if (rem)
        adamwStateKernel<Half, __half, true><<<blocks, kThreads, 0, s>>>(batch, h);
    else
        adamwStateKernel<Half, __half, false><<<blocks, kThreads, 0, s>>>(batch, h);
}

} // namespace

const char* adamwMainParams(const AdamWMainParamTensor* tensors, int count, const AdamWKinds& kinds,
    const AdamWHyper& hyper, void* stream)
{
    if (kinds.master == MasterKind::Remainder16 && kinds.half != HalfKind::BFloat16)
        return "master weights as remainders need bf16 parameters";
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
        if (kinds.half == HalfKind::BFloat16)
            launch<__nv_bfloat16>(blocks, s, batch, kinds, hyper);
        else
            launch<__half>(blocks, s, batch, kinds, hyper);
        const cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess)
            return cudaGetErrorString(e);
    }
    return "";
}

} // namespace rs::engine::kernels
