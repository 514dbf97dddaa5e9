"""What the builder derives from its columns: flow links from launches to
kernels, the first value per lane, launch triples and memory events as columns.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .categories import DEVICE_CATS, HOST_TREE_CATS, Cat
from .model import Lane
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


#: |ts| bound for linking by nanosecond keys: 2**62 ns (the year 2116 in epoch
#: microseconds), so every time cast to int64 nanoseconds is defined
_LINKABLE_US = 2.0**62 / 1000


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
    # a time whose nanoseconds do not fit int64 is no time a profiler wrote
    # (1e308 in a damaged file): such events are not linked, rather than cast to junk
    candidates = np.flatnonzero((corr < 0) & linkable & (np.abs(ts) < _LINKABLE_US))
    timed = np.abs(flow_ts) < _LINKABLE_US  # False for NaN too
    if not len(candidates) or not timed.any():
        return
    flow_id, flow_lane, flow_ts = flow_id[timed], flow_lane[timed], flow_ts[timed]
    cand_ns = np.rint(ts[candidates] * 1000).astype(np.int64)
    flow_ns = np.rint(flow_ts * 1000).astype(np.int64)
    origin = int(min(cand_ns.min(), flow_ns.min()))
    span = int(max(cand_ns.max(), flow_ns.max())) - origin + 1  # Python ints: no overflow
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


#: `MemoryEvents` fields, in order; the builder keeps one column of each
MEMORY_FIELDS = (
    "index",
    "ts",
    "nbytes",
    "total_allocated",
    "total_reserved",
    "device_type",
    "device_id",
    "addr",
)


def memory_columns(rows: list[tuple]) -> list[np.ndarray]:
    """One batch's `[memory]` rows (index, ts, then the allocator's numbers) as
    columns in `MEMORY_FIELDS` order: ts float64, the rest int64 (-1 where absent)."""
    cols = list(zip(*rows, strict=True))
    ints = [np.array([as_int(v) for v in col], dtype=np.int64) for col in cols]
    ints[1] = np.array(cols[1], dtype=np.float64)
    return ints


def classify_lanes(keys, thread_names, timed, device) -> list[Lane]:
    """Classify each (pid, tid) as host thread or device stream by what runs on it.

    `keys`: (pid, tid) -> lane id; `timed`: (lane, cat) of every event;
    `device`: (lane, stream, device) of the device events."""
    lane, cat = timed
    device_lane, stream, device_ids = device
    n_lanes = len(keys)
    device_cats = np.array([int(c) for c in DEVICE_CATS], dtype=np.uint8)
    host_cats = np.array([int(c) for c in HOST_TREE_CATS], dtype=np.uint8)
    dev_count = np.bincount(lane[np.isin(cat, device_cats)], minlength=n_lanes)
    host_count = np.bincount(lane[np.isin(cat, host_cats)], minlength=n_lanes)
    first_stream = first_per_lane(device_lane, stream, n_lanes)
    first_device = first_per_lane(device_lane, device_ids, n_lanes)
    out = []
    for (pid, tid), lane_id in keys.items():
        if dev_count[lane_id] > 0:
            stream_id = int(first_stream[lane_id])
            stream_id = stream_id if stream_id >= 0 else stream_from_tid(tid)
            device_id = int(first_device[lane_id])
            device_id = device_id if device_id >= 0 else as_int(pid, None)
            label = f"stream {stream_id}" if stream_id is not None else str(tid)
            out.append(Lane(lane_id, pid, tid, "device", label, device_id, stream_id))
        elif host_count[lane_id] > 0:
            label = thread_names.get((pid, tid)) or f"thread {tid}"
            out.append(Lane(lane_id, pid, tid, "host", label))
        else:
            out.append(Lane(lane_id, pid, tid, "other", f"{pid}/{tid}"))
    return out
