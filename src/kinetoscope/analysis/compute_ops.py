"""Time in compute ops and the FLOPs they do, per step, from op names and recorded shapes.

On a host-only trace the device analog is the share of step time spent inside
the ops that do the arithmetic (self time of leaf ops such as `aten::mm`)
against the framework dispatch around them. FLOPs of matrix products come from
`Input Dims` (record_shapes=True): 2*M*N*K per product, times the batch.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from ..trace import Cat, Trace
from .steps import windows

#: Leaf ops whose self time is arithmetic rather than dispatch.
COMPUTE_OPS = frozenset(
    {
        "aten::mm",
        "aten::addmm",
        "aten::bmm",
        "aten::baddbmm",
        "aten::addbmm",
        "aten::mv",
        "aten::addmv",
        "aten::dot",
        "aten::mkldnn_convolution",
        "aten::_scaled_dot_product_flash_attention_for_cpu",
    }
)
#: Matrix products: which inputs are the (batched) left and right operands.
MATMUL_OPERANDS = {
    "aten::mm": (0, 1),
    "aten::bmm": (0, 1),
    "aten::addmm": (1, 2),
    "aten::baddbmm": (1, 2),
}


@dataclass(frozen=True)
class ComputeStep:
    compute_us: float  # self time of COMPUTE_OPS in the step
    flops: float  # of the matrix products whose shapes were recorded
    shaped: int  # matrix products with usable shapes
    products: int  # matrix products in the step


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


def compute_steps(trace: Trace) -> list[ComputeStep]:
    """Per step (or the whole trace without steps): compute-op self time and FLOPs."""
    ids = trace.name_ids_matching(lambda n: n in COMPUTE_OPS)
    idx = np.flatnonzero(
        trace.mask(Cat.CPU_OP) & (trace.lane_kind == 1) & np.isin(trace.name_id, ids)
    )
    out = []
    for _, _, start, end in windows(trace):
        inside = idx[(trace.ts[idx] >= start) & (trace.ts[idx] < end)]
        flops, shaped, products = 0.0, 0, 0
        for i in inside.tolist():
            name = trace.name(i)
            if name in MATMUL_OPERANDS:
                products += 1
                f = matmul_flops(name, trace.input_dims.get(i))
                if f is not None:
                    flops += f
                    shaped += 1
        out.append(ComputeStep(float(trace.self_time[inside].sum()), flops, shaped, products))
    return out
