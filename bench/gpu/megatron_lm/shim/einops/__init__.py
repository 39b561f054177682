# SPDX-License-Identifier: Apache-2.0
"""A stand-in for einops (rearrange, repeat, reduce, einsum) on PyTorch tensors, for a GPU host whose
Python has no einops and no way to install it (scripts/fetch_hybrid_deps.sh puts it on PYTHONPATH only
where `import einops` fails). Megatron Core's Mamba and GatedDeltaNet paths, mamba_ssm and
flash-linear-attention call these with plain patterns: named axes, parenthesised groups, the literal 1 and
one ellipsis. Each call is the reshape / permute / reshape (expand for repeat) that einops itself runs
on the torch backend (einops/einops.py _apply_recipe), so views stay views and copies stay copies."""
import re

import torch

__version__ = "0.8.0+recompute-studio-shim"
_TOKEN = re.compile(r"\(|\)|\.\.\.|[A-Za-z_][A-Za-z0-9_]*|\d+")


def _groups(side):
    """One side of a pattern as groups of axis names ([] for the literal 1, ['...'] for the ellipsis)."""
    groups, cur = [], None
    for tok in _TOKEN.findall(side):
        if tok == "(":
            if cur is not None:
                raise ValueError(f"einops shim: nested parentheses in {side!r}")
            cur = []
        elif tok == ")":
            groups.append(cur)
            cur = None
        else:
            if tok.isdigit() and tok != "1":
                raise ValueError(f"einops shim: only the literal 1 is supported, not {tok!r}")
            name = None if tok == "1" else tok
            if cur is not None:
                if name is not None:
                    cur.append(name)
            else:
                groups.append([] if name is None else [name])
    return groups


def _prod(values):
    p = 1
    for v in values:
        p *= v
    return p


def _prepare(tensor, pattern, axes_lengths):
    left, right = pattern.split("->")
    lg, rg = _groups(left), _groups(right)
    ell_at = [i for i, g in enumerate(lg) if "..." in g]
    if ell_at:
        i = ell_at[0]
        names = [f"_ell{k}" for k in range(tensor.dim() - (len(lg) - 1))]
        lg = lg[:i] + [[n] for n in names] + lg[i + 1:]
        expanded = []
        for g in rg:
            if g == ["..."]:
                expanded += [[n] for n in names]
            else:
                expanded.append([x for a in g for x in (names if a == "..." else [a])])
        rg = expanded
    if len(lg) != tensor.dim():
        raise ValueError(f"einops shim: {pattern!r} does not match a tensor of {tensor.dim()} dims")
    sizes = dict(axes_lengths)
    for g, n in zip(lg, tensor.shape):
        unknown = [a for a in g if a not in sizes]
        known = _prod(sizes[a] for a in g if a in sizes)
        if len(unknown) == 1:
            sizes[unknown[0]] = n // known
        elif unknown:
            raise ValueError(f"einops shim: cannot split {g} of {pattern!r}")
        elif known != n:
            raise ValueError(f"einops shim: {g} is {known}, not {n}, in {pattern!r}")
    elem = [a for g in lg for a in g]
    return tensor.reshape([sizes[a] for a in elem]), elem, rg, sizes


def rearrange(tensor, pattern, **axes_lengths):
    if isinstance(tensor, (list, tuple)):
        tensor = torch.stack(list(tensor))
    x, elem, rg, sizes = _prepare(tensor, pattern, axes_lengths)
    out = [a for g in rg for a in g]
    if sorted(out) != sorted(elem):
        raise ValueError(f"einops shim: {pattern!r} must keep the same axes")
    x = x.permute([elem.index(a) for a in out])
    return x.reshape([_prod(sizes[a] for a in g) for g in rg])


def repeat(tensor, pattern, **axes_lengths):
    x, elem, rg, sizes = _prepare(tensor, pattern, axes_lengths)
    out = [a for g in rg for a in g]
    kept = [a for a in out if a in elem]
    x = x.permute([elem.index(a) for a in kept])
    x = x.reshape([sizes[a] if a in elem else 1 for a in out]).expand([sizes[a] for a in out])
    return x.reshape([_prod(sizes[a] for a in g) for g in rg])


def reduce(tensor, pattern, reduction, **axes_lengths):
    x, elem, rg, sizes = _prepare(tensor, pattern, axes_lengths)
    out = [a for g in rg for a in g]
    dims = [i for i, a in enumerate(elem) if a not in out]
    if dims:
        if reduction in ("max", "min"):
            for d in sorted(dims, reverse=True):
                x = getattr(x, reduction)(dim=d).values
        else:
            x = getattr(torch, reduction)(x, dim=dims)
    left = [a for a in elem if a in out]
    x = x.permute([left.index(a) for a in out])
    return x.reshape([_prod(sizes[a] for a in g) for g in rg])


def einsum(*args):
    """einops.einsum(t1, t2, ..., "a b, b c -> a c") with axis names mapped to letters."""
    *tensors, pattern = args
    names = {}
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")

    def side(s):
        return "".join("..." if n == "..." else names.setdefault(n, next(letters)) for n in s.split())

    lhs, rhs = pattern.split("->")
    spec = ",".join(side(s) for s in lhs.split(",")) + "->" + side(rhs)
    return torch.einsum(spec, *tensors)
