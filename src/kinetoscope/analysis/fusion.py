"""Chains of eager elementwise kernels: the candidates for fusion.

Eager PyTorch runs `gelu(x) * y` as two kernels: the first writes its whole
result to device memory, the second reads it back. A chain here is a run of
consecutive ATen elementwise kernels on one stream, each launched by a
different op, where data plausibly flows from one op to the next.

The trace records no tensor identities, so the flow is inferred from what it
does record: where both ops have recorded shapes (`record_shapes=True`), the
first op's result shape (its largest input: pointwise results take the
broadcast shape) must be one of the next op's input shapes. Without shapes
the order alone is the evidence. What never forms a chain: kernels that ignore
their input (fills, zeroing), multi-tensor `_foreach_*`/`_fused_*` ops
(already batched), and parameter updates (optimizer steps, zero_grad,
autograd's AccumulateGrad): consecutive updates touch different parameters,
and they are `optimizer-unfused`'s subject, not a fusion of one tensor.
"""

from __future__ import annotations

import json
from collections import defaultdict

import numpy as np

from ..trace import Trace
from .kernel_names import decoded
from .optimizer import parameter_updates

#: ops whose kernels write without reading a producer's output
_SOURCE_OPS = frozenset(
    {
        "aten::fill_",
        "aten::zero_",
        "aten::zeros",
        "aten::zeros_like",
        "aten::ones",
        "aten::ones_like",
        "aten::full",
        "aten::full_like",
        "aten::empty",
        "aten::arange",
        "aten::normal_",
        "aten::uniform_",
        "aten::rand",
        "aten::randn",
    }
)


def _fusable(trace: Trace, kernels: np.ndarray, ops: np.ndarray) -> np.ndarray:
    """Per kernel: an ATen elementwise kernel (not a fill, not a multi-tensor apply) launched
    by an op that is not a tensor source and not part of a parameter update. Kernel names
    are decoded once per name, the ops tested as arrays."""
    names = trace.name_id[kernels]
    by_name = np.zeros(len(trace.names), dtype=bool)
    for nid in np.unique(names).tolist():
        d = decoded(trace, trace.names[nid])
        by_name[nid] = (
            d.kind == "elementwise"
            and d.library == "ATen"
            and "FillFunctor" not in d.short
            and not d.short.startswith("multi_tensor_apply_kernel")
        )
    launched = ops >= 0
    safe = np.where(launched, ops, 0)
    source = np.isin(trace.name_id[safe], trace.name_ids_matching(_SOURCE_OPS.__contains__))
    return launched & by_name[names] & ~source & ~parameter_updates(trace)[safe]


def _shapes(trace: Trace, dims_json: str) -> tuple[tuple[int, ...], ...] | None:
    """The tensor shapes among an op's recorded input dims (scalars and lists dropped);
    `trace` only owns the result (`flows` asks `trace.memo(_shapes, dims)`)."""
    try:
        dims = json.loads(dims_json)
    except ValueError:
        return None
    out = tuple(
        tuple(d) for d in dims if isinstance(d, list) and d and all(isinstance(v, int) for v in d)
    )
    return out or None


def flows(trace: Trace, producer: int, consumer: int) -> bool:
    """Whether op `producer`'s result can be an input of op `consumer`: the producer's result
    shape is one of the consumer's input shapes (True when either has no recorded shapes)."""
    a, b = trace.input_dims.get(producer), trace.input_dims.get(consumer)
    # parsed once per distinct dims text of the trace: ops of one layer repeat it
    made = trace.memo(_shapes, a) if a else None
    used = trace.memo(_shapes, b) if b else None
    if made is None or used is None:
        return True
    result = max(made, key=lambda s: int(np.prod(s)))
    return result in used


def elementwise_chains(trace: Trace) -> list[list[int]]:
    """Runs (kernel indices, in time order) of at least two fusable kernels on one stream,
    each consuming the previous one's result."""
    op_of = trace.op_of
    kernels = trace.kernels
    fusable = _fusable(trace, kernels, op_of[kernels]).tolist()
    by_lane: dict[int, list[tuple[int, bool]]] = defaultdict(list)
    rows = zip(kernels.tolist(), trace.lane[kernels].tolist(), fusable, strict=True)
    for k, lane, ok in rows:
        by_lane[lane].append((k, ok))
    chains = []
    for members in by_lane.values():
        current: list[int] = []
        for k, ok in members:
            if ok and current:
                prev = int(op_of[current[-1]])
                if prev != op_of[k] and flows(trace, prev, int(op_of[k])):
                    current.append(k)
                    continue
            if len(current) >= 2:
                chains.append(current)
            current = [k] if ok else []
        if len(current) >= 2:
            chains.append(current)
    return chains
