"""For every event, its nearest or outermost host ancestor of a kind, in numpy.

Attributing kernels to the op that launched them (the attention call, the
matrix product) walks each launch call up the host tree. One Python walk per
kernel costs seconds on a 200k-event trace. Walking all events up one level at
a time as arrays costs a pass over every event still below the top per nesting
level: events x depth, and a with_stack trace nests Python frames 50-100 deep.
Instead the events are grouped once per trace by their depth in the tree
(`_levels`), and each query fills one level from the level above it, every
event touched once: events + depth.
"""

from __future__ import annotations

import numpy as np

from ..trace import Trace


def ancestor_of_kind(trace: Trace, is_kind: np.ndarray, outermost: bool) -> np.ndarray:
    """Index of each event's innermost (or outermost) ancestor-or-self with `is_kind`, else
    -1, in the link type of `trace.parent` (an int64 answer and its int64 `arange` were
    the peak of `explain`'s memory at 18.6 M events)."""
    parent = trace.parent
    found = np.full(len(trace), -1, dtype=parent.dtype)
    own = np.flatnonzero(is_kind)
    found[own] = own
    del own
    order, bounds = trace.memo(_levels)
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        nodes = order[lo:hi]  # one depth below the last: their parents are filled in
        above = found[parent[nodes]]
        if outermost:  # the parent's outermost wins over the node itself
            found[nodes] = np.where(above >= 0, above, found[nodes])
        else:  # the node itself wins over its parent's innermost
            own = found[nodes]
            found[nodes] = np.where(own >= 0, own, above)
    return found


def _levels(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """Events with a parent, ordered by depth (1, 2, ...), and where each depth starts and ends
    in that order. Depth is found by walking all events up one level at a time, once."""
    parent = trace.parent
    depth = np.zeros(len(trace), dtype=np.int32)
    cur = parent.copy()
    live = np.flatnonzero(cur >= 0)
    while len(live):
        depth[live] += 1
        cur[live] = parent[cur[live]]
        live = live[cur[live] >= 0]
    nested = np.flatnonzero(depth > 0)
    order = nested[np.argsort(depth[nested], kind="stable")]
    if len(trace) < 2**31:
        order = order.astype(np.int32)
    counts = np.bincount(depth[nested])[1:] if len(nested) else np.zeros(0, dtype=np.int64)
    bounds = np.concatenate(([0], np.cumsum(counts)))
    order.setflags(write=False)
    return order, bounds
