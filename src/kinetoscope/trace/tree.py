"""The host call tree, rebuilt from nesting per thread.

Kineto writes no parent pointers for ops; nesting in time on one thread is the
tree. The rule is the profiler's own (`_populate_cpu_children`): sort by
(start, longest first), and an event is a child of the innermost open event
that it lies entirely inside; an open event it starts after, or overhangs, is
closed. Matching it is what lets `table` agree with `key_averages()`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from .categories import Cat

if TYPE_CHECKING:
    from .model import Trace

_EPS = 1e-3  # us; absorbs ns rounding where a child ends "after" its parent
_BLOCK = 1 << 16  # events turned into Python numbers at a time (bounds the memory)


def build_parents(trace: Trace) -> np.ndarray:
    parent = np.full(len(trace), -1, dtype=np.int64)
    idx = np.flatnonzero(trace.host_tree_mask)
    if not len(idx):
        return parent
    order = idx[np.lexsort((idx, -trace.dur[idx], trace.ts[idx], trace.lane[idx]))]
    lanes = trace.lane[order]
    bounds = [0, *(np.flatnonzero(lanes[1:] != lanes[:-1]) + 1).tolist(), len(order)]
    for begin, stop in zip(bounds[:-1], bounds[1:], strict=True):  # one thread at a time
        stack_idx: list[int] = [-1]  # a root that nothing leaves: parent -1
        stack_end: list[float] = [math.inf]
        for block in range(begin, stop, _BLOCK):
            rows = order[block : min(block + _BLOCK, stop)]
            parent[rows] = _nest(
                rows.tolist(),
                trace.ts[rows].tolist(),
                (trace.ts[rows] + trace.dur[rows]).tolist(),
                stack_idx,
                stack_end,
            )
    return parent


def _nest(
    rows: list[int],
    starts: list[float],
    ends: list[float],
    stack_idx: list[int],
    stack_end: list[float],
) -> list[int]:
    """Parents of events sorted by (start, longest first), continuing the open stack."""
    out = []
    append = out.append
    push_idx, pop_idx = stack_idx.append, stack_idx.pop
    push_end, pop_end = stack_end.append, stack_end.pop
    top = stack_end[-1]
    for event, start, end in zip(rows, starts, ends, strict=True):
        while start >= top or end > top + _EPS:  # closed, or overhung: leave it
            pop_idx()
            pop_end()
            top = stack_end[-1]
        append(stack_idx[-1])
        push_idx(event)
        push_end(end)
        top = end
    return out


def self_times(trace: Trace) -> np.ndarray:
    """Duration minus the durations of direct children: the profiler's Self CPU.

    Not clipped at zero, as in the profiler: overlapping Python frames recorded
    with `with_stack=True` can make it slightly negative.
    """
    parent = trace.parent
    child = np.flatnonzero(parent >= 0)
    spent = np.zeros(len(trace), dtype=np.float64)
    np.add.at(spent, parent[child], trace.dur[child])
    return trace.dur - spent


def launching_ops(trace: Trace) -> np.ndarray:
    """For device events: innermost op or annotation enclosing the launch call."""
    out = np.full(len(trace), -1, dtype=np.int64)
    launch = trace.launch_of
    dev = np.flatnonzero(launch >= 0)
    if not len(dev):
        return out
    op_cats = np.array([int(Cat.CPU_OP), int(Cat.USER_ANNOTATION)], dtype=np.uint8)
    parent = trace.parent
    is_op = np.isin(trace.cat, op_cats)
    current = parent[launch[dev]]
    result = np.full(len(dev), -1, dtype=np.int64)
    pending = np.ones(len(dev), dtype=bool)
    for _ in range(256):  # walk up until an op is found; depth is small in practice
        valid = pending & (current >= 0)
        if not valid.any():
            break
        found = valid.copy()
        found[valid] = is_op[current[valid]]
        result[found] = current[found]
        pending &= ~found
        step = pending & (current >= 0)
        current[step] = parent[current[step]]
        pending &= current >= 0
    out[dev] = result
    return out


def ancestors(trace: Trace, index: int) -> list[int]:
    """Chain from the root down to `index` (inclusive)."""
    chain = []
    parent = trace.parent
    while index >= 0:
        chain.append(int(index))
        index = int(parent[index])
    return chain[::-1]
