"""Dispatcher-level facts: which aten branch ran, what each op launched, what cost no device time.

The dispatch rules ask questions of the host call tree ("what did this
aten::matmul call?", "which kernels did this addmm launch?", "which view ops ran
without launching anything?"). The answers are computed here, vectorized over
the whole trace, so the rules only judge.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..trace import Cat, Trace
from ..trace.tree import EVENT_BLOCK

#: aten ops that only rewrite tensor metadata (sizes/strides/offset): CPU cost, no device work.
METADATA_OPS = frozenset(
    {
        "aten::t",
        "aten::transpose",
        "aten::view",
        "aten::reshape",
        "aten::as_strided",
        "aten::_unsafe_view",
        "aten::expand",
        "aten::permute",
        "aten::squeeze",
        "aten::unsqueeze",
        "aten::slice",
        "aten::select",
        "aten::detach",
        "aten::alias",
        "aten::_reshape_alias",
        "aten::view_as",
        "aten::expand_as",
        "aten::narrow",
        "aten::numpy_T",
        "aten::unflatten",
        "aten::flatten",
        "aten::split",
        "aten::chunk",
        "aten::unbind",
        "aten::lift_fresh",
    }
)
GEMM_OPS = frozenset(
    {"aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm", "aten::mv", "aten::dot"}
)
ADD_OPS = frozenset({"aten::add", "aten::add_"})


def nearest_ancestor(trace: Trace, events: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """For each event, its closest ancestor (or itself) where `targets` is True, else -1
    (in the link type of `trace.parent`; -1 too for an event given as -1).

    Walked in blocks of events, each keeping only the walks still going: whole-array
    masks and copies per step of the walk were a peak of `explain`'s memory (five
    int64 or bool arrays per event on a 5 GB trace's 13.5 M real ops)."""
    parent = trace.parent
    out = np.full(len(events), -1, dtype=parent.dtype)
    for lo in range(0, len(events), EVENT_BLOCK):
        current = np.asarray(events[lo : lo + EVENT_BLOCK]).astype(parent.dtype)
        position = np.arange(lo, lo + len(current))
        for _ in range(_MAX_DEPTH):
            going = current >= 0
            position, current = position[going], current[going]
            if not len(current):
                break
            hit = targets[current]
            out[position[hit]] = current[hit]
            position, current = position[~hit], parent[current[~hit]]
    return out


#: The longest walk of `nearest_ancestor` (deeper nesting than a real call stack has).
_MAX_DEPTH = 512


class Children:
    """Direct children of host events, in time order (one sort over the whole trace)."""

    def __init__(self, trace: Trace) -> None:
        parent = trace.parent
        has = np.flatnonzero(parent >= 0).astype(parent.dtype)  # the link type: int32 mostly
        order = has[np.lexsort((trace.ts[has], parent[has]))]
        self._keys = parent[order]
        self._order = order

    def of(self, index: int) -> np.ndarray:
        # the needle in the keys' own type: searchsorted of a Python int (or an int64) in
        # int32 keys copies them on every call, 12.5 s for 78 k lookups at 3.8 M events
        needle = self._keys.dtype.type(index)
        lo = np.searchsorted(self._keys, needle, side="left")
        hi = np.searchsorted(self._keys, needle, side="right")
        return self._order[lo:hi]


def instances(trace: Trace, names) -> np.ndarray:
    """Host events (not instants) whose name is in `names`, in time order."""
    ids = [trace.name_index[n] for n in names if n in trace.name_index]
    if not ids:
        return np.zeros(0, dtype=np.int64)
    idx = np.flatnonzero(np.isin(trace.name_id, ids) & (trace.lane_kind == 1) & ~trace.is_instant)
    return idx[np.argsort(trace.ts[idx], kind="stable")]


@dataclass(frozen=True)
class OpWork:
    """What each host op launched: runtime launch calls and device time of its subtree."""

    launches: np.ndarray  # per event index: launch calls under it (0 elsewhere)
    device_us: np.ndarray  # per event index: device time of work launched under it
    device_events: dict[int, list[int]]  # op index -> device events launched under it


def op_work(trace: Trace, ops: np.ndarray) -> OpWork:
    """Launch calls and device work attributed to the innermost of `ops` above them."""
    targets = np.zeros(len(trace), dtype=bool)
    targets[ops] = True
    launches = np.zeros(len(trace), dtype=np.int32)  # per event: counts, half an int64's bytes
    device_us = np.zeros(len(trace), dtype=np.float64)
    device_events: dict[int, list[int]] = {}
    runtime = np.flatnonzero(trace.mask(Cat.RUNTIME, Cat.DRIVER) & (trace.lane_kind == 1))
    owner = nearest_ancestor(trace, runtime, targets)
    is_launch = np.isin(trace.name_id[runtime], trace.launch_name_ids)
    ok = (owner >= 0) & is_launch
    np.add.at(launches, owner[ok], 1)
    dev = np.flatnonzero(trace.device_work & (trace.launch_of >= 0))
    dev_owner = nearest_ancestor(trace, trace.launch_of[dev], targets)
    ok = dev_owner >= 0
    np.add.at(device_us, dev_owner[ok], trace.dur[dev[ok]])
    for d, o in zip(dev[ok].tolist(), dev_owner[ok].tolist(), strict=True):
        device_events.setdefault(o, []).append(d)
    return OpWork(launches, device_us, device_events)


def metadata_only(trace: Trace) -> np.ndarray:
    """Outermost metadata-op calls that launched nothing and called no real op.

    `aten::reshape` copies when strides do not allow a view: such calls (with an
    `aten::clone`/`aten::copy_` or a launch below) are not metadata-only.
    """
    meta = instances(trace, METADATA_OPS)
    if not len(meta):
        return meta
    is_meta = np.zeros(len(trace), dtype=bool)
    is_meta[meta] = True
    # events that do real work: non-metadata ops and runtime calls
    real = np.flatnonzero(
        (trace.mask(Cat.CPU_OP, Cat.RUNTIME, Cat.DRIVER) & (trace.lane_kind == 1)) & ~is_meta
    )
    impure = np.zeros(len(trace), dtype=bool)
    owner = nearest_ancestor(trace, trace.parent[real], is_meta)
    # walk each real event's metadata ancestors: all of them did real work
    current = owner[owner >= 0]
    for _ in range(64):
        if not len(current):
            break
        impure[current] = True
        up = trace.parent[current]
        up = up[up >= 0]
        current = nearest_ancestor(trace, up, is_meta)
        current = current[current >= 0]
    pure = meta[~impure[meta]]
    # keep the outermost: a pure op whose metadata ancestor is also pure is counted there
    parents = trace.parent[pure]
    outer_owner = nearest_ancestor(trace, parents[parents >= 0], is_meta & ~impure)
    nested = np.zeros(len(pure), dtype=bool)
    nested[np.flatnonzero(parents >= 0)] = outer_owner >= 0
    return pure[~nested]
