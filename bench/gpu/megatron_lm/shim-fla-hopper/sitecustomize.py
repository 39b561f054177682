# SPDX-License-Identifier: Apache-2.0
# Loaded by Python at start when this folder is on PYTHONPATH (hybrid_runs.sh with FLA_GUARD_OFF=1 only).
# FLA v0.5.1 refuses the gated chunk_bwd_dqkwg kernel on Hopper with Triton >= 3.4 (fla/ops/common/chunk_o.py:
# its gradients come out wrong there, FLA issue #640; FLA's answer is its tilelang kernel, which this host
# cannot install). The kernel's buffers are sized by the shapes, not by the values, so for the memory of a
# GatedDeltaNet stack the run may go on: this lifts only that guard. Gradients and losses of such a run are
# not to be trusted; its memory is.
import fla.ops.common.chunk_o as _chunk_o

_chunk_o.TRITON_ABOVE_3_4_0 = False
