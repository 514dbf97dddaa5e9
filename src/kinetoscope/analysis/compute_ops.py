"""The FLOPs of matrix products, from recorded shapes, per product and per step.

FLOPs of matrix products come from `Input Dims` (record_shapes=True): 2*M*N*K
per product, times the batch. (The time the math takes on a CPU run is
`analysis.cpu_compute`'s, read through `analysis.stats`.)
"""

from __future__ import annotations

import json

import numpy as np

from ..trace import Cat, Trace
from .steps import windows

#: Matrix products: which inputs are the (batched) left and right operands.
MATMUL_OPERANDS = {
    "aten::mm": (0, 1),
    "aten::bmm": (0, 1),
    "aten::addmm": (1, 2),
    "aten::baddbmm": (1, 2),
}


def matmul_flops(name: str, dims_json: str | None) -> float | None:
    """2*M*N*K (times batch) of one recorded matrix product, None without usable shapes."""
    operands = MATMUL_OPERANDS.get(name)
    if operands is None or not dims_json:
        return None
    try:
        dims = json.loads(dims_json)
        left, right = dims[operands[0]], dims[operands[1]]
    except (ValueError, IndexError, TypeError):
        return None
    if len(left) < 2 or len(right) < 2 or len(left) != len(right) or left[-1] != right[-2]:
        return None
    batch = float(np.prod(left[:-2])) if len(left) > 2 else 1.0
    return 2.0 * batch * left[-2] * left[-1] * right[-1]


def matmul_flops_per_step(trace: Trace) -> list[float]:
    """Per step (or the whole trace without steps): FLOPs of the matrix products whose
    shapes were recorded."""
    ids = trace.name_ids_matching(lambda n: n in MATMUL_OPERANDS)
    idx = np.flatnonzero(
        trace.mask(Cat.CPU_OP) & (trace.lane_kind == 1) & np.isin(trace.name_id, ids)
    )
    out = []
    for _, _, start, end in windows(trace):
        inside = idx[(trace.ts[idx] >= start) & (trace.ts[idx] < end)]
        flops = (matmul_flops(trace.name(i), trace.input_dims.get(i)) for i in inside.tolist())
        out.append(sum(f for f in flops if f is not None))
    return out
