# SPDX-License-Identifier: Apache-2.0
"""causal_conv1d.cpp_functions as mamba_ssm's ssd_combined.py calls them (see __init__.py)."""
import torch

from causal_conv1d import _conv


def causal_conv1d_fwd_function(x, weight, bias, seq_idx, initial_states, final_states_out, silu_activation):
    if seq_idx is not None or initial_states is not None or final_states_out is not None:
        raise NotImplementedError("causal_conv1d shim: seq_idx, initial and final states are not supported")
    with torch.no_grad():
        return _conv(x, weight, bias, silu_activation)


def causal_conv1d_bwd_function(x, weight, bias, dout, seq_idx, initial_states, dfinal_states, dx,
                               return_dfinal_states, silu_activation):
    if seq_idx is not None or initial_states is not None or dfinal_states is not None:
        raise NotImplementedError("causal_conv1d shim: seq_idx, initial and final states are not supported")
    with torch.enable_grad():
        xr = x.detach().requires_grad_(True)
        wr = weight.detach().requires_grad_(True)
        br = bias.detach().requires_grad_(True) if bias is not None else None
        out = _conv(xr, wr, br, silu_activation)
        leaves = [xr, wr] + ([br] if br is not None else [])
        grads = torch.autograd.grad(out, leaves, dout)
    gx, gw = grads[0], grads[1]
    gb = grads[2] if br is not None else None
    if dx is not None:
        dx.copy_(gx)
        gx = dx
    return gx, gw, gb, None


def causal_conv1d_update_function(*args, **kwargs):
    # mamba_ssm imports it beside the two above (ssd_combined.py:23); training never calls it (decode only),
    # and without the name the whole import fails and mamba_ssm sets all three to None.
    raise NotImplementedError("causal_conv1d shim: the update (inference decode) function is not supported")
