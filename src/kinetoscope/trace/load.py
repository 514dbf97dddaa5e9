"""`load(path) -> Trace`: read, decode and normalise a Kineto trace file."""

from __future__ import annotations

import gc
import math
import os
from contextlib import contextmanager
from itertools import compress, repeat
from operator import attrgetter, is_, is_not, not_
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from ..errors import TraceError, input_name
from .categories import DEVICE_CATS, HOST_TREE_CATS, Cat, normalize_category
from .decode import EventStream, TopLevel, as_float, as_int
from .model import Device, KernelArgs, Lane, MemoryEvents, Trace, TraceMeta
from .source import is_regular_file, trace_chunks
from .split import SPLIT_MIN_BYTES, build_split, cores

_GZIP_MAGIC = b"\x1f\x8b"
_TIMED_PH = frozenset({"X", "i", "I"})
_MAX_LANE_TABLE = 1 << 20  # (pid, tid) cells before lanes are interned as tuples instead
_DEVICE_CATS = np.array([int(c) for c in DEVICE_CATS], dtype=np.uint8)
_FLOW_PH = frozenset({"s", "f", "t"})
_LAUNCH_FLOW_CATS = frozenset({"ac2g", "async"})
_PH, _NAME, _CAT, _TS, _DUR, _PID, _TID, _ID, _ARGS = (
    attrgetter(a) for a in ("ph", "name", "cat", "ts", "dur", "pid", "tid", "id", "args")
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
        "flops",
        "copy_bytes",
    )
)


def load(path: str | os.PathLike, *, split_min_bytes: int | None = None) -> Trace:
    """Load a `.json`, `.json.gz` or `.pt.trace.json[.gz]` file into a `Trace`.

    Raises `TraceError` (one line, names the file) for anything unusable.
    Recoverable damage (truncation, control characters) becomes `Trace.warnings`.
    An uncompressed file of at least `split_min_bytes` is loaded in two halves
    on two cores (`split.py`); by default from `SPLIT_MIN_BYTES` up and only
    when two cores are free to use; an explicit value always tries.
    """
    path = Path(path)
    built = None
    with _cyclic_gc_paused(), _decoder_limits(path):
        if _split_wanted(path, split_min_bytes):
            built = build_split(path, _Builder)
        if built is None:
            built = _build(path)
    builder, top, count, warnings = built
    if top is None or top.traceEvents is None:
        raise TraceError(path, "is JSON but not a Kineto trace (no 'traceEvents' key)")
    trace = builder.finish(_meta(top), _devices(top), warnings)
    if len(trace) == 0:
        if count == 0:
            raise TraceError(path, "has no events (empty 'traceEvents')")
        raise TraceError(path, "has no timed events (only metadata)")
    if not trace.mask(*HOST_TREE_CATS, *DEVICE_CATS).any():
        raise TraceError(
            path, "is not a PyTorch profiler (Kineto) trace: no operator, runtime or device events"
        )
    return trace


def _build(path: Path) -> tuple[_Builder, TopLevel | None, int, list[str]]:
    """One pass over the file: (builder fed every event, top-level object, events
    decoded, warnings)."""
    warnings: list[str] = []
    stream = EventStream(input_name(path), warnings)
    builder = _Builder(input_name(path))
    for batch in stream.batches(trace_chunks(path, warnings)):
        builder.add(batch)
    return builder, stream.top, stream.count, warnings


def _split_wanted(path: Path, min_bytes: int | None) -> bool:
    """An uncompressed regular file large enough to be worth two processes (stdin,
    a FIFO or `/dev/fd/N` is read once, front to back, and never opened here)."""
    if not hasattr(os, "fork") or min_bytes is None and cores() < 2:
        return False
    if not is_regular_file(path):
        return False
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            gzipped = handle.read(2) == _GZIP_MAGIC
    except OSError:  # missing, a directory, unreadable: the one-pass load says which
        return False
    return not gzipped and size >= (SPLIT_MIN_BYTES if min_bytes is None else min_bytes)


@contextmanager
def _decoder_limits(path: Path):
    """The JSON decoder's own refusals, as the user's input being unusable: msgspec
    raises `UnicodeDecodeError` for bytes that are not UTF-8 and `RecursionError`
    for values nested deeper than the interpreter's recursion limit (~1000)."""
    try:
        yield
    except UnicodeDecodeError as exc:
        raise TraceError(
            path, f"is not valid UTF-8 text ({exc.reason}: byte 0x{exc.object[exc.start]:02x})"
        ) from None
    except RecursionError:
        raise TraceError(
            path, "has values nested too deeply to decode (about 1000 levels)"
        ) from None


@contextmanager
def _cyclic_gc_paused():
    """Decoding allocates millions of objects that form no cycles; letting the
    cyclic GC scan them on every allocation burst costs about 15% of load time."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


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
    profiler_log = {
        level: [str(line) for line in lines]
        for level, lines in (("INFO", top.INFO), ("WARNING", top.WARNING), ("ERROR", top.ERROR))
        if isinstance(lines, list)
    }
    return TraceMeta(
        schema_version=top.schemaVersion,
        base_time_ns=int(base) if isinstance(base, (int, float)) else None,
        display_time_unit=top.displayTimeUnit if isinstance(top.displayTimeUnit, str) else None,
        trace_name=top.traceName if isinstance(top.traceName, str) else None,
        distributed=top.distributedInfo if isinstance(top.distributedInfo, dict) else None,
        versions=versions,
        kinetoscope=top.kinetoscope if isinstance(top.kinetoscope, dict) else None,
        profiler_log=profiler_log,
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


def _json_text(value: Any) -> str:
    """JSON text of an argument kept undecoded (Raw) or decoded leniently."""
    if type(value) is msgspec.Raw:
        return str(value, "utf-8", "replace")
    return msgspec.json.encode(value).decode("utf-8", "replace")


def _ids(values: list[Any]) -> np.ndarray:
    """int64 column of id-like values; None (explicit null) and junk become -1."""
    try:
        return np.array(values, dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        return np.array([_in_int64(as_int(v)) for v in values], np.int64)


def _floats(values: list[Any]) -> np.ndarray:
    """float64 column; None and values that are not numbers become NaN."""
    try:
        return np.array([math.nan if v is None else v for v in values], dtype=np.float64)
    except (TypeError, ValueError):
        return np.array([as_float(v) for v in values], np.float64)


def _in_int64(value: int) -> int:
    return value if -(2**63) <= value < 2**63 else -1


def _intern(table: dict[Any, int], keys: list[Any]) -> list[int]:
    """Ids of `keys` in `table`, new keys numbered in order of first appearance.

    Lookups and the scan for misses run in C (`map`, `compress`), not per key
    in Python: after the first batch nearly every key is a hit."""
    ids = list(map(table.get, keys))
    if None in ids:
        for key in dict.fromkeys(compress(keys, map(is_, ids, repeat(None)))):
            table[key] = len(table)
        ids = list(map(table.get, keys))
    return ids


def _present(values: list[Any]) -> np.ndarray:
    """Positions of the values that are not None."""
    return np.flatnonzero(np.fromiter(map(is_not, values, repeat(None)), bool, len(values)))


def _canonical(value: Any) -> Any:
    """A pid or tid written as digits is the same thread as the number: 2021 traces
    give ops `"tid": "25738"` and their `[memory]` instants `"tid": 25738`."""
    return int(value) if type(value) is str and value.isdigit() else value


class _LaneIds:
    """Interns (pid, tid) pairs as lane ids, numbered in order of first appearance.

    pid and tid are interned apart (no tuple per event), then looked up together
    in a small (pid, tid) -> lane table; spellings of one thread share a lane."""

    def __init__(self) -> None:
        self.keys: dict[tuple[Any, Any], int] = {}  # (pid, tid) -> lane id
        self.pids: dict[Any, int] = {}
        self.tids: dict[Any, int] = {}
        self.table = np.full((0, 0), -1, np.int32)  # [pid id, tid id] -> lane id

    def __call__(self, events: list[Any]) -> np.ndarray:
        pid = np.array(_intern(self.pids, list(map(_PID, events))), np.intp)
        tid = np.array(_intern(self.tids, list(map(_TID, events))), np.intp)
        if len(self.pids) * len(self.tids) > _MAX_LANE_TABLE:  # many processes and threads
            keys = [
                (_canonical(p), _canonical(t))
                for p, t in zip(map(_PID, events), map(_TID, events), strict=True)
            ]
            return np.array(_intern(self.keys, keys), np.int32)
        table = self.table
        if table.shape[0] < len(self.pids) or table.shape[1] < len(self.tids):
            table = np.full((len(self.pids) * 2, len(self.tids) * 2), -1, np.int32)
            table[: self.table.shape[0], : self.table.shape[1]] = self.table
            self.table = table
        lane = table[pid, tid]
        new = np.flatnonzero(lane < 0)
        if len(new):
            _, first = np.unique(pid[new] * table.shape[1] + tid[new], return_index=True)
            pid_values, tid_values = list(self.pids), list(self.tids)
            for i in new[np.sort(first)].tolist():  # new pairs, in order of appearance
                key = (_canonical(pid_values[pid[i]]), _canonical(tid_values[tid[i]]))
                table[pid[i], tid[i]] = self.keys.setdefault(key, len(self.keys))
            lane = table[pid, tid]
        return lane

    def merge(self, keys: list[tuple[Any, Any]]) -> np.ndarray:
        """Ids here of another interner's keys (listed in its id order), adding new ones."""
        return np.array([self.keys.setdefault(k, len(self.keys)) for k in keys] or [0], np.int32)


class _Builder:
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
        self.lanes = _LaneIds()  # of timed events
        self.flow_lanes = _LaneIds()  # of flow events; merged into `lanes` at the end
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
        parts["name"].append(np.array(_intern(self.names, name_list), np.int32))
        cat = np.array(_intern(self.cats, list(map(_CAT, timed))), np.int32)
        parts["cat"].append(cat)
        lane = self.lanes(timed)
        parts["lane"].append(lane)
        args = list(map(_ARGS, timed))
        ext = _ids(list(map(_EXTERNAL_ID, args)))
        absent = ext == -1
        if absent.any():  # 2021 traces spell it "external id"
            np.copyto(ext, _ids(list(map(_EXTERNAL_ID_OLD, args))), where=absent)
        parts["ext"].append(ext)
        parts["corr"].append(_ids(list(map(_CORRELATION, args))))
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
                _ids(list(map(_STREAM, device_args))),
                _ids(list(map(_DEVICE, device_args))),
            )
        )

    def _sparse_args(self, args: list[Any], name_list: list[str], ts, base: int) -> None:
        """Arguments only some events carry: launch configs, allocator events, shapes."""
        grids = list(map(_GRID, args))
        with_cfg = np.union1d(_present(grids), _present(list(map(_REGISTERS, args))))
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
                    _triples(list(map(_GRID, cfg))),
                    _triples(list(map(_BLOCK, cfg))),
                    _ids(list(map(_REGISTERS, cfg))),
                    _ids(list(map(_SHARED_MEMORY, cfg))),
                    _floats(list(map(_OCCUPANCY, cfg))),
                )
            )
        alloc = _present(list(map(_ALLOC, args)))
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
        for getter, out in ((_DIMS, self.input_dims), (_TYPES, self.input_types)):
            values = list(map(getter, args))
            if values.count(None) < len(values):
                at = _present(values)
                texts = [_json_text(values[i]) for i in at.tolist()]
                out.update(zip((at + base).tolist(), texts, strict=True))
        for getter, out, convert in (
            (_FLOPS, self.flops, as_float),
            (_COPY_BYTES, self.copy_bytes, as_int),
        ):
            values = list(map(getter, args))
            if values.count(None) < len(values):
                for i in _present(values).tolist():
                    out[base + i] = convert(values[i])

    def _untimed(self, events: list[Any]) -> None:
        """Flow events (launch -> device links) and metadata (thread names)."""
        flows = list(compress(events, map(_LAUNCH_FLOW_CATS.__contains__, map(_CAT, events))))
        flows = list(compress(flows, map(_FLOW_PH.__contains__, map(_PH, flows))))
        if flows:
            self.flows["id"].append(_ids(list(map(_ID, flows))))
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
            self.thread_names[(_canonical(ev.pid), _canonical(ev.tid))] = str(args.meta_name)

    def state(self) -> dict[str, Any]:
        """Everything gathered so far, as plain data (for a worker to send back)."""
        return {
            "names": list(self.names),
            "cats": list(self.cats),
            "lanes": list(self.lanes.keys),
            "flow_lanes": list(self.flow_lanes.keys),
            "parts": {k: _joined(v) for k, v in self.parts.items()},
            "device_parts": [tuple(map(np.concatenate, zip(*self.device_parts, strict=True)))]
            if self.device_parts
            else [],
            "kernel_parts": [tuple(map(np.concatenate, zip(*self.kernel_parts, strict=True)))]
            if self.kernel_parts
            else [],
            "flows": {k: _joined(v) for k, v in self.flows.items()},
            "memory_rows": self.memory_rows,
            "input_dims": self.input_dims,
            "input_types": self.input_types,
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
        name_map = np.array(_intern(self.names, state["names"]) or [0], np.int32)
        cat_map = np.array(_intern(self.cats, state["cats"]) or [0], np.int32)
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
        for key in ("input_dims", "input_types", "flops", "copy_bytes"):
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
            _link_flows((flow_id, flow_lane_ids[flow_lane], flow_ts), ts, lane, cat, corr)
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
            kernel_args=_kernel_args(self.kernel_parts),
            memory=_memory(self.memory_rows),
            input_dims=self.input_dims,
            input_types=self.input_types,
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
        first_stream = _first_per_lane(device_lane, stream, n_lanes)
        first_device = _first_per_lane(device_lane, device, n_lanes)
        out = []
        for (pid, tid), lane_id in self.lanes.keys.items():
            if dev_count[lane_id] > 0:
                stream_id = int(first_stream[lane_id])
                stream_id = stream_id if stream_id >= 0 else _stream_from_tid(tid)
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


def _first_per_lane(lane: np.ndarray, values: np.ndarray, n_lanes: int) -> np.ndarray:
    """Per lane, the first non-negative value of an id column (-1 where none)."""
    out = np.full(n_lanes, -1, dtype=np.int64)
    sel = np.flatnonzero(values >= 0)
    found, first = np.unique(lane[sel], return_index=True)
    out[found] = values[sel[first]]
    return out


def _stream_from_tid(tid: Any) -> int | None:
    if isinstance(tid, int):
        return tid
    digits = "".join(ch for ch in str(tid) if ch.isdigit())
    return int(digits) if digits else None


def _link_flows(flows: tuple[np.ndarray, ...], ts, lane, cat, corr) -> None:
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


def _joined(parts: list[np.ndarray]) -> np.ndarray | None:
    return np.concatenate(parts) if parts else None


def _kernel_args(parts: list[tuple[np.ndarray, ...]]) -> KernelArgs:
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


def _triples(values: list[Any]) -> np.ndarray:
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


def _memory(rows: list[tuple]) -> MemoryEvents:
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
