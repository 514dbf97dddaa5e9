"""`TraceBuilder`: decoded event batches in, one `Trace` of numpy columns out.

The loader feeds it batches as they are decoded (`add`), so the whole event list
never exists as Python objects; the split loader runs one builder per half and
merges the second into the first (`state`, `absorb`).
"""

from __future__ import annotations

from itertools import compress
from operator import attrgetter, not_
from typing import Any

import numpy as np

from .categories import DEVICE_CATS, HOST_TREE_CATS, Cat, normalize_category
from .columns import (
    LaneIds,
    canonical_key,
    float_column,
    id_column,
    intern_keys,
    json_text,
    present_mask,
)
from .links import (
    first_per_lane,
    join_parts,
    kernel_args_of,
    link_flows,
    memory_events_of,
    stream_from_tid,
    triples_of,
)
from .model import Device, Lane, Trace, TraceMeta
from .schema import as_float, as_int

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
    _ALLOC,
    _DIMS,
    _TYPES,
    _CONCRETE,
    _FLOPS,
    _COPY_BYTES,
) = (
    attrgetter(a)
    for a in (
        "grid",
        "block",
        "registers",
        "shared_memory",
        "occupancy",
        "alloc_bytes",
        "input_dims",
        "input_type",
        "concrete_inputs",
        "flops",
        "copy_bytes",
    )
)


class TraceBuilder:
    """Turns decoded batches into numpy column parts, then concatenates them.

    Each batch is read column-wise (one C-level pass per field through
    `attrgetter`, names and lanes interned through dict lookups) rather than
    event by event, and becomes numpy arrays at once, so no per-event Python
    objects outlive their batch. Every id (name, category, lane) is numbered in
    order of first appearance in the file, whatever the batches, so that two
    builders fed the two halves of a file can be merged (`state`, `absorb`)
    into exactly what one builder fed the whole file holds.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.names: dict[str, int] = {}
        self.cats: dict[str | None, int] = {}
        self.lanes = LaneIds()  # of timed events
        self.flow_lanes = LaneIds()  # of flow events; merged into `lanes` at the end
        self.parts: dict[str, list[np.ndarray]] = {
            k: [] for k in ("ts", "dur", "name", "cat", "lane", "instant", "ext", "corr")
        }
        self.cat_codes: list[int] = []  # normalised `Cat` of each raw category id
        self.cat_on_device = np.zeros(0, bool)  # by raw category id
        self.device_parts: list[
            tuple[np.ndarray, np.ndarray, np.ndarray]
        ] = []  # lane, stream, device
        self.kernel_parts: list[tuple[np.ndarray, ...]] = []  # index, grid, block, regs, smem, occ.
        self.memory_rows: list[tuple] = []
        self.input_dims: dict[int, str] = {}
        self.input_types: dict[int, str] = {}
        self.concrete_inputs: dict[int, str] = {}
        self.flops: dict[int, float] = {}
        self.copy_bytes: dict[int, int] = {}
        self.flows: dict[str, list[np.ndarray]] = {"id": [], "lane": [], "ts": []}
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
        parts = self.parts
        instant = np.zeros(n, bool) if phs.count("X") == n else np.array(phs, dtype=object) != "X"
        dur = np.fromiter(map(_DUR, timed), np.float64, n)
        dur[instant] = 0.0
        name_list = list(map(_NAME, timed))
        parts["ts"].append(ts)
        parts["dur"].append(dur)
        parts["instant"].append(instant)
        parts["name"].append(np.array(intern_keys(self.names, name_list), np.int32))
        cat = np.array(intern_keys(self.cats, list(map(_CAT, timed))), np.int32)
        parts["cat"].append(cat)
        lane = self.lanes(timed)
        parts["lane"].append(lane)
        args = list(map(_ARGS, timed))
        ext = id_column(list(map(_EXTERNAL_ID, args)))
        absent = ext == -1
        if absent.any():  # 2021 traces spell it "external id"
            np.copyto(ext, id_column(list(map(_EXTERNAL_ID_OLD, args))), where=absent)
        parts["ext"].append(ext)
        parts["corr"].append(id_column(list(map(_CORRELATION, args))))
        self._device_ids(args, cat, lane)
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
        self.device_parts.append(
            (
                lane[on_device],
                id_column(list(map(_STREAM, device_args))),
                id_column(list(map(_DEVICE, device_args))),
            )
        )

    def _sparse_args(self, args: list[Any], name_list: list[str], ts, base: int) -> None:
        """Arguments only some events carry: launch configs, allocator events, shapes."""
        grids = list(map(_GRID, args))
        with_cfg = np.union1d(present_mask(grids), present_mask(list(map(_REGISTERS, args))))
        # Inductor's cpu_ops carry a text "grid(100,)": not a launch configuration
        keep = [
            i
            for i in with_cfg.tolist()
            if type(grids[i]) is not str or args[i].registers is not None
        ]
        if keep:
            cfg = [args[i] for i in keep]
            self.kernel_parts.append(
                (
                    np.array(keep, np.int64) + base,
                    triples_of(list(map(_GRID, cfg))),
                    triples_of(list(map(_BLOCK, cfg))),
                    id_column(list(map(_REGISTERS, cfg))),
                    id_column(list(map(_SHARED_MEMORY, cfg))),
                    float_column(list(map(_OCCUPANCY, cfg))),
                )
            )
        alloc = present_mask(list(map(_ALLOC, args)))
        for i in alloc.tolist():
            if name_list[i] == "[memory]":
                a = args[i]
                self.memory_rows.append(
                    (
                        base + i,
                        float(ts[i]),
                        a.alloc_bytes,
                        a.total_allocated,
                        a.total_reserved,
                        a.device_type,
                        a.device_id,
                        a.addr,
                    )
                )
        for getter, out in (
            (_DIMS, self.input_dims),
            (_TYPES, self.input_types),
            (_CONCRETE, self.concrete_inputs),
        ):
            values = list(map(getter, args))
            if values.count(None) < len(values):
                at = present_mask(values)
                texts = [json_text(values[i]) for i in at.tolist()]
                out.update(zip((at + base).tolist(), texts, strict=True))
        for getter, out, convert in (
            (_FLOPS, self.flops, as_float),
            (_COPY_BYTES, self.copy_bytes, as_int),
        ):
            values = list(map(getter, args))
            if values.count(None) < len(values):
                for i in present_mask(values).tolist():
                    out[base + i] = convert(values[i])

    def _untimed(self, events: list[Any]) -> None:
        """Flow events (launch -> device links) and metadata (thread names)."""
        flows = list(compress(events, map(_LAUNCH_FLOW_CATS.__contains__, map(_CAT, events))))
        flows = list(compress(flows, map(_FLOW_PH.__contains__, map(_PH, flows))))
        if flows:
            self.flows["id"].append(id_column(list(map(_ID, flows))))
            self.flows["lane"].append(self.flow_lanes(flows))
            self.flows["ts"].append(np.fromiter(map(_TS, flows), np.float64, len(flows)))
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

    def state(self) -> dict[str, Any]:
        """Everything gathered so far, as plain data (for a worker to send back)."""
        return {
            "names": list(self.names),
            "cats": list(self.cats),
            "lanes": list(self.lanes.keys),
            "flow_lanes": list(self.flow_lanes.keys),
            "parts": {k: join_parts(v) for k, v in self.parts.items()},
            "device_parts": [tuple(map(np.concatenate, zip(*self.device_parts, strict=True)))]
            if self.device_parts
            else [],
            "kernel_parts": [tuple(map(np.concatenate, zip(*self.kernel_parts, strict=True)))]
            if self.kernel_parts
            else [],
            "flows": {k: join_parts(v) for k, v in self.flows.items()},
            "memory_rows": self.memory_rows,
            "input_dims": self.input_dims,
            "input_types": self.input_types,
            "concrete_inputs": self.concrete_inputs,
            "flops": self.flops,
            "copy_bytes": self.copy_bytes,
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
        remap = {"name": name_map, "cat": cat_map, "lane": lane_map}
        for key, column in state["parts"].items():
            if column is not None:
                self.parts[key].append(remap[key][column] if key in remap else column)
        for lane, stream, device in state["device_parts"]:
            self.device_parts.append((lane_map[lane], stream, device))
        for index, *config in state["kernel_parts"]:
            self.kernel_parts.append((index + base, *config))
        if state["flows"]["id"] is not None:
            self.flows["id"].append(state["flows"]["id"])
            self.flows["lane"].append(flow_lane_map[state["flows"]["lane"]])
            self.flows["ts"].append(state["flows"]["ts"])
        self.memory_rows.extend((row[0] + base, *row[1:]) for row in state["memory_rows"])
        for key in ("input_dims", "input_types", "concrete_inputs", "flops", "copy_bytes"):
            getattr(self, key).update((i + base, v) for i, v in state[key].items())
        self.process_names.update(state["process_names"])
        self.thread_names.update(state["thread_names"])
        self.count += state["count"]

    def _column(self, key: str, dtype) -> np.ndarray:
        parts = self.parts.pop(key)
        return np.concatenate(parts) if parts else np.zeros(0, dtype)

    def finish(self, meta: TraceMeta, devices: list[Device], warnings: list[str]) -> Trace:
        cat_map = np.array(
            [int(normalize_category(c, "")) for c in self.cats] or [0], dtype=np.uint8
        )
        names = list(self.names)
        name_id = self._column("name", np.int32)
        cat = cat_map[self._column("cat", np.int32)]
        memory_name = self.names.get("[memory]")
        if memory_name is not None:
            cat[name_id == memory_name] = int(Cat.MEMORY)
        lane = self._column("lane", np.int32)
        corr = self._column("corr", np.int64)
        ts = self._column("ts", np.float64)
        # lanes only flows use come after those of timed events
        flow_lane_ids = self.lanes.merge(list(self.flow_lanes.keys))
        lanes = self._lanes(lane, cat)
        if self.flows["id"]:
            flow_id, flow_lane, flow_ts = (
                np.concatenate(self.flows.pop(k)) for k in ("id", "lane", "ts")
            )
            link_flows((flow_id, flow_lane_ids[flow_lane], flow_ts), ts, lane, cat, corr)
        dur = self._column("dur", np.float64)
        np.nan_to_num(dur, copy=False)
        np.maximum(dur, 0.0, out=dur)
        return Trace(
            path=self.path,
            meta=meta,
            names=names,
            ts=ts,
            dur=dur,
            name_id=name_id,
            cat=cat,
            lane=lane,
            is_instant=self._column("instant", bool),
            external_id=self._column("ext", np.int64),
            correlation=corr,
            lanes=lanes,
            devices=devices,
            kernel_args=kernel_args_of(self.kernel_parts),
            memory=memory_events_of(self.memory_rows),
            input_dims=self.input_dims,
            input_types=self.input_types,
            concrete_inputs=self.concrete_inputs,
            flops=self.flops,
            copy_bytes=self.copy_bytes,
            warnings=warnings,
        )

    def _lanes(self, lane, cat) -> list[Lane]:
        """Classify each (pid, tid) as host thread or device stream by what runs on it."""
        n_lanes = len(self.lanes.keys)
        device_cats = np.array([int(c) for c in DEVICE_CATS], dtype=np.uint8)
        host_cats = np.array([int(c) for c in HOST_TREE_CATS], dtype=np.uint8)
        dev_count = np.bincount(lane[np.isin(cat, device_cats)], minlength=n_lanes)
        host_count = np.bincount(lane[np.isin(cat, host_cats)], minlength=n_lanes)
        parts = self.device_parts or [(np.zeros(0, np.int32),) + (np.zeros(0, np.int64),) * 2]
        device_lane, stream, device = (np.concatenate(col) for col in zip(*parts, strict=True))
        first_stream = first_per_lane(device_lane, stream, n_lanes)
        first_device = first_per_lane(device_lane, device, n_lanes)
        out = []
        for (pid, tid), lane_id in self.lanes.keys.items():
            if dev_count[lane_id] > 0:
                stream_id = int(first_stream[lane_id])
                stream_id = stream_id if stream_id >= 0 else stream_from_tid(tid)
                device_id = int(first_device[lane_id])
                device_id = device_id if device_id >= 0 else as_int(pid, None)
                label = f"stream {stream_id}" if stream_id is not None else str(tid)
                out.append(Lane(lane_id, pid, tid, "device", label, device_id, stream_id))
            elif host_count[lane_id] > 0:
                label = self.thread_names.get((pid, tid)) or f"thread {tid}"
                out.append(Lane(lane_id, pid, tid, "host", label))
            else:
                out.append(Lane(lane_id, pid, tid, "other", f"{pid}/{tid}"))
        return out
