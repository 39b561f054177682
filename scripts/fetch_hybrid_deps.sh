#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Lays out in .deps/ (git-ignored) what bench/gpu/megatron_lm/hybrid_runs.sh needs on the GPU host, which
# has PyTorch 2.11 with Triton but no internet and no pip: everything travels as Python source in the
# device call's `carry: [".deps"]` (about 35 MB of the 64 MiB).
#   .deps/mlm           Megatron-LM d98e8a64 (profile main): megatron/, pretrain_hybrid.py (pretrain_mamba.py
#                       only re-runs it), hybrid_builders.py, mamba_builders.py, pretrain_gpt.py,
#                       gpt_builders.py, model_provider.py
#   .deps/py/mamba_ssm  state-spaces/mamba 0048fbf2 (the rev Megatron-LM d98e8a64's pyproject.toml pins): the
#                       Python and Triton sources. Its __init__.py is cut to the version line: the original
#                       imports Mamba-1's selective_scan_cuda module and Mamba-3's modules at package import;
#                       Megatron imports only mamba_ssm.ops.triton.{ssd_combined,layernorm_gated} (Triton).
#   .deps/py/fla        flash-linear-attention v0.5.1 (the version the same pyproject.toml pins): Triton
#                       only; its __init__ treats the absent transformers (fla.layers / fla.models) as optional.
#   .deps/py/causal_conv1d
#                       bench/gpu/megatron_lm/shim/causal_conv1d, a PyTorch stand-in. causal_conv1d's absence:
#                       Megatron imports it in try/except (mamba_mixer.py:62-67, causal_conv1d.py:13-16), and
#                       only its non-default path (--disable-mamba-mem-eff-path, mamba_mixer.py:604-605) falls
#                       back to nn.Conv1d; the default memory-efficient path calls mamba_ssm's
#                       mamba_split_conv1d_scan_combined, whose MambaSplitConv1dScanCombinedFn calls
#                       causal_conv1d_fwd_function / causal_conv1d_bwd_function (mamba_ssm 0048fbf2
#                       ssd_combined.py:21-28, 845, 920, 969), None without the package, so it fails with
#                       "'NoneType' object is not callable". The stand-in (F.conv1d) keeps that default path, the one the estimator
#                       models; the conv's output is a temporary there (recomputed in backward), so only
#                       transients differ from the CUDA kernel. FLA's GatedDeltaNet conv is its own Triton
#                       kernel (fla/modules/convolution.py) and needs no causal_conv1d.
#   .deps/py-einops/einops
#                       bench/gpu/megatron_lm/shim/einops, put on PYTHONPATH only where `import einops` fails
#                       (Megatron's Mamba mixer, mamba_ssm and fla import it; it is no dependency of PyTorch).
#   .deps/te            Transformer Engine 2.17.1 for the H200 (../shared/gpu-host/transformer-engine) if absent
#   .deps/include       nlohmann/json's header for the worker's build if absent (bench/gpu/common.sh)
# The sources come from the fetched mirrors (the search tool's fetch: /work/.mirror/<owner>+<name>/repo).
# Usage: scripts/fetch_hybrid_deps.sh [MIRROR_ROOT]   (default /work/.mirror)
set -euo pipefail
cd "$(dirname "$0")/.."
mirror="${1:-/work/.mirror}"
megatron_rev=d98e8a64ddf34856e74b24714e3bedb2f5a39553
mamba_rev=0048fbf2e7b2f214dcbe703ea3dec2b9647595e1
fla_rev=v0.5.1

# export REPO REV DEST PATH...: PATHs of REPO at REV under DEST (replacing what was there).
export_tree() {
    local name=$1 repo="$mirror/$1/repo" rev=$2 dest=$3
    shift 3
    git -C "$repo" cat-file -e "$rev^{commit}" 2>/dev/null || {
        echo "fetch_hybrid_deps: $name has no $rev under $mirror (fetch github:${name/+//} first)" >&2
        exit 1
    }
    mkdir -p "$dest"
    for p in "$@"; do rm -rf "${dest:?}/$p"; done
    git -C "$repo" archive "$rev" "$@" | tar -x -C "$dest"
    echo "$name $(git -C "$repo" rev-parse "$rev")" >>"$dest/REVISIONS"
}

rm -rf .deps/py .deps/py-einops
rm -f .deps/mlm/REVISIONS
export_tree NVIDIA+Megatron-LM "$megatron_rev" .deps/mlm megatron pretrain_hybrid.py pretrain_mamba.py \
    hybrid_builders.py mamba_builders.py pretrain_gpt.py gpt_builders.py model_provider.py
export_tree state-spaces+mamba "$mamba_rev" .deps/py mamba_ssm
version=$(sed -n 's/^__version__ = //p' .deps/py/mamba_ssm/__init__.py)
printf '__version__ = %s\n# Cut by scripts/fetch_hybrid_deps.sh: Megatron imports only mamba_ssm.ops.triton.*.\n' \
    "$version" >.deps/py/mamba_ssm/__init__.py
export_tree fla-org+flash-linear-attention "$fla_rev" .deps/py fla
cp -r bench/gpu/megatron_lm/shim/causal_conv1d .deps/py/
mkdir -p .deps/py-einops && cp -r bench/gpu/megatron_lm/shim/einops .deps/py-einops/
find .deps/py .deps/py-einops -name __pycache__ -prune -exec rm -rf {} +

if ! ls .deps/te/te-site-*.tar.xz >/dev/null 2>&1; then
    mkdir -p .deps/te
    cp ../shared/gpu-host/transformer-engine/te-site-*.tar.xz .deps/te/
    cp -r ../shared/gpu-host/transformer-engine/shim .deps/te/
fi
if [ ! -f .deps/include/nlohmann/json.hpp ] && [ -d /usr/include/nlohmann ]; then
    mkdir -p .deps/include && cp -r /usr/include/nlohmann .deps/include/
fi
du -sh .deps
cat .deps/mlm/REVISIONS .deps/py/REVISIONS
