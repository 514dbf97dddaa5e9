"""For every event, its nearest or outermost host ancestor of a kind, in numpy.

Attributing kernels to the op that launched them (the attention call, the
matrix product) walks each launch call up the host tree. One Python walk per
kernel costs seconds on a 200k-event trace; walking all events up one level
at a time as arrays costs one numpy pass per nesting level.
"""

from __future__ import annotations

import numpy as np

from ..trace import Trace


def ancestor_of_kind(trace: Trace, is_kind: np.ndarray, outermost: bool) -> np.ndarray:
    """Index of each event's innermost (or outermost) ancestor-or-self with `is_kind`, else -1."""
    parent = trace.parent
    found = np.where(is_kind, np.arange(len(trace)), -1)
    cur = parent.copy()
    while True:
        live = np.flatnonzero(cur >= 0)
        if not len(live):
            return found
        hit = live[is_kind[cur[live]]]
        if outermost:
            found[hit] = cur[hit]
        else:
            hit = hit[found[hit] < 0]
            found[hit] = cur[hit]
        cur[live] = parent[cur[live]]
