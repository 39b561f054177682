// SPDX-License-Identifier: Apache-2.0
#include "engine/memory_probe.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <tuple>
#include <type_traits>
#include <unordered_map>

#include <ATen/ATen.h>
#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>

#include "engine/torch_compat.h"

namespace rs::engine {
namespace {

// The regions seen so far, by id; id 0 is Other outside every region.
struct RegionRegistry {
    std::mutex mutex;
    std::vector<std::tuple<MemoryCategory, int, std::string>> regions { { MemoryCategory::Other, -1, "" } };
    std::map<std::tuple<int, int, std::string>, int> ids { { { 0, -1, "" }, 0 } };

    int intern(MemoryCategory category, int layer, const std::string& region)
    {
        std::lock_guard<std::mutex> lock(mutex);
        const auto key = std::make_tuple(static_cast<int>(category), layer, region);
        auto it = ids.find(key);
        if (it != ids.end())
            return it->second;
        const int id = static_cast<int>(regions.size());
        regions.emplace_back(category, layer, region);
        ids.emplace(key, id);
        return id;
    }
    std::tuple<MemoryCategory, int, std::string> at(int id)
    {
        std::lock_guard<std::mutex> lock(mutex);
        return regions.at(static_cast<size_t>(id));
    }
};

RegionRegistry& registry()
{
    static RegionRegistry r;
    return r;
}

std::atomic<int> g_current_region { 0 };

// Live bytes per region from a trace of allocations (address, size) and frees (address). Frees of blocks
// it did not see allocated are ignored, so it counts only what was allocated while it listened.
class Ledger {
public:
    void allocated(uintptr_t address, int64_t bytes)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        const int id = g_current_region.load(std::memory_order_relaxed);
        if (static_cast<size_t>(id) >= live_.size())
            live_.resize(static_cast<size_t>(id) + 1, 0);
        blocks_[address] = { bytes, id };
        live_[static_cast<size_t>(id)] += bytes;
        total_ += bytes;
        if (total_ > peak_) {
            peak_ = total_;
            at_peak_ = live_;
        }
    }
    void freed(uintptr_t address)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = blocks_.find(address);
        if (it == blocks_.end())
            return;
        live_[static_cast<size_t>(it->second.second)] -= it->second.first;
        total_ -= it->second.first;
        blocks_.erase(it);
    }
    void resetPeak()
    {
        std::lock_guard<std::mutex> lock(mutex_);
        peak_ = total_;
        at_peak_ = live_;
    }
    int64_t current()
    {
        std::lock_guard<std::mutex> lock(mutex_);
        return total_;
    }
    int64_t peak()
    {
        std::lock_guard<std::mutex> lock(mutex_);
        return peak_;
    }
    PeakAttribution attribution()
    {
        std::vector<int64_t> bytes;
        PeakAttribution a;
        a.available = true;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            bytes = at_peak_;
            a.traced_peak = peak_;
        }
        for (size_t id = 0; id < bytes.size(); ++id) {
            if (bytes[id] == 0)
                continue;
            auto [category, layer, region] = registry().at(static_cast<int>(id));
            a.regions.push_back({ category, layer, region, bytes[id] });
        }
        return a;
    }

private:
    std::mutex mutex_;
    std::unordered_map<uintptr_t, std::pair<int64_t, int>> blocks_;
    std::vector<int64_t> live_, at_peak_;
    int64_t total_ = 0, peak_ = 0;
};

// Sees every CPU allocation (positive alloc_size) and free (negative) while installed. The totals the
// allocator passes are process-wide; the ledger keeps our own, so the probe counts only its own run.
class CpuAllocationCounter final : public c10::MemoryReportingInfoBase {
public:
    void reportMemoryUsage(void* ptr, int64_t alloc_size, compat::ReportedTotal /*total_allocated*/,
        compat::ReportedTotal /*total_reserved*/, c10::Device device) override
    {
        if (!device.is_cpu())
            return;
        if (alloc_size > 0)
            ledger.allocated(reinterpret_cast<uintptr_t>(ptr), alloc_size);
        else
            ledger.freed(reinterpret_cast<uintptr_t>(ptr));
    }
    bool memoryProfilingEnabled() const override { return true; }

    Ledger ledger;
};

class CpuProbe final : public MemoryProbe {
public:
    CpuProbe()
        : counter_(std::make_shared<CpuAllocationCounter>())
        , guard_(c10::DebugInfoKind::PROFILER_STATE, counter_)
    {
    }
    void resetPeak() override { counter_->ledger.resetPeak(); }
    MemorySnapshot read() override
    {
        MemorySnapshot s;
        s.allocated = s.reserved = counter_->ledger.current();
        s.peak_allocated = s.peak_reserved = std::max(counter_->ledger.peak(), s.allocated);
        return s;
    }
    PeakAttribution attribution() override { return counter_->ledger.attribution(); }

private:
    std::shared_ptr<CpuAllocationCounter> counter_;
    c10::DebugInfoGuard guard_;
};

#if defined(RS_ENGINE_CUDA) && RS_TORCH_AT_LEAST(2, 1)
#define RS_CUDA_ALLOCATOR_TRACE 1
// The caching allocator calls its trace trackers under its own lock, for every device, and offers no way
// to detach one: one tracker for the process forwards to the probe that listens now.
std::atomic<Ledger*> g_cuda_ledger { nullptr };
std::atomic<int> g_cuda_device { 0 };

void attachCudaTracker(int device)
{
    static std::once_flag once;
    std::call_once(once, [device] {
        // The allocator attaches a tracker to the per-device allocators that exist now; before CUDA's lazy
        // initialisation there are none and the tracker would never be called (every attribution 0). One
        // allocation initialises CUDA and its allocators first.
        (void)at::empty(
            { 1 }, at::TensorOptions().device(at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(device))));
        c10::cuda::CUDACachingAllocator::attachAllocatorTraceTracker([](const auto& entry) {
            using Entry = std::decay_t<decltype(entry)>;
            Ledger* ledger = g_cuda_ledger.load();
            if (!ledger || entry.device_ != g_cuda_device.load())
                return;
            if (entry.action_ == Entry::Action::ALLOC) {
                // The trace gives the requested size; the allocator's statistics count the block, at
                // least 512 bytes and a multiple of it.
                const int64_t requested = static_cast<int64_t>(entry.size_);
                ledger->allocated(entry.addr_, std::max<int64_t>(512, (requested + 511) / 512 * 512));
            } else if (entry.action_ == Entry::Action::FREE_COMPLETED) {
                ledger->freed(entry.addr_);
            }
        });
    });
}
#endif

class CudaProbe final : public MemoryProbe {
public:
    explicit CudaProbe(int device)
        : device_(device)
    {
#ifdef RS_CUDA_ALLOCATOR_TRACE
        attachCudaTracker(device);
        g_cuda_device.store(device);
        g_cuda_ledger.store(&ledger_);
#endif
    }
    ~CudaProbe() override
    {
#ifdef RS_CUDA_ALLOCATOR_TRACE
        Ledger* mine = &ledger_;
        g_cuda_ledger.compare_exchange_strong(mine, nullptr);
#endif
    }
    void resetPeak() override
    {
        compat::cudaResetPeaks(device_);
        ledger_.resetPeak();
    }
    MemorySnapshot read() override
    {
        const auto c = compat::cudaStats(device_);
        return { c.allocated, c.reserved, c.allocated_peak, c.reserved_peak, c.alloc_retries };
    }
    PeakAttribution attribution() override
    {
#ifdef RS_CUDA_ALLOCATOR_TRACE
        // A trace that saw nothing is no attribution (never a row of zeros beside a real peak).
        PeakAttribution a = ledger_.attribution();
        return a.traced_peak > 0 ? a : PeakAttribution {};
#else
        return {};
#endif
    }

private:
    int device_;
    Ledger ledger_;
};

} // namespace

const char* categoryName(MemoryCategory category)
{
    switch (category) {
    case MemoryCategory::Other:
        return "other";
    case MemoryCategory::Parameters:
        return "parameters";
    case MemoryCategory::MainParameters:
        return "main_parameters";
    case MemoryCategory::GradientBuffer:
        return "gradient_buffer";
    case MemoryCategory::OptimizerStates:
        return "optimizer_states";
    case MemoryCategory::Activations:
        return "activations";
    case MemoryCategory::Backward:
        return "backward";
    case MemoryCategory::Workspace:
        return "workspace";
    }
    return "other";
}

MemoryRegion::MemoryRegion(MemoryCategory category, int layer, const std::string& region)
    : previous_(g_current_region.exchange(registry().intern(category, layer, region)))
{
}

MemoryRegion::~MemoryRegion()
{
    g_current_region.store(previous_);
}

std::unique_ptr<MemoryProbe> MemoryProbe::create(const torch::Device& device)
{
    if (device.is_cuda())
        return std::make_unique<CudaProbe>(device.has_index() ? device.index() : 0);
    return std::make_unique<CpuProbe>();
}

} // namespace rs::engine
