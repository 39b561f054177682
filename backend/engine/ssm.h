// SPDX-License-Identifier: Apache-2.0
// The worker's state-space mixers: Megatron Core's Mamba-2 mixer (megatron/core/ssm/mamba_mixer.py) and
// GatedDeltaNet (megatron/core/ssm/gated_delta_net/gdn.py) as they train on a GPU with mamba_ssm's and
// FLA's Triton kernels. Each kernel is a custom autograd function that keeps for backward exactly the
// tensors the Triton kernel's autograd Function keeps (ctx.save_for_backward) and rebuilds the rest in its
// backward, as those kernels do; the arithmetic is LibTorch ops (CPU and CUDA alike), laid out the way the
// chunked kernels compute it (docs/engine.md, "The stack": hybrid stacks).
#pragma once

#include <cstdint>

#include <torch/torch.h>

namespace rs::engine::ssm {

// --- Mamba-2 ---

// The SSD scan as mamba_ssm's chunked kernels compute it (ops/triton/ssd_combined.py
// _mamba_chunk_scan_combined_fwd: chunk cumsum of dt x A, chunk states, state passing, C^T B, chunk scan):
// x [b, l, H, P], dt [b, l, H] (after softplus, fp32), A [H] (fp32, negative), B and C [b, l, G, N] (G
// divides H), D [H]. Returns y = scan + D x [b, l, H, P] in x's dtype; fp32 inside. Differentiable through
// autograd (the Mamba function's backward replays it with grad).
torch::Tensor ssdChunkScan(const torch::Tensor& x, const torch::Tensor& dt, const torch::Tensor& A,
    const torch::Tensor& B, const torch::Tensor& C, const torch::Tensor& D, int64_t chunk);

// The recurrence the scan computes, step by step (the tests' reference): h_t = exp(dt_t A) h_{t-1} +
// dt_t x_t B_t^T per head, y_t = h_t C_t + D x_t. fp32 result.
torch::Tensor ssdReference(const torch::Tensor& x, const torch::Tensor& dt, const torch::Tensor& A,
    const torch::Tensor& B, const torch::Tensor& C, const torch::Tensor& D);

// Causal depthwise convolution over the sequence: x [b, l, C], weight [C, W], bias [C] or undefined;
// y_t = bias + sum_w weight[:, w] x_{t - W + 1 + w}. Then SiLU when `silu`.
torch::Tensor causalConv1d(
    const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias, bool silu);

struct MambaDims {
    int64_t heads = 0, head_dim = 0, groups = 0, state = 0, chunk = 128;
};

// mamba_split_conv1d_scan_combined as MambaMixer._ssm_training calls it (no rmsnorm weight, no out_proj,
// norm_before_gate False, dt softplus): zxbcdt [b, l, 2 d_inner + 2 G N + H] -> out_x * silu(z)
// [b, l, d_inner]. Keeps zxbcdt, the conv weight and bias, dt_bias, A, D and out_x (the scan's ungated
// output), as MambaSplitConv1dScanCombinedFn does; its backward rebuilds the conv and the scan.
// dt_bias [H] fp32, A [H] fp32 (-exp(A_log)), D [H].
torch::Tensor mambaSplitConv1dScan(const torch::Tensor& zxbcdt, const torch::Tensor& conv_weight,
    const torch::Tensor& conv_bias, const torch::Tensor& dt_bias, const torch::Tensor& A,
    const torch::Tensor& D, const MambaDims& dims);

// RMSNormGated with z=None, group_size = width / groups (ops/triton/layernorm_gated.py LayerNormFn): keeps
// its input, the weight and the fp32 rstd per row and group.
torch::Tensor groupRmsNorm(const torch::Tensor& x, const torch::Tensor& weight, int64_t groups, double eps);

// --- GatedDeltaNet (FLA) ---

// fla.modules.conv causal_conv1d with SiLU (CausalConv1dFunction): keeps its input (made contiguous, as
// input_guard does), the weight and the bias; rebuilds the convolution in backward.
torch::Tensor causalConv1dSilu(
    const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias);

// fla.modules.l2norm (L2NormFunction): x / sqrt(sum x^2 + eps) over the last dimension; keeps its output and
// the fp32 rstd.
torch::Tensor l2norm(const torch::Tensor& x, double eps = 1e-6);

// chunk_gated_delta_rule (ChunkGatedDeltaRuleFunction, use_qk_l2norm_in_kernel False, gate outside the
// kernel): q, k [b, l, H, K], v [b, l, H, V], g [b, l, H] (fp32 log decay), beta [b, l, H]. The chunked
// WY form with chunks of `chunk` positions. Keeps q, k, v, the chunk-local cumsum of g (fp32), beta and A
// (the solved (I + tril(beta K K^T))^-1 per chunk, [b, l, H, chunk] in k's dtype), as FLA does; its
// backward rebuilds the rest. Returns o [b, l, H, V] in q's dtype.
torch::Tensor chunkGatedDeltaRule(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
    const torch::Tensor& g, const torch::Tensor& beta, double scale, int64_t chunk = 64);

// The recurrence (fla/ops/gated_delta_rule/naive.py naive_recurrent_gated_delta_rule): S_t = exp(g_t) S_{t-1}
// + k_t (beta_t (v_t - S^T k_t))^T, o_t = S_t^T (scale q_t). fp32 result.
torch::Tensor gatedDeltaRuleReference(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
    const torch::Tensor& g, const torch::Tensor& beta, double scale);

// _apply_gated_norm's gate: y * silu(gate) in fp32, cast back to y's dtype. Keeps y and the gate (the
// fused, compiled function's inputs).
torch::Tensor siluGate(const torch::Tensor& y, const torch::Tensor& gate);

} // namespace rs::engine::ssm
