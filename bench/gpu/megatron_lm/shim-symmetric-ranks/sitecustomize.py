# SPDX-License-Identifier: Apache-2.0
# Loaded by Python at start when this folder is on PYTHONPATH (real_ranks.sh and bridge_rank.sh put it there
# for runs named *-sym): runs the product's symmetric-ranks shim, resources/megatron/symmetric_ranks.py.
import os as _os

_path = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), *[_os.pardir] * 4, "resources", "megatron",
                      "symmetric_ranks.py")
with open(_path) as _f:
    exec(compile(_f.read(), _path, "exec"))
