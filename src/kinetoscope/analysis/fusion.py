"""Chains of eager elementwise kernels: the candidates for fusion.

Eager PyTorch runs `gelu(x) * y` as two kernels: the first writes its whole
result to device memory, the second reads it back. A chain here is a run of
consecutive ATen elementwise kernels on one stream, each launched by a
different op. The trace records no tensor identities, so data flow is
inferred, not proven: kernels that ignore their input (fills, zeroing) and
multi-tensor `foreach` kernels (already batched across tensors) break a chain.
"""

from __future__ import annotations

from collections import defaultdict

from ..trace import Trace
from .kernel_names import decode

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


def _fusable(trace: Trace, kernel: int, op: int) -> bool:
    if op < 0:
        return False
    d = decode(trace.name(kernel))
    if d.kind != "elementwise" or d.library != "ATen":
        return False
    if "FillFunctor" in d.short or d.short.startswith("multi_tensor_apply_kernel"):
        return False
    return trace.name(op) not in _SOURCE_OPS


def elementwise_chains(trace: Trace) -> list[list[int]]:
    """Runs (kernel indices, in time order) of at least two fusable kernels on one stream."""
    op_of = trace.op_of
    by_lane: dict[int, list[int]] = defaultdict(list)
    for k in trace.kernels.tolist():
        by_lane[int(trace.lane[k])].append(k)
    chains = []
    for members in by_lane.values():
        current: list[int] = []
        for k in members:
            ok = _fusable(trace, k, int(op_of[k]))
            if ok and current and op_of[current[-1]] != op_of[k]:
                current.append(k)
                continue
            if len(current) >= 2:
                chains.append(current)
            current = [k] if ok else []
        if len(current) >= 2:
            chains.append(current)
    return chains
