# SPDX-License-Identifier: Apache-2.0
# Loaded by Python at start when this folder is on PYTHONPATH (real_ranks.sh puts it there for the runs with
# --fp8-recipe delayed only). Megatron-LM d98e8a64's TEDelayedScaling passes override_linear_precision to
# Transformer Engine's DelayedScaling (megatron/core/extensions/transformer_engine.py, class TEDelayedScaling),
# a field TE 2.17.1 no longer has (transformer_engine/common/recipe/__init__.py: backward_override took its
# place), so every delayed-scaling run of that pair stops at the first forward with a TypeError. Megatron
# always passes (False, False, False), which was TE's default: this drops exactly that value and refuses any
# other. The same constructor also passes the module keywords of _get_extra_te_kwargs (params_dtype, device),
# which no DelayedScaling field takes: dropped too. So the run is the one Megatron meant.
from transformer_engine.common import recipe as _recipe

_init = _recipe.DelayedScaling.__init__


def _init_without_override(self, *args, override_linear_precision=None, params_dtype=None, device=None, **kwargs):
    if override_linear_precision not in (None, (False, False, False)):
        raise TypeError(f"override_linear_precision={override_linear_precision!r}: TE 2.17 has no such field")
    _init(self, *args, **kwargs)


_recipe.DelayedScaling.__init__ = _init_without_override
