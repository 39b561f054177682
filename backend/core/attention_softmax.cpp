// SPDX-License-Identifier: Apache-2.0
#include "core/attention_softmax.h"

#include <algorithm>

namespace rs {

namespace {

// scaled_masked_softmax.h get_batch_per_block (Apex / Megatron's csrc; the same in Transformer Engine).
int64_t batchesPerBlock(int64_t sk)
{
    int64_t nextPowerOfTwo = 1;
    while (nextPowerOfTwo < sk)
        nextPowerOfTwo *= 2;
    const int64_t warpSize = std::min<int64_t>(nextPowerOfTwo, 32); // C10_WARP_SIZE on NVIDIA GPUs
    const int64_t batchesPerWarp = nextPowerOfTwo <= 128 ? 2 : 1;
    constexpr int64_t threadsPerBlock = 128;
    return threadsPerBlock / warpSize * batchesPerWarp;
}

} // namespace

bool fusedMaskedSoftmaxApplies(const Recipe& r, int64_t b, int64_t np, int64_t sq, int64_t sk)
{
    if (!r.masked_softmax_fusion || r.transformer_impl != "transformer_engine")
        return false;
    if (!r.bf16 && !r.fp16)
        return false;
    const int64_t attnBatches = b * np;
    if (attnBatches <= 0 || !(16 < sk && sk <= 4096) || sq % 4 != 0 || sk % 4 != 0 || attnBatches % 4 != 0)
        return false;
    return attnBatches % batchesPerBlock(sk) == 0;
}

} // namespace rs
