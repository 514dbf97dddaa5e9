"""What the builder derives once every batch is in: flow links from launches to
kernels, the first value per lane, sparse kernel arguments and memory events as
columns.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .categories import DEVICE_CATS, Cat
from .model import KernelArgs, MemoryEvents
from .schema import as_int


def first_per_lane(lane: np.ndarray, values: np.ndarray, n_lanes: int) -> np.ndarray:
    """Per lane, the first non-negative value of an id column (-1 where none)."""
    out = np.full(n_lanes, -1, dtype=np.int64)
    sel = np.flatnonzero(values >= 0)
    found, first = np.unique(lane[sel], return_index=True)
    out[found] = values[sel[first]]
    return out


def stream_from_tid(tid: Any) -> int | None:
    if isinstance(tid, int):
        return tid
    digits = "".join(ch for ch in str(tid) if ch.isdigit())
    return int(digits) if digits else None


def link_flows(flows: tuple[np.ndarray, ...], ts, lane, cat, corr) -> None:
    """Give launch calls and device events without a `correlation` arg their flow id.

    A flow start `s` sits at the launch call's start on the host lane, the
    finish `f` at the device event's start on its stream; binding is by lane
    and timestamp (rounded to the nanosecond): a sorted join on one int64 key.
    """
    flow_id, flow_lane, flow_ts = flows
    linkable = np.isin(
        cat, np.array([int(c) for c in (Cat.RUNTIME, Cat.DRIVER, *DEVICE_CATS)], dtype=np.uint8)
    )
    candidates = np.flatnonzero((corr < 0) & linkable)
    timed = ~np.isnan(flow_ts)
    if not len(candidates) or not timed.any():
        return
    flow_id, flow_lane, flow_ts = flow_id[timed], flow_lane[timed], flow_ts[timed]
    cand_ns = np.rint(ts[candidates] * 1000).astype(np.int64)
    flow_ns = np.rint(flow_ts * 1000).astype(np.int64)
    origin = min(cand_ns.min(), flow_ns.min())
    span = int(max(cand_ns.max(), flow_ns.max()) - origin) + 1
    lanes = max(int(lane.max()), int(flow_lane.max())) + 1
    if span * lanes >= 2**62:  # cannot pack (lane, time) into one key
        return
    cand_key = lane[candidates].astype(np.int64) * span + (cand_ns - origin)
    flow_key = flow_lane.astype(np.int64) * span + (flow_ns - origin)
    order = np.argsort(cand_key, kind="stable")
    sorted_key = cand_key[order]
    # the last candidate with an equal key wins, as a dict built in order would
    pos = np.searchsorted(sorted_key, flow_key, side="right") - 1
    hit = pos >= 0
    hit[hit] = sorted_key[pos[hit]] == flow_key[hit]
    corr[candidates[order[pos[hit]]]] = flow_id[hit]


def join_parts(parts: list[np.ndarray]) -> np.ndarray | None:
    return np.concatenate(parts) if parts else None


def kernel_args_of(parts: list[tuple[np.ndarray, ...]]) -> KernelArgs:
    if not parts:
        empty, triples = np.zeros(0, np.int64), np.zeros((0, 3), np.int64)
        return KernelArgs(empty, triples, triples.copy(), empty.copy(), empty.copy(), np.zeros(0))
    index, grid, block, registers, shared, occupancy = (
        np.concatenate(c) for c in zip(*parts, strict=True)
    )
    return KernelArgs(
        index=index,
        grid=grid,
        block=block,
        registers=registers,
        shared_memory=shared,
        occupancy=occupancy,
    )


def triples_of(values: list[Any]) -> np.ndarray:
    """(n, 3) int64 from [x, y, z] lists; -1 rows where absent or malformed."""
    try:
        out = np.array(values, dtype=np.int64)
        if out.shape == (len(values), 3):
            return out
    except (TypeError, ValueError, OverflowError):
        pass
    return np.array(
        [
            [as_int(x) for x in v] if isinstance(v, list) and len(v) == 3 else [-1, -1, -1]
            for v in values
        ],
        dtype=np.int64,
    ).reshape(len(values), 3)


def memory_events_of(rows: list[tuple]) -> MemoryEvents:
    cols = list(zip(*rows, strict=True)) if rows else [[]] * 8
    ints = [np.array([as_int(v) for v in col], dtype=np.int64) for col in cols]
    return MemoryEvents(
        index=ints[0],
        ts=np.array(cols[1], dtype=np.float64),
        nbytes=ints[2],
        total_allocated=ints[3],
        total_reserved=ints[4],
        device_type=ints[5],
        device_id=ints[6],
        addr=ints[7],
    )
