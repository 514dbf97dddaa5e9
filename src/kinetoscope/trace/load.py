"""`load(path) -> Trace`: read, decode and normalise a Kineto trace file."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from ..errors import TraceError
from .categories import DEVICE_CATS, Cat, normalize_category
from .decode import TopLevel, decode_events, decode_top
from .model import Device, KernelArgs, Lane, MemoryEvents, Trace, TraceMeta
from .source import read_trace_bytes

_KEEP_PH = {"X": False, "i": True, "I": True}
_FLOW_PH = {"s", "f", "t"}
_LAUNCH_FLOW_CATS = {"ac2g", "async"}


def load(path: str | os.PathLike) -> Trace:
    """Load a `.json`, `.json.gz` or `.pt.trace.json[.gz]` file into a `Trace`.

    Raises `TraceError` (one line, names the file) for anything unusable.
    Recoverable damage (truncation, control characters) becomes `Trace.warnings`.
    """
    path = Path(path)
    warnings: list[str] = []
    data = read_trace_bytes(path, warnings)
    stripped = data.lstrip()
    if stripped[:1] == b"[":
        raise TraceError(path, "is a JSON array, not a Kineto trace object with 'traceEvents'")
    if stripped[:1] != b"{":
        raise TraceError(path, "is not JSON (it does not start with '{')")
    top = decode_top(data, str(path), warnings)
    if top.traceEvents is None:
        raise TraceError(path, "is JSON but not a Kineto trace (no 'traceEvents' key)")
    builder = _Builder(str(path))
    for batch in decode_events(top.traceEvents, str(path)):
        builder.add(batch)
    raw_count = len(top.traceEvents)
    top.traceEvents = None
    del data, stripped
    trace = builder.finish(_meta(top), _devices(top), warnings)
    if len(trace) == 0:
        if raw_count == 0:
            raise TraceError(path, "has no events (empty 'traceEvents')")
        raise TraceError(path, "has no timed events (only metadata)")
    if not trace.mask(
        Cat.CPU_OP, Cat.USER_ANNOTATION, Cat.RUNTIME, Cat.DRIVER, Cat.PYTHON, *DEVICE_CATS
    ).any():
        raise TraceError(
            path, "is not a PyTorch profiler (Kineto) trace: no operator, runtime or device events"
        )
    return trace


def _meta(top: TopLevel) -> TraceMeta:
    versions = {
        key: getattr(top, key)
        for key in (
            "cuda_runtime_version",
            "cuda_driver_version",
            "cupti_version",
            "hip_runtime_version",
            "hip_driver_version",
            "roctracer_version",
        )
        if getattr(top, key) is not None
    }
    base = top.baseTimeNanoseconds
    return TraceMeta(
        schema_version=top.schemaVersion,
        base_time_ns=int(base) if isinstance(base, (int, float)) else None,
        display_time_unit=top.displayTimeUnit if isinstance(top.displayTimeUnit, str) else None,
        trace_name=top.traceName if isinstance(top.traceName, str) else None,
        distributed=top.distributedInfo if isinstance(top.distributedInfo, dict) else None,
        versions=versions,
        kinetoscope=top.kinetoscope if isinstance(top.kinetoscope, dict) else None,
    )


def _devices(top: TopLevel) -> list[Device]:
    out = []
    for prop in top.deviceProperties or []:
        name = str(prop.name) if prop.name is not None else "unknown device"
        vendor = (
            "AMD"
            if ("AMD" in name or "Instinct" in name or "Radeon" in name)
            else (
                "NVIDIA"
                if any(k in name for k in ("NVIDIA", "Tesla", "GeForce", "Quadro"))
                else None
            )
        )
        if vendor is None and (top.hip_runtime_version is not None):
            vendor = "AMD"
        cc = None
        if isinstance(prop.computeMajor, int) and isinstance(prop.computeMinor, int):
            cc = f"{prop.computeMajor}.{prop.computeMinor}"
        out.append(
            Device(
                id=int(prop.id) if isinstance(prop.id, int) else len(out),
                name=name,
                vendor=vendor,
                sm_count=prop.numSms if isinstance(prop.numSms, int) else None,
                memory_bytes=prop.totalGlobalMem if isinstance(prop.totalGlobalMem, int) else None,
                compute_capability=cc,
            )
        )
    return out


def _int(value: Any, default: int = -1) -> int:
    if value is None:
        return default
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _json_text(value: Any) -> str:
    """JSON text of an argument kept undecoded (Raw) or decoded leniently."""
    raw = bytes(value) if isinstance(value, msgspec.Raw) else msgspec.json.encode(value)
    return raw.decode("utf-8", "replace")


def _float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


class _Builder:
    """Accumulates decoded batches into column lists, then freezes them into numpy."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.names: dict[str, int] = {}
        self.cats: dict[Any, int] = {}
        self.lane_keys: dict[tuple[Any, Any], int] = {}
        self.cols: dict[str, list] = {
            k: []
            for k in (
                "ts",
                "dur",
                "name",
                "cat",
                "lane",
                "instant",
                "ext",
                "corr",
                "stream",
                "device",
            )
        }
        self.kernel_rows: list[tuple] = []
        self.memory_rows: list[tuple] = []
        self.input_dims: dict[int, str] = {}
        self.input_types: dict[int, str] = {}
        self.flops: dict[int, float] = {}
        self.copy_bytes: dict[int, int] = {}
        self.flows: list[tuple] = []  # (id, ph, lane, ts)
        self.process_names: dict[Any, str] = {}
        self.thread_names: dict[tuple[Any, Any], str] = {}
        self.cat_names: list[str | None] = []
        self.count = 0

    def _lane(self, pid: Any, tid: Any) -> int:
        key = (pid, tid)
        lane = self.lane_keys.get(key)
        if lane is None:
            lane = self.lane_keys[key] = len(self.lane_keys)
        return lane

    def add(self, events: list[Any]) -> None:
        cols = self.cols
        names = self.names
        for ev in events:
            ph = ev.ph
            instant = _KEEP_PH.get(ph)
            if instant is None:
                if ph in _FLOW_PH and ev.cat in _LAUNCH_FLOW_CATS:
                    self.flows.append((ev.id, ph, self._lane(ev.pid, ev.tid), _float(ev.ts)))
                elif ph == "M":
                    self._metadata(ev)
                continue
            ts = ev.ts if type(ev.ts) is float else _float(ev.ts)
            if ts != ts:  # NaN: no timestamp, not placeable on a timeline
                continue
            name = ev.name if type(ev.name) is str else str(ev.name)
            nid = names.get(name)
            if nid is None:
                nid = names[name] = len(names)
            cat = self.cats.get(ev.cat)
            if cat is None:
                cat = self.cats[ev.cat] = len(self.cats)
                self.cat_names.append(ev.cat if isinstance(ev.cat, str) else None)
            index = self.count
            self.count += 1
            cols["ts"].append(ts)
            cols["dur"].append(
                0.0 if instant else (ev.dur if type(ev.dur) is float else _float(ev.dur))
            )
            cols["name"].append(nid)
            cols["cat"].append(cat)
            cols["lane"].append(self._lane(ev.pid, ev.tid))
            cols["instant"].append(instant)
            args = ev.args
            if args is None:
                cols["ext"].append(-1)
                cols["corr"].append(-1)
                cols["stream"].append(-1)
                cols["device"].append(-1)
                continue
            ext = args.external_id if args.external_id is not None else args.external_id_old
            cols["ext"].append(_int(ext))
            cols["corr"].append(_int(args.correlation))
            cols["stream"].append(_int(args.stream))
            cols["device"].append(_int(args.device))
            if args.grid is not None or args.registers is not None:
                self.kernel_rows.append(
                    (index, args.grid, args.block, args.registers, args.shared_memory)
                )
            if args.alloc_bytes is not None and name == "[memory]":
                self.memory_rows.append(
                    (
                        index,
                        ts,
                        args.alloc_bytes,
                        args.total_allocated,
                        args.total_reserved,
                        args.device_type,
                        args.device_id,
                        args.addr,
                    )
                )
            if args.input_dims is not None:
                self.input_dims[index] = _json_text(args.input_dims)
            if args.input_type is not None:
                self.input_types[index] = _json_text(args.input_type)
            if args.flops is not None:
                self.flops[index] = _float(args.flops)
            if args.copy_bytes is not None:
                self.copy_bytes[index] = args.copy_bytes

    def _metadata(self, ev: Any) -> None:
        args = ev.args
        if args is None or args.meta_name is None:
            return
        if ev.name == "process_name":
            self.process_names[ev.pid] = str(args.meta_name)
        elif ev.name == "thread_name":
            self.thread_names[(ev.pid, ev.tid)] = str(args.meta_name)

    def finish(self, meta: TraceMeta, devices: list[Device], warnings: list[str]) -> Trace:
        cols = self.cols
        cat_map = np.array(
            [int(normalize_category(c, "")) for c in self.cat_names] or [0], dtype=np.uint8
        )
        names = list(self.names)
        name_id = np.array(cols["name"], dtype=np.int32)
        cat = (
            cat_map[np.array(cols["cat"], dtype=np.int32)] if self.count else np.zeros(0, np.uint8)
        )
        memory_name = self.names.get("[memory]")
        if memory_name is not None:
            cat[name_id == memory_name] = int(Cat.MEMORY)
        lane = np.array(cols["lane"], dtype=np.int32)
        corr = np.array(cols["corr"], dtype=np.int64)
        stream = np.array(cols["stream"], dtype=np.int64)
        device = np.array(cols["device"], dtype=np.int64)
        ts = np.array(cols["ts"], dtype=np.float64)
        lanes = self._lanes(lane, cat, stream, device)
        if self.flows:
            _link_flows(self.flows, ts, lane, cat, corr)
        return Trace(
            path=self.path,
            meta=meta,
            names=names,
            ts=ts,
            dur=np.maximum(np.nan_to_num(np.array(cols["dur"], dtype=np.float64)), 0.0),
            name_id=name_id,
            cat=cat,
            lane=lane,
            is_instant=np.array(cols["instant"], dtype=bool),
            external_id=np.array(cols["ext"], dtype=np.int64),
            correlation=corr,
            lanes=lanes,
            devices=devices,
            kernel_args=_kernel_args(self.kernel_rows),
            memory=_memory(self.memory_rows),
            input_dims=self.input_dims,
            input_types=self.input_types,
            flops=self.flops,
            copy_bytes=self.copy_bytes,
            warnings=warnings,
        )

    def _lanes(self, lane, cat, stream, device) -> list[Lane]:
        """Classify each (pid, tid) as host thread or device stream by what runs on it."""
        n_lanes = len(self.lane_keys)
        device_cats = np.array([int(c) for c in DEVICE_CATS], dtype=np.uint8)
        host_cats = np.array(
            [
                int(c)
                for c in (Cat.CPU_OP, Cat.USER_ANNOTATION, Cat.RUNTIME, Cat.DRIVER, Cat.PYTHON)
            ],
            dtype=np.uint8,
        )
        dev_count = np.bincount(lane[np.isin(cat, device_cats)], minlength=n_lanes)
        host_count = np.bincount(lane[np.isin(cat, host_cats)], minlength=n_lanes)
        out = []
        for (pid, tid), lane_id in self.lane_keys.items():
            if dev_count[lane_id] > 0:
                sel = np.flatnonzero((lane == lane_id) & (stream >= 0))
                stream_id = int(stream[sel[0]]) if len(sel) else _stream_from_tid(tid)
                sel = np.flatnonzero((lane == lane_id) & (device >= 0))
                device_id = int(device[sel[0]]) if len(sel) else _int(pid, None)
                label = f"stream {stream_id}" if stream_id is not None else str(tid)
                out.append(Lane(lane_id, pid, tid, "device", label, device_id, stream_id))
            elif host_count[lane_id] > 0:
                label = self.thread_names.get((pid, tid)) or f"thread {tid}"
                out.append(Lane(lane_id, pid, tid, "host", label))
            else:
                out.append(Lane(lane_id, pid, tid, "other", f"{pid}/{tid}"))
        return out


def _stream_from_tid(tid: Any) -> int | None:
    if isinstance(tid, int):
        return tid
    digits = "".join(ch for ch in str(tid) if ch.isdigit())
    return int(digits) if digits else None


def _link_flows(flows, ts, lane, cat, corr) -> None:
    """Give launch calls and device events without a `correlation` arg their flow id.

    A flow start `s` sits at the launch call's start on the host lane, the
    finish `f` at the device event's start on its stream; binding is by lane
    and timestamp (rounded to the nanosecond).
    """
    linkable = np.isin(
        cat, np.array([int(c) for c in (Cat.RUNTIME, Cat.DRIVER, *DEVICE_CATS)], dtype=np.uint8)
    )
    candidates = np.flatnonzero((corr < 0) & linkable)
    if not len(candidates):
        return
    at = {(int(lane[i]), round(float(ts[i]), 3)): i for i in candidates}
    for flow_id, _ph, flow_lane, flow_ts in flows:
        target = at.get((flow_lane, round(flow_ts, 3)))
        if target is not None:
            corr[target] = _int(flow_id)


def _kernel_args(rows: list[tuple]) -> KernelArgs:
    def triple(v):
        if isinstance(v, list) and len(v) == 3:
            return [_int(x) for x in v]
        return [-1, -1, -1]

    n = len(rows)
    return KernelArgs(
        index=np.array([r[0] for r in rows], dtype=np.int64),
        grid=np.array([triple(r[1]) for r in rows], dtype=np.int64).reshape(n, 3),
        block=np.array([triple(r[2]) for r in rows], dtype=np.int64).reshape(n, 3),
        registers=np.array([_int(r[3]) for r in rows], dtype=np.int64),
        shared_memory=np.array([_int(r[4]) for r in rows], dtype=np.int64),
    )


def _memory(rows: list[tuple]) -> MemoryEvents:
    cols = list(zip(*rows, strict=True)) if rows else [[]] * 8
    as_int = [np.array([_int(v) for v in col], dtype=np.int64) for col in cols]
    return MemoryEvents(
        index=as_int[0],
        ts=np.array(cols[1], dtype=np.float64),
        nbytes=as_int[2],
        total_allocated=as_int[3],
        total_reserved=as_int[4],
        device_type=as_int[5],
        device_id=as_int[6],
        addr=as_int[7],
    )
