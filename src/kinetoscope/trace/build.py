"""`TraceBuilder`: decoded event batches in, one `Trace` of numpy columns out.

The loader feeds it batches as they are decoded (`add`), so the whole event list
never exists as Python objects; the column parts go to a sink (`spill.py`), in
memory or, for the out-of-core path, in files. The split loader runs one
builder per half and merges the second into the first (`state`, `absorb`).
"""

from __future__ import annotations

from itertools import compress
from operator import attrgetter, not_
from typing import Any

import numpy as np

from .categories import DEVICE_CATS, Cat, normalize_category
from .columns import (
    LaneIds,
    canonical_key,
    float_column,
    id_column,
    in_int64,
    intern_column,
    intern_keys,
    json_text,
    present_mask,
)
from .links import (
    MEMORY_FIELDS,
    classify_lanes,
    link_flows,
    memory_columns,
    triples_of,
)
from .model import Device, KernelArgs, MemoryEvents, Trace, TraceMeta
from .schema import as_int
from .sparse import SparseTexts, SparseValues
from .spill import MemoryParts, SpillParts

_TIMED_PH = frozenset({"X", "i", "I"})
_DEVICE_CATS = np.array([int(c) for c in DEVICE_CATS], dtype=np.uint8)
_FLOW_PH = frozenset({"s", "f", "t"})
_LAUNCH_FLOW_CATS = frozenset({"ac2g", "async"})
_PH, _NAME, _CAT, _TS, _DUR, _ID, _ARGS = (
    attrgetter(a) for a in ("ph", "name", "cat", "ts", "dur", "id", "args")
)
_EXTERNAL_ID, _EXTERNAL_ID_OLD, _CORRELATION, _STREAM, _DEVICE = (
    attrgetter(a) for a in ("external_id", "external_id_old", "correlation", "stream", "device")
)
(
    _GRID,
    _BLOCK,
    _REGISTERS,
    _SHARED_MEMORY,
    _OCCUPANCY,
    _BLOCKS_PER_SM,
    _WARPS_PER_SM,
    _ALLOC,
    _DIMS,
    _TYPES,
    _CONCRETE,
    _FLOPS,
    _COPY_BYTES,
    _SEQUENCE,
    _FWD_THREAD,
) = (
    attrgetter(a)
    for a in (
        "grid",
        "block",
        "registers",
        "shared_memory",
        "occupancy",
        "blocks_per_sm",
        "warps_per_sm",
        "alloc_bytes",
        "input_dims",
        "input_type",
        "concrete_inputs",
        "flops",
        "copy_bytes",
        "sequence",
        "fwd_thread",
    )
)

_COMM_NAME = attrgetter("comm_name")
#: record_param_comms' arguments kept for a collective: (attribute, the trace's key)
_COMM_FIELDS = (
    ("comm_name", "Collective name"),
    ("comm_in", "In msg nelems"),
    ("comm_out", "Out msg nelems"),
    ("comm_group", "Group size"),
    ("comm_dtype", "dtype"),
    ("comm_pg", "Process Group Name"),
)

#: every column the builder collects: key -> (dtype, width of a row or None)
COLUMNS: dict[str, tuple[Any, int | None]] = {
    # timed events, one row each
    "ts": (np.float64, None),
    "dur": (np.float64, None),
    "instant": (np.bool_, None),
    "name": (np.int32, None),
    "cat": (np.int32, None),
    "lane": (np.int32, None),
    "ext": (np.int64, None),
    "corr": (np.int64, None),
    # device events: what names a device lane
    "dev_lane": (np.int32, None),
    "dev_stream": (np.int64, None),
    "dev_device": (np.int64, None),
    # launch configurations (sparse)
    "k_index": (np.int64, None),
    "k_grid": (np.int64, 3),
    "k_block": (np.int64, 3),
    "k_regs": (np.int64, None),
    "k_smem": (np.int64, None),
    "k_occ": (np.float64, None),
    "k_bps": (np.float64, None),
    "k_wps": (np.float64, None),
    # launch flows, linked to launches and kernels at the end
    "flow_id": (np.int64, None),
    "flow_lane": (np.int32, None),
    "flow_ts": (np.float64, None),
    # sparse arguments (`sparse.py`)
    "dims_index": (np.int64, None),
    "dims_len": (np.int64, None),
    "dims_blob": (np.uint8, None),
    "types_index": (np.int64, None),
    "types_len": (np.int64, None),
    "types_blob": (np.uint8, None),
    "concrete_index": (np.int64, None),
    "concrete_len": (np.int64, None),
    "concrete_blob": (np.uint8, None),
    "comm_index": (np.int64, None),
    "comm_len": (np.int64, None),
    "comm_blob": (np.uint8, None),
    "flops_index": (np.int64, None),
    "flops_value": (np.float64, None),
    "copy_index": (np.int64, None),
    "copy_value": (np.int64, None),
    "seq_index": (np.int64, None),
    "seq_value": (np.int64, None),
    "seq_thread": (np.int64, None),
    **{f"m_{field}": (np.float64 if field == "ts" else np.int64, None) for field in MEMORY_FIELDS},
}
#: columns holding event indices: shifted when another builder's state is absorbed
_INDEX_COLUMNS = (
    "k_index",
    "dims_index",
    "types_index",
    "concrete_index",
    "comm_index",
    "flops_index",
    "copy_index",
    "seq_index",
    "m_index",
)


class TraceBuilder:
    """Turns decoded batches into numpy column parts, then into one `Trace`.

    Each batch is read column-wise (one C-level pass per field through
    `attrgetter`, names and lanes interned through dict lookups) rather than
    event by event, and becomes numpy arrays at once, so no per-event Python
    objects outlive their batch. The arrays go to `sink` (`spill.py`): lists
    in memory, or files for the out-of-core path; the builder is the same.
    Every id (name, category, lane) is numbered in order of first appearance
    in the file, whatever the batches, so that two builders fed the two halves
    of a file can be merged (`state`, `absorb`) into exactly what one builder
    fed the whole file holds.
    """

    def __init__(self, path: str, sink: MemoryParts | SpillParts | None = None) -> None:
        self.path = path
        self.sink = sink if sink is not None else MemoryParts()
        self.names: dict[str, int] = {}
        self.cats: dict[str | None, int] = {}
        self.lanes = LaneIds()  # of timed events
        self.flow_lanes = LaneIds()  # of flow events; merged into `lanes` at the end
        self.cat_codes: list[int] = []  # normalised `Cat` of each raw category id
        self.cat_on_device = np.zeros(0, bool)  # by raw category id
        self.process_names: dict[Any, str] = {}
        self.thread_names: dict[tuple[Any, Any], str] = {}
        self.count = 0

    def add(self, batch: list[Any]) -> None:
        phs = list(map(_PH, batch))
        if phs.count("X") == len(phs):  # the common case: complete events only
            timed = batch
        else:
            keep = list(map(_TIMED_PH.__contains__, phs))
            timed = list(compress(batch, keep))
            phs = list(compress(phs, keep))
            self._untimed(list(compress(batch, map(not_, keep))))
        ts = np.fromiter(map(_TS, timed), np.float64, len(timed))
        untimed = np.isnan(ts)
        if untimed.any():  # no timestamp: not placeable on a timeline
            timed = list(compress(timed, (~untimed).tolist()))
            phs = list(compress(phs, (~untimed).tolist()))
            ts = ts[~untimed]
        n = len(timed)
        if not n:
            return
        base = self.count
        self.count += n
        put = self.sink.append
        instant = np.zeros(n, bool) if phs.count("X") == n else np.array(phs, dtype=object) != "X"
        dur = np.fromiter(map(_DUR, timed), np.float64, n)
        dur[instant] = 0.0
        name_list = list(map(_NAME, timed))
        put("ts", ts)
        put("dur", dur)
        put("instant", instant)
        put("name", intern_column(self.names, name_list))
        cat = intern_column(self.cats, list(map(_CAT, timed)))
        put("cat", cat)
        lane = self.lanes(timed)
        put("lane", lane)
        args = list(map(_ARGS, timed))
        ext = id_column(list(map(_EXTERNAL_ID, args)))
        absent = ext == -1
        if absent.any():  # 2021 traces spell it "external id"
            np.copyto(ext, id_column(list(map(_EXTERNAL_ID_OLD, args))), where=absent)
        put("ext", ext)
        put("corr", id_column(list(map(_CORRELATION, args))))
        self._device_ids(args, cat, lane)
        self._launch_configs(args, base)
        self._sparse_args(args, name_list, ts, base)

    def _device_ids(self, args: list[Any], cat: np.ndarray, lane: np.ndarray) -> None:
        """Stream and device of device events: what names a device lane."""
        if len(self.cat_codes) < len(self.cats):  # new raw categories
            for raw in list(self.cats)[len(self.cat_codes) :]:
                self.cat_codes.append(int(normalize_category(raw, "")))
            self.cat_on_device = np.isin(np.array(self.cat_codes, np.uint8), _DEVICE_CATS)
        on_device = np.flatnonzero(self.cat_on_device[cat])
        if not len(on_device):
            return
        device_args = [args[i] for i in on_device.tolist()]
        self.sink.append("dev_lane", lane[on_device])
        self.sink.append("dev_stream", id_column(list(map(_STREAM, device_args))))
        self.sink.append("dev_device", id_column(list(map(_DEVICE, device_args))))

    def _launch_configs(self, args: list[Any], base: int) -> None:
        """Grid, block, registers, shared memory and occupancy of kernels."""
        grids = list(map(_GRID, args))
        with_cfg = np.union1d(present_mask(grids), present_mask(list(map(_REGISTERS, args))))
        # Inductor's cpu_ops carry a text "grid(100,)": not a launch configuration
        keep = [
            i
            for i in with_cfg.tolist()
            if type(grids[i]) is not str or args[i].registers is not None
        ]
        if not keep:
            return
        cfg = [args[i] for i in keep]
        put = self.sink.append
        put("k_index", np.array(keep, np.int64) + base)
        put("k_grid", triples_of(list(map(_GRID, cfg))))
        put("k_block", triples_of(list(map(_BLOCK, cfg))))
        put("k_regs", id_column(list(map(_REGISTERS, cfg))))
        put("k_smem", id_column(list(map(_SHARED_MEMORY, cfg))))
        put("k_occ", float_column(list(map(_OCCUPANCY, cfg))))
        put("k_bps", float_column(list(map(_BLOCKS_PER_SM, cfg))))
        put("k_wps", float_column(list(map(_WARPS_PER_SM, cfg))))

    def _sparse_args(self, args: list[Any], name_list: list[str], ts, base: int) -> None:
        """Arguments only some events carry: allocator events, shapes, flops, bytes."""
        put = self.sink.append
        alloc = present_mask(list(map(_ALLOC, args)))
        rows = [
            (base + i, float(ts[i]), a.alloc_bytes, a.total_allocated, a.total_reserved)
            + (a.device_type, a.device_id, a.addr)
            for i in alloc.tolist()
            if name_list[i] == "[memory]"
            for a in (args[i],)
        ]
        if rows:
            for field, column in zip(MEMORY_FIELDS, memory_columns(rows), strict=True):
                put(f"m_{field}", column)
        for getter, key in ((_DIMS, "dims"), (_TYPES, "types"), (_CONCRETE, "concrete")):
            values = list(map(getter, args))
            if values.count(None) < len(values):
                at = present_mask(values)
                lengths, blob = SparseTexts.encode([json_text(values[i]) for i in at.tolist()])
                put(f"{key}_index", at + base)
                put(f"{key}_len", lengths)
                put(f"{key}_blob", blob)
        self._collective_args(args, base)
        for getter, key, column in ((_FLOPS, "flops", float_column), (_COPY_BYTES, "copy", _ints)):
            values = list(map(getter, args))
            if values.count(None) < len(values):
                at = present_mask(values)
                put(f"{key}_index", at + base)
                put(f"{key}_value", column([values[i] for i in at.tolist()]))
        self._sequence_numbers(args, base)

    def _sequence_numbers(self, args: list[Any], base: int) -> None:
        """Autograd's `Sequence number` and `Fwd thread id` of ops that carry them: what
        ties a backward node to the forward op that made it (analysis/modules.py)."""
        values = list(map(_SEQUENCE, args))
        if values.count(None) == len(values):
            return
        at = present_mask(values).tolist()
        self.sink.append("seq_index", np.array(at, np.int64) + base)
        self.sink.append("seq_value", _ints([values[i] for i in at]))
        self.sink.append("seq_thread", _ints([_FWD_THREAD(args[i]) for i in at]))

    def _collective_args(self, args: list[Any], base: int) -> None:
        """What record_param_comms says of a collective (name, element counts, dtype, group
        size and name), as one JSON object per event that names a collective."""
        names = list(map(_COMM_NAME, args))
        if names.count(None) == len(names):
            return
        at = present_mask(names)
        texts = []
        for i in at.tolist():
            a = args[i]
            fields = [(key, getattr(a, attr)) for attr, key in _COMM_FIELDS]
            texts.append(
                "{"
                + ",".join(f'"{key}":{json_text(v)}' for key, v in fields if v is not None)
                + "}"
            )
        lengths, blob = SparseTexts.encode(texts)
        self.sink.append("comm_index", at + base)
        self.sink.append("comm_len", lengths)
        self.sink.append("comm_blob", blob)

    def _untimed(self, events: list[Any]) -> None:
        """Flow events (launch -> device links) and metadata (thread names)."""
        flows = list(compress(events, map(_LAUNCH_FLOW_CATS.__contains__, map(_CAT, events))))
        flows = list(compress(flows, map(_FLOW_PH.__contains__, map(_PH, flows))))
        if flows:
            self.sink.append("flow_id", id_column(list(map(_ID, flows))))
            self.sink.append("flow_lane", self.flow_lanes(flows))
            self.sink.append("flow_ts", np.fromiter(map(_TS, flows), np.float64, len(flows)))
        for ev in compress(events, map("M".__eq__, map(_PH, events))):
            self._metadata(ev)

    def _metadata(self, ev: Any) -> None:
        args = ev.args
        if args is None or args.meta_name is None:
            return
        if ev.name == "process_name":
            self.process_names[ev.pid] = str(args.meta_name)
        elif ev.name == "thread_name":
            self.thread_names[(canonical_key(ev.pid), canonical_key(ev.tid))] = str(args.meta_name)

    def _column(self, key: str) -> np.ndarray:
        dtype, width = COLUMNS[key]
        return self.sink.column(key, dtype, width)

    def state(self) -> dict[str, Any]:
        """Everything gathered so far, as plain data (for a worker to send back)."""
        return {
            "names": list(self.names),
            "cats": list(self.cats),
            "lanes": list(self.lanes.keys),
            "flow_lanes": list(self.flow_lanes.keys),
            "columns": {key: self._column(key) for key in COLUMNS},
            "process_names": self.process_names,
            "thread_names": self.thread_names,
            "count": self.count,
        }

    def absorb(self, state: dict[str, Any]) -> None:
        """Append the `state` of a builder fed the events that follow this one's.

        Ids the other builder gave are renumbered into this one's tables; new
        names, categories and lanes are added in its order, which is their order
        of first appearance in the file, as one builder would have numbered them."""
        base = self.count
        name_map = np.array(intern_keys(self.names, state["names"]) or [0], np.int32)
        cat_map = np.array(intern_keys(self.cats, state["cats"]) or [0], np.int32)
        lane_map = self.lanes.merge(state["lanes"])
        flow_lane_map = self.flow_lanes.merge(state["flow_lanes"])
        remap = {
            "name": name_map,
            "cat": cat_map,
            "lane": lane_map,
            "dev_lane": lane_map,
            "flow_lane": flow_lane_map,
        }
        for key, column in state["columns"].items():
            if not len(column):
                continue
            if key in remap:
                column = remap[key][column]
            elif key in _INDEX_COLUMNS:
                column = column + base
            self.sink.append(key, column)
        self.process_names.update(state["process_names"])
        self.thread_names.update(state["thread_names"])
        self.count += state["count"]

    def finish(self, meta: TraceMeta, devices: list[Device], warnings: list[str]) -> Trace:
        cat_map = np.array(
            [int(normalize_category(c, "")) for c in self.cats] or [0], dtype=np.uint8
        )
        names = list(self.names)
        name_id = self._column("name")
        cat = cat_map[self._column("cat")]
        memory_name = self.names.get("[memory]")
        if memory_name is not None:
            cat[name_id == memory_name] = int(Cat.MEMORY)
        lane = self._column("lane")
        corr = self._column("corr")
        ts = self._column("ts")
        # lanes only flows use come after those of timed events
        flow_lane_ids = self.lanes.merge(list(self.flow_lanes.keys))
        device_lane = self._column("dev_lane")
        lanes = classify_lanes(
            self.lanes.keys,
            self.thread_names,
            (lane, cat),
            (device_lane, self._column("dev_stream"), self._column("dev_device")),
        )
        flow_id = self._column("flow_id")
        if len(flow_id):
            flow_lane, flow_ts = self._column("flow_lane"), self._column("flow_ts")
            link_flows((flow_id, flow_lane_ids[flow_lane], flow_ts), ts, lane, cat, corr)
        dur = self._column("dur")
        np.nan_to_num(dur, copy=False)
        np.maximum(dur, 0.0, out=dur)
        seq_index = self._column("seq_index")  # read once: a column is handed over once
        return Trace(
            path=self.path,
            meta=meta,
            names=names,
            ts=ts,
            dur=dur,
            name_id=name_id,
            cat=cat,
            lane=lane,
            is_instant=self._column("instant"),
            external_id=self._column("ext"),
            correlation=corr,
            lanes=lanes,
            devices=devices,
            kernel_args=KernelArgs(
                *(self._column(k) for k in ("k_index", "k_grid", "k_block", "k_regs", "k_smem")),
                occupancy=self._column("k_occ"),
                blocks_per_sm=self._column("k_bps"),
                warps_per_sm=self._column("k_wps"),
            ),
            memory=MemoryEvents(*(self._column(f"m_{field}") for field in MEMORY_FIELDS)),
            input_dims=self._texts("dims"),
            input_types=self._texts("types"),
            concrete_inputs=self._texts("concrete"),
            collective_args=self._texts("comm"),
            flops=SparseValues(self._column("flops_index"), self._column("flops_value")),
            copy_bytes=SparseValues(self._column("copy_index"), self._column("copy_value")),
            sequence=SparseValues(seq_index, self._column("seq_value")),
            fwd_thread=SparseValues(seq_index, self._column("seq_thread")),
            warnings=warnings,
        )

    def _texts(self, key: str) -> SparseTexts:
        lengths = self._column(f"{key}_len")
        blob = self._column(f"{key}_blob")
        return SparseTexts(self._column(f"{key}_index"), np.cumsum(lengths), blob)


def _ints(values: list[Any]) -> np.ndarray:
    """int64 column of `bytes` values (`as_int`: -1 where not a number or out of range)."""
    return np.array([in_int64(as_int(v)) for v in values], np.int64)
