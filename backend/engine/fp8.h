// SPDX-License-Identifier: Apache-2.0
// FP8 through Transformer Engine's linears, as the worker runs it: what TE keeps is what decides memory, so
// the worker keeps the same tensors in the same widths (docs/engine.md "FP8"):
// - each TE linear weight quantized row-wise and column-wise (its transpose, what Hopper's backward GEMMs
//   read), 1 byte each, made at a step's first micro-batch and reused by the others (Megatron passes
//   is_first_microbatch; transformer_engine/pytorch/module/linear.py quantize_weight);
// - each linear's input saved for the weight gradient as its column-wise quantized copy, 1 byte an element,
//   the 16-bit input freed where nothing else holds it (linear.py, grouped_linear.py), except where Megatron
//   asks the module to save the original (linear_proj under every recipe but delayed scaling:
//   attention.py set_save_original_input);
// - the output gradient quantized (E5M2 under the hybrid format) row-wise for the input gradient and
//   column-wise for the weight gradient, backward's transients.
// The products are FP8 GEMMs (at::_scaled_mm, per-tensor scales) on CUDA with LibTorch >= 2.5 where the
// shapes allow (inner and output sizes multiples of 16); elsewhere the quantized operands are dequantized and
// multiplied in 16 bits. Without float8 dtypes (LibTorch < 2.1: Debian's CPU build) the 1-byte codes are
// int8 of the same scale: the same bytes kept, other rounding.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>

#include <torch/torch.h>

namespace rs::engine::fp8 {

struct Settings {
    bool enabled = false;
    bool delayed = false; // fp8_recipe delayed: linear_proj quantizes its own copy of the context
    bool e5m2_grads = true; // fp8 format hybrid: E4M3 forward, E5M2 gradients; e4m3: E4M3 throughout
};

// Whether this build has float8 dtypes (else the codes are int8 stand-ins) and FP8 GEMMs.
bool hasFloat8();
bool hasScaledMm();

// 1-byte codes and the factor that dequantizes them (value = code x scale_inv, an fp32 scalar tensor).
struct Quantized {
    torch::Tensor data;
    torch::Tensor scale_inv;
};

// Current (per-tensor) scaling: the amax of x sets the scale. `transpose` gives the column-wise copy of a
// 2-D tensor (its transpose, contiguous).
Quantized quantize(const torch::Tensor& x, bool e5m2, bool transpose = false);
torch::Tensor dequantize(const Quantized& q, torch::ScalarType dtype);

// a [M, K] (row-major codes) @ b, where b_t holds b's transpose [N, K] row-major (so b is column-major):
// [M, N] in out_dtype. An FP8 GEMM where hasScaledMm() and the shapes allow, else in 16 bits; `fp8_ran`
// says which.
torch::Tensor scaledMm(
    const Quantized& a, const Quantized& b_t, torch::ScalarType out_dtype, bool* fp8_ran = nullptr);

// Each TE linear weight's quantized copies, made in place at the first use after beginStep() and reused
// until the next. Held as parameters (MemoryCategory::Parameters).
class WeightCache {
public:
    struct Entry {
        Quantized rowwise; // [out, in] (grouped: [E, out, in])
        Quantized columnwise; // [in, out] (grouped: [E, in, out])
    };
    const Entry& get(const torch::Tensor& weight, bool e5m2 = false);
    void beginStep() { step_ += 1; }
    int64_t bytes() const;

private:
    struct Slot {
        Entry entry;
        int64_t step = -1;
    };
    std::unordered_map<const c10::TensorImpl*, Slot> slots_;
    int64_t step_ = 0;
};

// y = x @ W^T (+ bias) through a TE linear under FP8; x [..., in], W [out, in]. `save_original_input`: keep
// x itself for the weight gradient (and quantize it in backward) instead of its quantized copy.
torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
    WeightCache& cache, const Settings& settings, bool save_original_input = false);

// The input codes a grouped linear saved for its weight gradient, and how to make them again from the same
// input (an output-discard checkpoint frees and refills them: OutputDiscardCheckpoint::alsoDiscard).
struct SavedCodes {
    torch::Tensor codes;
    std::function<void(const torch::Tensor& input, torch::Tensor& codes)> rebuild;
};

// TE's GroupedLinear under FP8: rows of x sorted by expert, counts [E] rows each (read on the host, TE's
// m_splits); W [E, out, in]. `saved`: where to say what it saved of x.
torch::Tensor groupedLinear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& counts,
    WeightCache& cache, const Settings& settings, SavedCodes* saved = nullptr);

} // namespace rs::engine::fp8
