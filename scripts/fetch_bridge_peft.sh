#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Lays out Megatron Bridge's LoRA (src/megatron/bridge/peft at 067f987d, the recipe table's commit) inside
# .deps/mlm/megatron/bridge/ (git-ignored), for bench/gpu/megatron_lm/pretrain_gpt_lora.py on the GPU host,
# which has no Bridge, no internet and no pip: Python source carried in the device call (`carry: [".deps"]`).
#   megatron/bridge/peft/       Bridge's files as they are
#   megatron/bridge/utils/      import_utils.py and activation_map.py as they are (peft/utils.py and
#                               module_matcher.py import them); common_utils.py replaced by a file of ours
#                               with print_rank_0 alone (Bridge's imports its training and Slurm helpers;
#                               peft/recompute.py uses only print_rank_0)
#   megatron/bridge/__init__.py empty (Bridge's imports AutoBridge and transformers)
# Usage: scripts/fetch_bridge_peft.sh [MIRROR_ROOT]   (default /work/.mirror; needs .deps/mlm)
set -euo pipefail
cd "$(dirname "$0")/.."
mirror="${1:-/work/.mirror}"
rev=067f987df03b8355b03192d88d70f1709fedf51a
git_dir="$mirror/NVIDIA-NeMo+Megatron-Bridge/repo"
[ -d .deps/mlm/megatron ] || { echo "no .deps/mlm (scripts/fetch_hybrid_deps.sh lays it out)" >&2; exit 1; }
dst=.deps/mlm/megatron/bridge
rm -rf "$dst"
mkdir -p "$dst/peft" "$dst/utils"
: >"$dst/__init__.py"
: >"$dst/utils/__init__.py"
for f in $(git --git-dir "$git_dir/.git" ls-tree --name-only "$rev" src/megatron/bridge/peft/ 2>/dev/null \
  || git -C "$git_dir" ls-tree --name-only "$rev" src/megatron/bridge/peft/); do
  git -C "$git_dir" show "$rev:$f" >"$dst/peft/$(basename "$f")"
done
for f in import_utils.py activation_map.py; do
  git -C "$git_dir" show "$rev:src/megatron/bridge/utils/$f" >"$dst/utils/$f"
done
cat >"$dst/utils/common_utils.py" <<'PY'
# Recompute Studio's stand-in for megatron.bridge.utils.common_utils: print_rank_0 alone.
import torch


def print_rank_0(message):
    if not torch.distributed.is_initialized() or torch.distributed.get_rank() == 0:
        print(message, flush=True)
PY
echo "Bridge $rev peft: $(ls "$dst/peft" | wc -l) files in $dst"
