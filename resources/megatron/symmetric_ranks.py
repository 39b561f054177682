# SPDX-License-Identifier: Apache-2.0
# Symmetric ranks for Megatron-LM's --fake-process-group. Under it every collective returns at once and
# leaves its output as torch.empty left it. For memory that is harmless except where the output is a count
# that sizes later buffers: the alltoall MoE dispatcher gathers every rank's tokens-per-expert over the
# expert group (token_dispatcher.py, MoEAlltoAllTokenDispatcher.preprocess) and sizes the tokens it receives
# and the experts' inputs from those uninitialized counts, so an EP > 1 rank's peak is not the job's (the
# Moonlight rank read 61 GB, benchmarks.md "The guide's Moonlight 16B table").
# Two users: the product's one-rank job run (session/job_run.cpp: `python3 -c` runs this text, then the
# training script) and the benchmark scripts (bench/gpu/megatron_lm/shim-symmetric-ranks/sitecustomize.py
# executes this file at interpreter start).
#
# This fills each collective's output as if every other rank of the group held what this rank holds
# ("symmetric ranks"): an all-gather tiles the input, a reduce-scatter or all-to-all returns this rank's
# own share or its input, sizes permitting, the rest zero. The counts an EP rank receives are then
# world x this rank's counts for its local experts: the real job's counts where the router's imbalance is
# the same on every rank (it comes from the router's weights, which every rank shares), balanced otherwise.
# No allocation is added: the outputs were allocated by the caller. all_reduce is left as it was (one
# rank's value, a scale of the sum). Each run's log says it ran so.
import sys

import torch
import torch.distributed as dist

_fake = {}
_said = set()


def _is_fake(group):
    key = id(group)
    if key not in _fake:
        try:
            _fake[key] = dist.get_backend(group) == "fake"
        except Exception:  # not initialized yet, or not a process group
            return False
    return _fake[key]


def _fill_from(out, src):
    """out := src's elements where they fit, zero beyond (no new allocation beyond src's flat view)."""
    if not out.is_contiguous():  # a view we cannot write through flat: left as the collective left it
        return
    o, s = out.view(-1), src.reshape(-1)
    if o.data_ptr() == s.data_ptr():  # in place (a reduce-scatter into its own chunk): already there
        return
    n = min(o.numel(), s.numel())
    if n:
        o[:n].copy_(s[:n])
    if o.numel() > n:
        o[n:].zero_()


def _wrap(name, fill):
    orig = getattr(dist, name)

    def wrapped(*args, **kwargs):
        work = orig(*args, **kwargs)
        group = kwargs.get("group")
        if group is None:
            pos = {"all_gather_into_tensor": 2, "all_gather": 2, "reduce_scatter_tensor": 3,
                   "reduce_scatter": 3, "all_to_all_single": 4, "_all_gather_base": 2,
                   "_reduce_scatter_base": 3}[name]
            group = args[pos] if len(args) > pos else None
        if _is_fake(group):
            if name not in _said:  # the log shows which collectives were filled
                _said.add(name)
                print(f"shim-symmetric-ranks: filling {name} outputs", file=sys.stderr, flush=True)
            rest = {k: v for k, v in kwargs.items() if k != "group"}
            with torch.no_grad():
                fill(group, *args, **rest)
        return work

    wrapped.__wrapped__ = orig
    setattr(dist, name, wrapped)


def _gather_into(group, output, input_, *a, **k):
    n = input_.numel()
    if n and output.numel() == n * dist.get_world_size(group) and output.is_contiguous():
        # Row by row: the distributed optimizer gathers in place (its input is the output's own row),
        # which that row already holds and a whole-tensor copy would overlap.
        src = input_.reshape(n)
        for row in output.view(-1, n):
            if row.data_ptr() != src.data_ptr():
                row.copy_(src)
    else:
        _fill_from(output, input_)


def _gather_list(group, outputs, input_, *a, **k):
    for t in outputs:
        _fill_from(t, input_)


def _scatter_into(group, output, input_, *a, **k):
    n = output.numel()
    r = dist.get_rank(group)
    flat = input_.reshape(-1)
    _fill_from(output, flat[r * n:(r + 1) * n] if flat.numel() >= (r + 1) * n else flat)


def _scatter_list(group, output, inputs, *a, **k):
    _fill_from(output, inputs[dist.get_rank(group)])


def _all_to_all(group, output, input_, *a, **k):
    _fill_from(output, input_)


for _name, _fill in (("all_gather_into_tensor", _gather_into), ("_all_gather_base", _gather_into),
                     ("all_gather", _gather_list), ("reduce_scatter_tensor", _scatter_into),
                     ("_reduce_scatter_base", _scatter_into), ("reduce_scatter", _scatter_list),
                     ("all_to_all_single", _all_to_all)):
    if hasattr(dist, _name):
        _wrap(_name, _fill)
