// SPDX-License-Identifier: Apache-2.0
// Model FLOPs of one training step, counted from the recipe's shapes (matrix multiplies, and a Mamba layer's
// scan and a GatedDeltaNet layer's delta rule as Megatron-LM's num_floating_point_operations counts them:
// norms, activations and the optimizer are left out, as Megatron's own throughput formula leaves them out).
// Each layer counts its own kind: a hybrid stack's Mamba, MLP-only or attention-only layer its part alone.
// Forward + backward = 3 x forward; causal attention counts the unmasked half of the score matrix.
// Shared by the worker (throughput in its stream), the GUI and reports.
#pragma once

#include <vector>

#include "core/model_shape.h"
#include "core/recipe.h"

namespace rs {

struct StepFlops {
    double forward = 0; // one forward pass of the given layers plus embedding-free loss head
    double per_step = 0; // 3 x forward
};

// FLOPs of one micro-batch step over `layers` (global indices) plus the output layer.
StepFlops modelFlops(const Recipe& r, const std::vector<int>& layers);

} // namespace rs
