// SPDX-License-Identifier: Apache-2.0
// The one place where the LibTorch versions we build against differ (design.md "Builds"): Debian's 1.13
// (CPU, dev machines and CI) and the 2.x inside the PyTorch wheel on GPU hosts.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>
#include <torch/version.h>

#if defined(RS_ENGINE_CUDA)
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

#define RS_TORCH_AT_LEAST(major, minor)                                                                      \
    (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace rs::engine::compat {

// MemoryReportingInfoBase::reportMemoryUsage: int64_t totals in 1.13, size_t in 2.x.
#if RS_TORCH_AT_LEAST(2, 0)
using ReportedTotal = size_t;
#else
using ReportedTotal = int64_t;
#endif

// Scaled dot-product attention on [b, heads, s, d] tensors. 1.13 has only the private op, which returns
// (output, weights) and runs the math path; 2.x has the public op that picks flash / memory-efficient
// kernels on CUDA.
// SDPA's enable_gqa (LibTorch >= 2.5): key and value with fewer heads than the query, each serving
// heads / groups queries, with no repeated copy.
#if RS_TORCH_AT_LEAST(2, 5)
inline constexpr bool kSdpaGqa = true;
#else
inline constexpr bool kSdpaGqa = false;
#endif

inline torch::Tensor scaledDotProductAttention(const torch::Tensor& q, const torch::Tensor& k,
    const torch::Tensor& v, double dropout_p, bool is_causal, bool enable_gqa = false)
{
#if RS_TORCH_AT_LEAST(2, 5)
    return at::scaled_dot_product_attention(q, k, v, {}, dropout_p, is_causal, std::nullopt, enable_gqa);
#elif RS_TORCH_AT_LEAST(2, 0)
    (void)enable_gqa; // kSdpaGqa is false: callers repeat the groups
    return at::scaled_dot_product_attention(q, k, v, {}, dropout_p, is_causal);
#else
    (void)enable_gqa;
    return std::get<0>(at::_scaled_dot_product_attention(q, k, v, {}, dropout_p, false, is_causal));
#endif
}

inline bool cudaBuilt()
{
#if defined(RS_ENGINE_CUDA)
    return true;
#else
    return false;
#endif
}

// The caching allocator's device statistics (CUDA only; all zero elsewhere).
struct CudaStats {
    int64_t allocated = 0;
    int64_t allocated_peak = 0;
    int64_t reserved = 0;
    int64_t reserved_peak = 0;
    int64_t alloc_retries = 0;
};

inline CudaStats cudaStats(int device)
{
    CudaStats s;
#if defined(RS_ENGINE_CUDA)
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(device));
    constexpr size_t agg = 0; // StatType::AGGREGATE, whose namespace moved between 2.x releases
    s.allocated = stats.allocated_bytes[agg].current;
    s.allocated_peak = stats.allocated_bytes[agg].peak;
    s.reserved = stats.reserved_bytes[agg].current;
    s.reserved_peak = stats.reserved_bytes[agg].peak;
    s.alloc_retries = stats.num_alloc_retries;
#else
    (void)device;
#endif
    return s;
}

inline void cudaResetPeaks(int device)
{
#if defined(RS_ENGINE_CUDA)
    c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(device));
#else
    (void)device;
#endif
}

inline void cudaEmptyCache()
{
#if defined(RS_ENGINE_CUDA)
    c10::cuda::CUDACachingAllocator::emptyCache();
#endif
}

// Makes `device` the current one: streams, events, kernels and synchronisation without an explicit device
// all go to the current device, which must be the rank's own (LOCAL_RANK) when several share a host.
inline void cudaSetDevice(int device)
{
#if defined(RS_ENGINE_CUDA)
    c10::cuda::set_device(static_cast<c10::DeviceIndex>(device));
#else
    (void)device;
#endif
}

inline void cudaSynchronize()
{
#if defined(RS_ENGINE_CUDA)
    c10::cuda::device_synchronize();
#endif
}

// The current CUDA stream of the current device, as a cudaStream_t (null without CUDA).
inline void* currentCudaStream()
{
#if defined(RS_ENGINE_CUDA)
    return at::cuda::getCurrentCUDAStream().stream();
#else
    return nullptr;
#endif
}

inline std::string cudaDeviceName(int device)
{
#if defined(RS_ENGINE_CUDA)
    return at::cuda::getDeviceProperties(device)->name;
#else
    (void)device;
    return {};
#endif
}

inline std::string cudaRuntimeVersion()
{
#if defined(RS_ENGINE_CUDA) && defined(CUDA_VERSION)
    return std::to_string(CUDA_VERSION / 1000) + "." + std::to_string((CUDA_VERSION % 1000) / 10);
#else
    return {};
#endif
}

// Time marks within a step, read after the step's final synchronisation: CUDA events on the device's
// current stream (no synchronisation between phases, so the step runs as it would unmeasured), host
// clock readings on CPU, where every operation has finished when it returns.
class PhaseClock {
public:
    PhaseClock(const torch::Device& device, size_t marks)
        : cuda_(device.is_cuda())
        , host_(marks)
    {
#if defined(RS_ENGINE_CUDA)
        if (cuda_)
            for (size_t i = 0; i < marks; ++i)
                events_.push_back(std::make_unique<at::cuda::CUDAEvent>(0 /* timing enabled */));
#endif
    }

    void mark(size_t i)
    {
#if defined(RS_ENGINE_CUDA)
        if (cuda_) {
            events_.at(i)->record();
            return;
        }
#endif
        host_.at(i) = std::chrono::steady_clock::now();
    }

    // Milliseconds from mark `from` to mark `to`; both must have been reached (synchronise first).
    double ms(size_t from, size_t to) const
    {
#if defined(RS_ENGINE_CUDA)
        if (cuda_)
            return events_.at(from)->elapsed_time(*events_.at(to));
#endif
        return std::chrono::duration<double, std::milli>(host_.at(to) - host_.at(from)).count();
    }

private:
    bool cuda_;
    std::vector<std::chrono::steady_clock::time_point> host_;
#if defined(RS_ENGINE_CUDA)
    std::vector<std::unique_ptr<at::cuda::CUDAEvent>> events_;
#endif
};

// AdamW over lists of fp32 tensors in one fused kernel where LibTorch has one (2.x on CUDA); returns
// false when the caller must use the per-tensor path.
inline bool fusedAdamW(std::vector<torch::Tensor>& params, std::vector<torch::Tensor>& grads,
    std::vector<torch::Tensor>& exp_avgs, std::vector<torch::Tensor>& exp_avg_sqs,
    std::vector<torch::Tensor>& steps, double lr, double beta1, double beta2, double weight_decay, double eps)
{
#if RS_TORCH_AT_LEAST(2, 2) && defined(RS_ENGINE_CUDA)
    if (params.empty() || !params.front().is_cuda())
        return false;
    at::_foreach_add_(steps, 1); // the kernel reads the step count already advanced, as torch.optim does
    at::_fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, {}, steps, lr, beta1, beta2, weight_decay, eps,
        /*amsgrad=*/false, /*maximize=*/false);
    return true;
#else
    (void)params, (void)grads, (void)exp_avgs, (void)exp_avg_sqs, (void)steps, (void)lr, (void)beta1;
    (void)beta2, (void)weight_decay, (void)eps;
    return false;
#endif
}

// Grouped GEMM of tokens sorted by expert ([R, in], the groups ending at `offs`, int32 on the device) with
// one weight per expert ([E, in, out]): torch::_grouped_mm, LibTorch 2.9 and later on CUDA, bf16, compute
// capability 9.0 or above (H100 / H200), widths a multiple of 8; its backward is autograd's. Where it is
// absent the model falls back to a batched matmul over padded tokens (model.cpp).
inline bool groupedMmAvailable(const torch::Tensor& x)
{
#if RS_TORCH_AT_LEAST(2, 9) && defined(RS_ENGINE_CUDA)
    if (!x.is_cuda() || x.scalar_type() != torch::kBFloat16 || x.size(-1) % 8 != 0)
        return false;
    return at::cuda::getDeviceProperties(x.device().index())->major >= 9;
#else
    (void)x;
    return false;
#endif
}

inline torch::Tensor groupedMm(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& offs)
{
#if RS_TORCH_AT_LEAST(2, 9) && defined(RS_ENGINE_CUDA)
    return at::_grouped_mm(x, w, offs);
#else
    (void)w, (void)offs;
    return x;
#endif
}

} // namespace rs::engine::compat
