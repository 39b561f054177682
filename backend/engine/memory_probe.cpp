// SPDX-License-Identifier: Apache-2.0
#include "engine/memory_probe.h"

#include <algorithm>
#include <atomic>

#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>

#include "engine/torch_compat.h"

namespace rs::engine {
namespace {

// Sees every CPU allocation (positive alloc_size) and free (negative) while installed. The totals the
// allocator passes are process-wide; we keep our own running sum so the probe counts only its own run.
class CpuAllocationCounter final : public c10::MemoryReportingInfoBase {
public:
    void reportMemoryUsage(void* /*ptr*/, int64_t alloc_size, compat::ReportedTotal /*total_allocated*/,
        compat::ReportedTotal /*total_reserved*/, c10::Device device) override
    {
        if (!device.is_cpu())
            return;
        const int64_t now = current_.fetch_add(alloc_size) + alloc_size;
        int64_t peak = peak_.load();
        while (now > peak && !peak_.compare_exchange_weak(peak, now)) { }
    }
    bool memoryProfilingEnabled() const override { return true; }

    int64_t current() const { return current_.load(); }
    int64_t peak() const { return peak_.load(); }
    void resetPeak() { peak_.store(current_.load()); }

private:
    std::atomic<int64_t> current_ { 0 };
    std::atomic<int64_t> peak_ { 0 };
};

class CpuProbe final : public MemoryProbe {
public:
    CpuProbe()
        : counter_(std::make_shared<CpuAllocationCounter>())
        , guard_(c10::DebugInfoKind::PROFILER_STATE, counter_)
    {
    }
    void resetPeak() override { counter_->resetPeak(); }
    MemorySnapshot read() override
    {
        MemorySnapshot s;
        s.allocated = s.reserved = counter_->current();
        s.peak_allocated = s.peak_reserved = std::max(counter_->peak(), s.allocated);
        return s;
    }

private:
    std::shared_ptr<CpuAllocationCounter> counter_;
    c10::DebugInfoGuard guard_;
};

class CudaProbe final : public MemoryProbe {
public:
    explicit CudaProbe(int device)
        : device_(device)
    {
    }
    void resetPeak() override { compat::cudaResetPeaks(device_); }
    MemorySnapshot read() override
    {
        const auto c = compat::cudaStats(device_);
        return { c.allocated, c.reserved, c.allocated_peak, c.reserved_peak, c.alloc_retries };
    }

private:
    int device_;
};

} // namespace

std::unique_ptr<MemoryProbe> MemoryProbe::create(const torch::Device& device)
{
    if (device.is_cuda())
        return std::make_unique<CudaProbe>(device.has_index() ? device.index() : 0);
    return std::make_unique<CpuProbe>();
}

} // namespace rs::engine
