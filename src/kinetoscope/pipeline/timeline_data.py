"""The interactive timeline's data: every host and device event, packed small.

The HTML report draws this on a canvas. Size matters (the file must stay under
1.5x the gzipped trace even at 200k+ events), so the payload is columnar:

- event labels are interned: one table entry per (name, category) pair;
- times are integers in `QUANTUM_US` units relative to the trace start, and
  starts are delta-encoded within a row (a row is one nesting depth of one
  lane: a host thread's call tree or a device stream), so most are short;
- kernel launch arguments and input shapes are sparse, keyed by event number;
- launch -> kernel links are pairs of event numbers.

Rows come from nesting: on a host thread, an event sits one row below the
innermost event still open when it starts (its caller); device events that
overlap on a stream (skewed timestamps) are pushed down the same way. A thread's
Python frames nest among themselves in a lane of their own ("python stack", `of`
the thread). Events
are numbered in payload order (row by row, by start), the numbers the findings'
evidence and the links refer to.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import numpy as np

from ..analysis.kernel_names import display_name
from ..rules.base import Finding
from ..trace import Cat, Trace

#: Time unit of the payload, in us: 10 ns, finer than any time the report prints.
QUANTUM_US = 0.01
#: Evidence within this many us of an event's start (same name) points at that event;
#: rules print times rounded to the ns, and some quote a start rounded further.
MATCH_TOLERANCE_US = 0.5
#: Colour group of each category, as the legend names them.
GROUPS = {
    Cat.CPU_OP: "op",
    Cat.USER_ANNOTATION: "annotation",
    Cat.GPU_ANNOTATION: "annotation",
    Cat.PYTHON: "python",
    Cat.RUNTIME: "runtime",
    Cat.DRIVER: "runtime",
    Cat.DEVICE_SYNC: "sync",
    Cat.KERNEL: "kernel",
    Cat.MEMCPY: "memcpy",
    Cat.MEMSET: "memcpy",
}
_SPACE = re.compile(r"\s+")
GROUP_ORDER = ["op", "annotation", "python", "runtime", "sync", "kernel", "memcpy", "other"]


@dataclass
class _Packed:
    order: np.ndarray  # trace event indices in payload order
    rows: list[list]  # [lane number, depth, count]
    lanes: list[dict]


def timeline_events(
    trace: Trace, findings: list[Finding], steps: list[tuple[str, float, float]]
) -> dict:
    """The JSON-ready payload the report's timeline script reads (see module docstring)."""
    packed = _pack(trace)
    order = packed.order
    start_q = np.rint((trace.ts[order] - trace.start_time) / QUANTUM_US).astype(np.int64)
    dur_q = np.rint(trace.dur[order] / QUANTUM_US).astype(np.int64)
    deltas = start_q.copy()
    offset = 0
    for _, _, count in packed.rows:
        row = slice(offset, offset + count)
        deltas[row][1:] = np.diff(start_q[row])
        offset += count
    keys = trace.name_id[order].astype(np.int64) * 32 + trace.cat[order]
    label_keys, label_of = np.unique(keys, return_inverse=True)
    labels = [[_label(trace, int(k)), _group(int(k))] for k in label_keys]
    number = np.full(len(trace), -1, dtype=np.int64)
    number[order] = np.arange(len(order))
    return {
        "quantum_us": QUANTUM_US,
        "groups": GROUP_ORDER,
        "labels": labels,
        "lanes": packed.lanes,
        "rows": packed.rows,
        "start": deltas.tolist(),
        "dur": dur_q.tolist(),
        "label": label_of.astype(np.int64).tolist(),
        "args": _args(trace, number),
        "links": _links(trace, number),
        "steps": [[label, round(s, 3), round(e, 3)] for label, s, e in steps],
        "findings": _findings(trace, findings, order, start_q),
    }


#: Longest kernel label: a readable name (`display_name`) is far shorter; the cap only
#: bounds names no decoder shortens.
_LABEL_CHARS = 300


def _group(key: int) -> int:
    return GROUP_ORDER.index(GROUPS.get(Cat(key % 32), "other"))


def _label(trace: Trace, key: int) -> str:
    """A kernel as every view names it (`display_name`: no `std::enable_if<...>::type`, the
    CUTLASS wrapper read); any other event as recorded."""
    name = trace.names[key // 32]
    return display_name(name, _LABEL_CHARS) if key % 32 == int(Cat.KERNEL) else name


def _pack(trace: Trace) -> _Packed:
    """Payload order and rows: host lanes first, then device streams, each by nesting depth.

    A host thread's Python frames (with_stack traces) get a lane of their own under the
    thread's: nested 20-40 deep above every op, they would otherwise push the ops, the
    runtime calls and their launch links into the few rows a lane has room for."""
    keep = ~trace.is_instant & (trace.lane_kind > 0) & (trace.cat != int(Cat.MEMORY))
    python = trace.cat == int(Cat.PYTHON)
    lane_rank = {ln.id: (0 if ln.kind == "host" else 1, k) for k, ln in enumerate(trace.lanes)}
    lanes_used = sorted({int(x) for x in np.unique(trace.lane[keep])}, key=lane_rank.get)
    order_parts, rows, lanes = [], [], []
    for lane_id in lanes_used:
        lane = trace.lanes[lane_id]
        on_lane = keep & (trace.lane == lane_id)
        parts = [({"label": lane.label}, on_lane & ~python)]
        if lane.kind == "host" and parts[0][1].any():
            parts.append(({"label": "python stack", "of": lane.label}, on_lane & python))
        elif lane.kind == "host":  # a thread with Python frames only: they are its lane
            parts = [({"label": lane.label}, on_lane)]
        for names, mask in parts:
            idx = np.flatnonzero(mask)
            if not len(idx):
                continue
            # callers first: by start, then the longer (enclosing) event first
            idx = idx[np.lexsort((-trace.dur[idx], trace.ts[idx]))]
            depth = _depths(trace.ts[idx], trace.end[idx])
            by_depth = np.argsort(depth, kind="stable")
            idx, depth = idx[by_depth], depth[by_depth]
            counts = np.bincount(depth)
            lanes.append({**names, "kind": lane.kind, "rows": len(counts)})
            rows.extend([len(lanes) - 1, d, int(c)] for d, c in enumerate(counts))
            order_parts.append(idx)
    order = np.concatenate(order_parts) if order_parts else np.zeros(0, dtype=np.int64)
    return _Packed(order, rows, lanes)


def _depths(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Nesting depth of each interval (sorted by start, enclosing first): the number of
    earlier intervals still open when it starts, counting only a chain of enclosing ones."""
    depth = np.zeros(len(starts), dtype=np.int64)
    open_ends: list[float] = []
    for k, (s, e) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
        while open_ends and open_ends[-1] <= s:
            open_ends.pop()
        depth[k] = len(open_ends)
        open_ends.append(e)
    return depth


def _args(trace: Trace, number: np.ndarray) -> dict:
    """Launch configuration of kernels and recorded input shapes, keyed by event number.

    Interned: most kernels share a launch configuration and most ops a shape list,
    so each distinct entry is stored once (`table`) and events point at it
    (`events` delta-encoded, `entry` indices into `table`)."""
    ka = trace.kernel_args
    entries: dict[int, dict] = {}
    for k, ev in enumerate(ka.index.tolist()):
        n = int(number[ev])
        if n < 0:
            continue
        entry = {}
        if ka.grid[k][0] >= 0:
            entry["grid"] = ka.grid[k].tolist()
        if ka.block[k][0] >= 0:
            entry["block"] = ka.block[k].tolist()
        if ka.registers[k] >= 0:
            entry["registers per thread"] = int(ka.registers[k])
        if ka.shared_memory[k] >= 0:
            entry["shared memory"] = int(ka.shared_memory[k])
        if entry:
            entries[n] = entry
    for ev, dims in trace.input_dims.items():
        n = int(number[ev])
        # the trace's own JSON text, often pretty-printed over lines: one line, no spaces
        shapes = _SPACE.sub("", dims) if dims else ""
        if n >= 0 and shapes and shapes != "[]":
            entries.setdefault(n, {})["input shapes"] = shapes
    table: dict[str, int] = {}
    events, entry_of = [], []
    previous = 0
    for n in sorted(entries):
        key = json.dumps(entries[n], sort_keys=True, separators=(",", ":"))
        entry_of.append(table.setdefault(key, len(table)))
        events.append(n - previous)
        previous = n
    return {"table": [json.loads(k) for k in table], "events": events, "entry": entry_of}


def _links(trace: Trace, number: np.ndarray) -> list[int]:
    """Flat [launch, kernel, launch, kernel, ...] event numbers (both in the payload)."""
    launch = trace.launch_of
    dev = np.flatnonzero((launch >= 0) & (number >= 0))
    dev = dev[number[launch[dev]] >= 0]
    pairs = np.stack([number[launch[dev]], number[dev]], axis=1)
    return pairs.ravel().tolist()


def _findings(
    trace: Trace, findings: list[Finding], order: np.ndarray, start_q: np.ndarray
) -> list[dict]:
    """Per finding (in report order): the event numbers its evidence names, and the
    evidence spans [start us, dur us] that no event matched (drawn as ranges)."""
    by_start = np.argsort(start_q, kind="stable")
    sorted_q = start_q[by_start]
    tol = MATCH_TOLERANCE_US / QUANTUM_US
    out = []
    for f in findings:
        events, spans = [], []
        for ev in f.evidence:
            if ev.ts_us is None:
                continue
            q = ev.ts_us / QUANTUM_US
            lo, hi = np.searchsorted(sorted_q, [q - tol, q + tol + 1])
            hits = [int(by_start[k]) for k in range(lo, hi)]
            if ev.name:
                hits = [h for h in hits if trace.name(int(order[h])) == ev.name]
            if hits:
                events.append(min(hits, key=lambda h: abs(start_q[h] - q)))
            else:
                spans.append([round(ev.ts_us, 3), round(ev.dur_us or 0.0, 3)])
        out.append({"events": events, "spans": spans})
    return out
