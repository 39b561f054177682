// SPDX-License-Identifier: Apache-2.0
// Allocated and reserved bytes read from the allocator, never estimated. On CUDA: the caching allocator's
// device statistics. On CPU: a c10::MemoryReportingInfoBase installed as thread-local debug info, which the
// CPU allocator tells about every allocation and free made on this thread (and on the autograd threads
// that inherit its debug info), so CI can test memory behaviour without a GPU.
//
// What holds the peak: every allocation is tagged with the memory region the worker is in when it is made
// (MemoryRegion, an RAII guard around the model's regions and the optimizer's allocations) and counted
// against it until it is freed; at the peak of each phase the live bytes of every region are kept. On CPU
// the probe's own counter does this; on CUDA the caching allocator's trace of allocations and frees
// (attachAllocatorTraceTracker, LibTorch 2.1 and later).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace rs::engine {

struct MemorySnapshot {
    int64_t allocated = 0;
    int64_t reserved = 0;
    int64_t peak_allocated = 0; // since the last resetPeak()
    int64_t peak_reserved = 0;
    int64_t alloc_retries = 0; // CUDA: cudaMalloc retries after freeing the cache; CPU: 0
};

// The categories of what holds memory (docs/stream.md, peak_attribution).
enum class MemoryCategory : int {
    Other, // the batch, masks, rotary tables, what no region claims
    Parameters,
    MainParameters, // the optimizer's fp32 copies (this rank's shard under the distributed optimizer)
    GradientBuffer, // DDP's contiguous main-gradient buffer
    OptimizerStates, // Adam's moments (and step counters)
    Activations, // tensors made by the forward pass (and by checkpoint replays), per layer and region
    Backward, // gradients in flight and backward's own temporaries
    Workspace, // the optimizer step's and the gradient reduction's temporaries
};
const char* categoryName(MemoryCategory category);

// Sets the region that the allocations made while it lives are counted against; restores the enclosing
// one when it ends. `layer` -1: not inside a layer (embedding, output, the optimizer). The region is
// process-wide (the autograd engine's device threads allocate for the thread that waits on them).
class MemoryRegion {
public:
    MemoryRegion(MemoryCategory category, int layer = -1, const std::string& region = {});
    ~MemoryRegion();
    MemoryRegion(const MemoryRegion&) = delete;
    MemoryRegion& operator=(const MemoryRegion&) = delete;

private:
    int previous_;
};

// One region's live bytes at a peak.
struct RegionBytes {
    MemoryCategory category = MemoryCategory::Other;
    int layer = -1;
    std::string region;
    int64_t bytes = 0;
};

// The live bytes by region at the peak since the last resetPeak(), from the probe's own trace of
// allocations. `traced_peak` is the sum of `regions` (the trace's peak); `available` false when this
// build cannot trace the allocator (LibTorch before 2.1 on CUDA).
struct PeakAttribution {
    bool available = false;
    int64_t traced_peak = 0;
    std::vector<RegionBytes> regions; // non-zero entries only
};

class MemoryProbe {
public:
    virtual ~MemoryProbe() = default;
    virtual void resetPeak() = 0;
    virtual MemorySnapshot read() = 0;
    virtual PeakAttribution attribution() = 0;

    // Install the probe for `device`. The CPU probe counts only what is allocated while it lives, on the
    // thread that created it: create it before building the model. One probe at a time traces regions.
    static std::unique_ptr<MemoryProbe> create(const torch::Device& device);
};

} // namespace rs::engine
