// SPDX-License-Identifier: Apache-2.0
// Allocated and reserved bytes read from the allocator, never estimated. On CUDA: the caching allocator's
// device statistics. On CPU: a c10::MemoryReportingInfoBase installed as thread-local debug info, which the
// CPU allocator tells about every allocation and free made on this thread (and on the autograd threads
// that inherit its debug info), so CI can test memory behaviour without a GPU.
#pragma once

#include <cstdint>
#include <memory>

#include <torch/torch.h>

namespace rs::engine {

struct MemorySnapshot {
    int64_t allocated = 0;
    int64_t reserved = 0;
    int64_t peak_allocated = 0; // since the last resetPeak()
    int64_t peak_reserved = 0;
    int64_t alloc_retries = 0; // CUDA: cudaMalloc retries after freeing the cache; CPU: 0
};

class MemoryProbe {
public:
    virtual ~MemoryProbe() = default;
    virtual void resetPeak() = 0;
    virtual MemorySnapshot read() = 0;

    // Install the probe for `device`. The CPU probe counts only what is allocated while it lives, on the
    // thread that created it: create it before building the model.
    static std::unique_ptr<MemoryProbe> create(const torch::Device& device);
};

} // namespace rs::engine
