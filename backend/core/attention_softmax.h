// SPDX-License-Identifier: Apache-2.0
// Which softmax unfused attention runs: Megatron's fused scaled-masked-softmax kernel or the torch path of
// FusedScaleMaskSoftmax (megatron/core/fusions/fused_softmax.py). One fact, read by the estimator (both
// layouts) and by the worker (engine/model.cpp), so the two never disagree about it.
#pragma once

#include <cstdint>

#include "core/recipe.h"

namespace rs {

// Whether unfused attention's softmax is Megatron's ScaledUpperTriangMaskedSoftmax kernel for a rank whose
// scores are [b, np, sq, sk] (np: heads on the rank). FusedScaleMaskSoftmax.is_kernel_available:
// - masked_softmax_fusion on (TransformerConfig's field; each front end's default in recipe.h);
// - the kernel present: Transformer Engine or Apex installed, which we read from transformer_impl
//   transformer_engine (the local spec suggests neither);
// - 16-bit input (bf16 or fp16 scores);
// - 16 < sk <= 4096, sq and sk multiples of 4, b * np a multiple of 4;
// - causal mask (GPT's self-attention): b * np a multiple of the kernel's batches per block,
//   get_batch_per_block (csrc scaled_masked_softmax.h): 128 threads / 32 per warp x (2 when the next power
//   of two of sk is at most 128, else 1), i.e. 8 for sk <= 128 and 4 above.
// Not a recipe field, assumed: softmax_type vanilla (no softmax offset), no sliding window.
// When it applies, the kernel keeps only its 16-bit probabilities for backward (scale and mask folded in,
// softmax in fp32 registers); otherwise the torch path keeps the softmax's output in fp32 when
// attention_softmax_in_fp32 (or apply_query_key_layer_scaling) and a 16-bit copy beside it.
bool fusedMaskedSoftmaxApplies(const Recipe& r, int64_t b, int64_t np, int64_t sq, int64_t sk);

} // namespace rs
