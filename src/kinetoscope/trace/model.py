"""The `Trace`: a Kineto trace as typed columns, like Perfetto's trace processor.

Every event (complete `X` and instant `i`) is one row in parallel numpy arrays;
names are interned. Links that every analysis needs (launch -> kernel by
correlation id, host call tree, steps) are computed once here, the expensive
ones lazily, so a `summary` never pays for a call tree it does not read.
Times are microseconds (float64), as in the file.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar

import numpy as np

from .categories import (
    DEVICE_WORK_CATS,
    HOST_TREE_CATS,
    LAUNCH_NAMES,
    PROFILER_INTERNAL_NAMES,
    Cat,
)
from .steps import Step, find_steps
from .tree import build_parents, launching_ops, link_dtype, self_times

T = TypeVar("T")
_MISSING = object()  # `Trace.memo`'s marker for "not computed yet" (None is a result)


@dataclass(frozen=True)
class Lane:
    """A row in the timeline: a host thread, or a device stream."""

    id: int
    pid: int | str
    tid: int | str
    kind: str  # "host", "device" or "other"
    label: str
    device: int | None = None
    stream: int | None = None


@dataclass(frozen=True)
class Device:
    id: int
    name: str
    vendor: str | None
    sm_count: int | None
    memory_bytes: int | None
    compute_capability: str | None


@dataclass
class TraceMeta:
    """What the file says about the run, outside the events."""

    schema_version: Any = None
    base_time_ns: int | None = None
    display_time_unit: str | None = None
    trace_name: str | None = None
    distributed: dict | None = None
    versions: dict[str, Any] = field(default_factory=dict)
    kinetoscope: dict | None = None
    #: the profiler's own log lines by level ("INFO", "WARNING", "ERROR"), where written
    profiler_log: dict[str, list[str]] = field(default_factory=dict)

    @property
    def rank(self) -> int | None:
        rank = (self.distributed or {}).get("rank")
        return rank if isinstance(rank, int) else None


@dataclass
class KernelArgs:
    """Launch configuration of device events that carry one (sparse)."""

    index: np.ndarray  # event index
    grid: np.ndarray  # (n, 3) int64, -1 where absent
    block: np.ndarray  # (n, 3)
    registers: np.ndarray
    shared_memory: np.ndarray
    #: CUPTI's "est. achieved occupancy %" (NaN where absent)
    occupancy: np.ndarray
    #: Kineto's "blocks per SM" (grid blocks / SM count) and "warps per SM" (NaN where absent
    #: or written "inf")
    blocks_per_sm: np.ndarray
    warps_per_sm: np.ndarray


@dataclass
class MemoryEvents:
    """`[memory]` instants: allocator activity recorded with profile_memory=True."""

    index: np.ndarray
    ts: np.ndarray
    nbytes: np.ndarray
    total_allocated: np.ndarray
    total_reserved: np.ndarray
    device_type: np.ndarray
    device_id: np.ndarray
    addr: np.ndarray

    def __len__(self) -> int:
        return len(self.index)


@dataclass(eq=False)  # identity hashing: a Trace is one object, never equal to a copy
class Trace:
    path: str
    meta: TraceMeta
    names: list[str]
    ts: np.ndarray
    dur: np.ndarray
    name_id: np.ndarray
    cat: np.ndarray
    lane: np.ndarray
    is_instant: np.ndarray
    external_id: np.ndarray
    correlation: np.ndarray
    lanes: list[Lane]
    devices: list[Device]
    kernel_args: KernelArgs
    memory: MemoryEvents
    #: sparse arguments by event index (`sparse.py`: read-only mappings)
    input_dims: Mapping[int, str]
    input_types: Mapping[int, str]
    flops: Mapping[int, float]
    warnings: list[str] = field(default_factory=list)
    #: `bytes` of device copies and memsets, by event index (sparse)
    copy_bytes: Mapping[int, int] = field(default_factory=dict)
    #: `Concrete Inputs` (scalar arguments as text, JSON list) of ops, by event index (sparse)
    concrete_inputs: Mapping[int, str] = field(default_factory=dict)
    #: what record_param_comms recorded of a collective, a JSON object by event index
    #: ("Collective name", "In msg nelems", "Out msg nelems", "Group size", "dtype",
    #: "Process Group Name"; torch >= 2.2), sparse
    collective_args: Mapping[int, str] = field(default_factory=dict)
    #: autograd's `Sequence number` of ops, by event index (sparse): a backward node
    #: carries the number of the forward op that recorded it
    sequence: Mapping[int, int] = field(default_factory=dict)
    #: `Fwd thread id` of the same events (same index): the profiler's own id (from 1) of
    #: the forward's thread on backward nodes, 0 on forward ops, -1 where absent
    fwd_thread: Mapping[int, int] = field(default_factory=dict)
    #: why the columns live in temporary files rather than memory (`--max-memory`),
    #: None when they are in memory
    out_of_core: str | None = None
    #: the bytes `--max-memory` gave the load (None: `auto`): a budget the user counts,
    #: so no work is handed to a second process (`rules/two_cores.py`)
    memory_budget: int | None = None
    #: results of `memo`, by (function, arguments); see `memo`
    _memo: dict[Any, Any] = field(default_factory=dict, init=False, repr=False)

    # ---- the one cache -------------------------------------------------
    def memo(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(self, *args)`, computed once for this Trace and kept on it.

        Every analysis that more than one rule, renderer or command reads (stats, idle
        gaps, steps, syncs, decoded kernel names, ...) is asked for through here, so
        there is one cache and it belongs to the Trace: its results live and die with
        the Trace. Module-level caches keyed on a Trace kept the last eight Traces (their
        columns and every analysis of them) alive for the whole process,
        and caches keyed on names mixed the names of every trace a process ever read.
        `fn` must be a pure function of the trace and `args` (hashable); it may ask
        for other memoized results (the cache is a plain dict, nothing is locked).
        The Trace's own derived columns (`kernels`, `parent`, `steps`, ...) stay
        `cached_property`s: attributes of the model, kept on the instance the same way.
        """
        key = (fn, *args) if args else fn
        value = self._memo.get(key, _MISSING)
        if value is _MISSING:  # not in an `except KeyError`: fn's own errors stay unchained
            value = self._memo[key] = fn(self, *args)
        return value

    def __getstate__(self) -> dict[str, Any]:
        """The columns without `memo`'s results: a pickled or copied Trace starts with an
        empty memo. Its keys are functions (a lambda or a local function does not
        pickle) and its values can be larger than the columns; a copy whose columns are
        then changed must not read results computed from the original's."""
        state = dict(self.__dict__)
        state["_memo"] = {}
        return state

    # ---- basic views -------------------------------------------------
    def __len__(self) -> int:
        return len(self.ts)

    @cached_property
    def end(self) -> np.ndarray:
        return self.ts + self.dur

    @cached_property
    def start_time(self) -> float:
        """Trace start, the origin Perfetto shows timestamps from."""
        return float(self.ts.min()) if len(self.ts) else 0.0

    @cached_property
    def end_time(self) -> float:
        return float(self.end.max()) if len(self.ts) else 0.0

    def rel(self, ts: float) -> float:
        """`ts` relative to the trace start (what Perfetto displays)."""
        return float(ts) - self.start_time

    def name(self, index: int) -> str:
        return self.names[int(self.name_id[index])]

    @cached_property
    def name_index(self) -> dict[str, int]:
        return {name: i for i, name in enumerate(self.names)}

    def name_ids_matching(self, predicate) -> np.ndarray:
        """Interned ids of the names for which `predicate(name)` holds."""
        return np.array([i for i, n in enumerate(self.names) if predicate(n)], dtype=np.int32)

    def mask(self, *cats: Cat) -> np.ndarray:
        """Events in any of `cats`: a lookup by category code, one byte per event
        (`np.isin` made an intp temporary per event, 142 MiB at 18.6 M events, and
        took 6x the time)."""
        table = np.zeros(256, dtype=bool)
        table[[int(c) for c in cats]] = True
        return table[self.cat]

    @cached_property
    def lane_kind(self) -> np.ndarray:
        """Per-event lane kind code: 0 other, 1 host, 2 device (int8: one byte an event,
        it is cached for the trace's lifetime)."""
        codes = np.array(
            [{"host": 1, "device": 2}.get(ln.kind, 0) for ln in self.lanes] or [0], np.int8
        )
        return codes[self.lane]

    @cached_property
    def device_work(self) -> np.ndarray:
        """Mask of kernels, memcpys and memsets: what keeps a device busy."""
        return self.mask(*DEVICE_WORK_CATS) & (self.lane_kind == 2)

    @cached_property
    def kernels(self) -> np.ndarray:
        """Indices of kernel events in time order."""
        idx = np.flatnonzero(self.mask(Cat.KERNEL))
        return idx[np.argsort(self.ts[idx], kind="stable")]

    @cached_property
    def launch_name_ids(self) -> np.ndarray:
        return self.name_ids_matching(lambda n: n in LAUNCH_NAMES)

    @cached_property
    def launches(self) -> np.ndarray:
        """Indices of host calls that put a kernel on a stream, in time order."""
        idx = np.flatnonzero(
            self.mask(Cat.RUNTIME, Cat.DRIVER) & np.isin(self.name_id, self.launch_name_ids)
        )
        return idx[np.argsort(self.ts[idx], kind="stable")]

    @property
    def host_lanes(self) -> list[Lane]:
        return [ln for ln in self.lanes if ln.kind == "host"]

    @property
    def device_lanes(self) -> list[Lane]:
        return [ln for ln in self.lanes if ln.kind == "device"]

    @property
    def has_device(self) -> bool:
        return bool(self.device_work.any())

    # ---- links -------------------------------------------------------
    @cached_property
    def launch_of(self) -> np.ndarray:
        """For each device event, the index of the host call that enqueued it (else -1).

        Linked by correlation id (flow events were folded into `correlation`
        at load time for traces whose device events lack the argument).
        """
        out = np.full(len(self), -1, dtype=link_dtype(len(self)))
        host = np.flatnonzero(self.mask(Cat.RUNTIME, Cat.DRIVER) & (self.correlation >= 0))
        dev = np.flatnonzero((self.lane_kind == 2) & (self.correlation >= 0))
        if not len(host) or not len(dev):
            return out
        order = np.argsort(self.correlation[host], kind="stable")
        host_sorted = host[order]
        keys = self.correlation[host_sorted]
        pos = np.searchsorted(keys, self.correlation[dev])
        pos = np.clip(pos, 0, len(keys) - 1)
        hit = keys[pos] == self.correlation[dev]
        out[dev[hit]] = host_sorted[pos[hit]]
        return out

    @cached_property
    def parent(self) -> np.ndarray:
        """Host call tree: index of the enclosing host event on the same thread, else -1."""
        return build_parents(self)

    @cached_property
    def self_time(self) -> np.ndarray:
        """Duration minus the durations of direct children (the profiler's Self CPU)."""
        return self_times(self)

    @cached_property
    def op_of(self) -> np.ndarray:
        """For each device event, the innermost op/annotation that launched it (else -1)."""
        return launching_ops(self)

    @cached_property
    def steps(self) -> list[Step]:
        return find_steps(self)

    def events_in(self, start: float, end: float, mask: np.ndarray | None = None) -> np.ndarray:
        """Indices (ascending) of events that start inside [start, end).

        Binary search in the events ordered by start: callers ask once per step or
        per range, and a full scan per call made them O(ranges x events)."""
        if not start < end:  # empty, reversed or NaN bounds hold nothing
            return np.zeros(0, dtype=np.int64)
        order = self._ts_order
        first, stop = self._first_at_or_after(start), self._first_at_or_after(end)
        inside = np.sort(order[first:stop]).astype(np.int64)
        return inside if mask is None else inside[mask[inside]]

    def by_start(self, mask: np.ndarray) -> np.ndarray:
        """Indices of the events in `mask`, in start-time order (ties by index, as a
        stable sort of their starts gives): interval unions over them need no sort."""
        order = self._ts_order
        return order[mask[order]]

    @cached_property
    def _ts_order(self) -> np.ndarray:
        """Event indices by start time, NaN starts last (never inside a range); int32
        where the indices fit, half the memory of a 5 GB trace's 18.6 M events."""
        order = np.argsort(self.ts, kind="stable")
        return order.astype(np.int32) if len(order) < 2**31 else order

    @cached_property
    def _ts_coarse(self) -> np.ndarray:
        """Every `_COARSE`-th start time in time order: a small index over `_ts_order`.
        `np.searchsorted(ts, x, sorter=order)` converts an int32 sorter to intp on every
        call, a copy of the whole order: 19 ms a call at 18.6 M events, 39 s of a 5 GB
        trace's explain (2,045 optimizer steps, one call each)."""
        return self.ts[self._ts_order[:: self._COARSE]]

    _COARSE = 64

    def _first_at_or_after(self, t: float) -> int:
        """Position in `_ts_order` of the first event starting at or after `t` (what
        `searchsorted(ts, t, side="left", sorter=order)` gives): the coarse index finds
        the block, one search inside its 65 starts finds the position."""
        k = int(np.searchsorted(self._ts_coarse, t, side="left"))
        lo = max(k - 1, 0) * self._COARSE
        block = self.ts[self._ts_order[lo : lo + self._COARSE + 1]]
        return lo + int(np.searchsorted(block, t, side="left"))

    @cached_property
    def host_tree_mask(self) -> np.ndarray:
        internal = self.name_ids_matching(lambda n: n in PROFILER_INTERNAL_NAMES)
        return (
            self.mask(*HOST_TREE_CATS)
            & ~self.is_instant
            & (self.lane_kind == 1)
            & ~np.isin(self.name_id, internal)
        )
