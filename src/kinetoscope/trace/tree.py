"""The host call tree, rebuilt from nesting per thread.

Kineto writes no parent pointers for ops; nesting in time on one thread is the
tree. The rule is the profiler's own (`_populate_cpu_children`): sort by
(start, longest first), and an event is a child of the innermost open event
that it lies entirely inside; an open event it starts after, or overhangs, is
closed. Matching it is what lets `table` agree with `key_averages()`.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from .categories import Cat


class TreeColumns(Protocol):
    """The columns of a `Trace` the call tree reads. The Trace computes its tree by
    calling these functions on itself (`Trace.parent`, `.self_time`, `.op_of`), so this
    module names only what it needs instead of importing the Trace back."""

    ts: np.ndarray
    dur: np.ndarray
    lane: np.ndarray
    cat: np.ndarray
    host_tree_mask: np.ndarray
    launch_of: np.ndarray
    parent: np.ndarray

    def __len__(self) -> int: ...


_EPS = 1e-3  # us; absorbs ns rounding where a child ends "after" its parent
#: Events handled at once where one whole-array expression would allocate temporaries
#: the size of the trace (the call tree's nesting test, `minus_children`, `in_window`,
#: `merge_indexed`, `nearest_ancestor`): 2 MiB per float64 or int64 temporary.
EVENT_BLOCK = 1 << 18


def link_dtype(events: int) -> type:
    """The integer type of a per-event link column (parent, launching op, launch call):
    int32 while event indices fit, half the memory of int64 for columns kept on the
    Trace (3 x 74 MB on a 5 GB trace's 18.6 M events); -1 means none in either."""
    return np.int32 if events < 2**31 else np.int64


def build_parents(trace: TreeColumns) -> np.ndarray:
    """Parent of each host event: the profiler's open-event stack, computed in numpy.

    The stack after an event is that event's chain of parents, so an event's
    parent is the first event up the chain of the event sorted before it that
    encloses it (the stack pops exactly the ones that do not). Every event
    starts pointing at its predecessor; those whose target does not enclose them
    move to the target's current parent pointer, round after round. A pointer
    never passes the true parent (whoever does not enclose an event has that
    event's parent among its own ancestors), and an enclosing target is the true
    parent, so each pointer stops there; rounds are bounded by the nesting depth.
    """
    links = link_dtype(len(trace))
    parent = np.full(len(trace), -1, dtype=links)
    # indices and positions in the link type: this build is a peak of `explain`'s memory
    order = _nesting_order(trace, links)
    if not len(order):
        return parent
    start = trace.ts[order]
    end = start + trace.dur[order]
    lane = trace.lane[order]
    pointer = np.arange(-1, len(order) - 1, dtype=links)  # positions in `order`
    pointer[1:][lane[1:] != lane[:-1]] = -1  # the first event of a thread
    active = np.flatnonzero(pointer >= 0).astype(links)
    while len(active):
        moving = active[_leaves_target(start, end, pointer, active)]
        pointer[moving] = pointer[pointer[moving]]
        active = moving[pointer[moving] >= 0]
    found = pointer >= 0
    parent[order[found]] = order[pointer[found]]
    return parent


def _leaves_target(start, end, pointer, active) -> np.ndarray:
    """Mask over `active`: which events do not nest in the event their pointer names
    (the stack's test for leaving an open event; NaN never leaves, as there). Tested
    in blocks: the gathered starts and ends of every event at once were the peak of
    the build (four float64 temporaries per host event in the first round)."""
    leaves = np.empty(len(active), dtype=bool)
    for lo in range(0, len(active), EVENT_BLOCK):
        block = active[lo : lo + EVENT_BLOCK]
        target_end = end[pointer[block]]
        out = leaves[lo : lo + EVENT_BLOCK]
        np.greater_equal(start[block], target_end, out=out)
        out |= end[block] > target_end + _EPS
    return leaves


def _nesting_order(trace: TreeColumns, links: type) -> np.ndarray:
    """Host-tree events ordered by (thread, start, longest first, index): a stable sort
    by start is fast on the nearly sorted timestamps of a trace; only ties need the
    rest. Indices in `links`, columns gathered one at a time and ties sorted by their
    own (thread, start) instead of a per-event group number: the peak of this build
    was its int64 temporaries."""
    order = np.flatnonzero(trace.host_tree_mask).astype(links)
    order = order[np.argsort(trace.ts[order], kind="stable")]
    order = order[np.argsort(trace.lane[order], kind="stable")]
    same_lane, same_start = trace.lane[order], trace.ts[order]
    tie = (same_lane[1:] == same_lane[:-1]) & (same_start[1:] == same_start[:-1])
    if tie.any():
        tied = np.zeros(len(order), dtype=bool)
        tied[1:] |= tie
        tied[:-1] |= tie
        at = np.flatnonzero(tied)
        members = order[at]
        # (thread, start) are ascending along `order`, so sorting by them keeps the
        # groups where they are and orders each one inside
        keys = (members, -trace.dur[members], same_start[at], same_lane[at])
        order[at] = members[np.lexsort(keys)]
    return order


def children_of(parent: np.ndarray, is_parent: np.ndarray) -> np.ndarray:
    """Events (ascending) whose parent is marked in `is_parent`: the events with a parent
    narrowed by one lookup, without an index array of every child first."""
    under = parent >= 0
    under[under] = is_parent[parent[under]]
    return np.flatnonzero(under)


def self_times(trace: TreeColumns) -> np.ndarray:
    """Duration minus the durations of direct children: the profiler's Self CPU.

    Not clipped at zero, as in the profiler: overlapping Python frames recorded
    with `with_stack=True` can make it slightly negative.
    """
    return minus_children(trace.dur, trace.parent, np.flatnonzero(trace.parent >= 0))


def minus_children(dur: np.ndarray, parent: np.ndarray, children: np.ndarray) -> np.ndarray:
    """`dur` of every event less the durations of the given `children` under their
    `parent`: self time for any version of the tree (the table collapses some nodes)."""
    out = dur.astype(np.float64, copy=True)
    # in blocks, in order (the same sums): the gathered parents and durations of every
    # child at once were two more per-event temporaries at the table's peak
    for lo in range(0, len(children), EVENT_BLOCK):
        block = children[lo : lo + EVENT_BLOCK]
        np.subtract.at(out, parent[block], dur[block])
    return out


def launching_ops(trace: TreeColumns) -> np.ndarray:
    """For device events: innermost op or annotation enclosing the launch call."""
    out = np.full(len(trace), -1, dtype=link_dtype(len(trace)))
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


def ancestors(trace: TreeColumns, index: int) -> list[int]:
    """Chain from the root down to `index` (inclusive)."""
    chain = []
    parent = trace.parent
    while index >= 0:
        chain.append(int(index))
        index = int(parent[index])
    return chain[::-1]
