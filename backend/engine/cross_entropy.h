// SPDX-License-Identifier: Apache-2.0
// The language-model loss as Megatron computes it (tensor_parallel/cross_entropy.py, one vocabulary
// partition): the 16-bit logits' fp32 copy becomes the softmax in place and is the only [tokens, vocab]
// tensor kept for backward, whose gradient is written into it in place. torch's cross_entropy instead keeps
// log_softmax's output and makes two more [tokens, vocab] fp32 gradients in backward.
#pragma once
#include <torch/torch.h>

namespace rs::engine {

// Per-token losses [tokens] of `logits` [tokens, vocab] (any floating dtype) against `labels` [tokens]
// (int64); the gradient reaches `logits` in their own dtype.
torch::Tensor vocabCrossEntropy(const torch::Tensor& logits, const torch::Tensor& labels);

} // namespace rs::engine
