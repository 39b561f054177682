# SPDX-License-Identifier: Apache-2.0
"""A PyTorch stand-in for Dao-AILab's causal_conv1d (its CUDA extension is not built on the GPU host), for
the hybrid ground-truth runs (bench/gpu/megatron_lm/hybrid_runs.sh). Megatron Core's default Mamba path
(use_mamba_mem_eff_path, mamba_mixer.py _ssm_training) calls mamba_ssm's mamba_split_conv1d_scan_combined,
whose MambaSplitConv1dScanCombinedFn calls causal_conv1d_fwd_function / causal_conv1d_bwd_function
(cpp_functions.py here) and cannot run without them. The depthwise causal conv is F.conv1d with
width - 1 zeros on the left; inside that function its output is a temporary (it is recomputed in backward),
so the stand-in changes transients only, not what the layer keeps for backward."""
import torch
import torch.nn.functional as F

__version__ = "1.5.0+recompute-studio-shim"


def _conv(x, weight, bias, silu):
    # x [b, d, s] (any strides), weight [d, w]
    width = weight.shape[-1]
    y = F.conv1d(x, weight.unsqueeze(1), bias, padding=width - 1, groups=weight.shape[0])[..., : x.shape[-1]]
    return F.silu(y) if silu else y


def causal_conv1d_fn(x, weight, bias=None, seq_idx=None, initial_states=None, return_final_states=False,
                     final_states_out=None, activation=None):
    if seq_idx is not None or initial_states is not None or return_final_states:
        raise NotImplementedError("causal_conv1d shim: seq_idx, initial and final states are not supported")
    return _conv(x, weight, bias, activation in ("silu", "swish"))


def causal_conv1d_update(*args, **kwargs):
    raise NotImplementedError("causal_conv1d shim: causal_conv1d_update (inference decode) is not supported")
