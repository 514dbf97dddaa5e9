"""`export_perfetto`: a trace Perfetto shows whole, with kinetoscope's reading on it.

Every event of the input is written (nothing dropped); the few that would be dropped or
mis-nested are moved or clamped (`fix.py`), kinetoscope's findings and critical path are
added as tracks of their own (`tracks.py`), and every piece of text is made strict JSON in
valid UTF-8 (the slicer's `valid_json_text`: control characters, unpaired surrogates,
bytes that are not UTF-8). Events are written in the order Perfetto opens them (by time,
an enclosing slice before what it encloses, a slice before a flow end at its start), so
a tie is read the same way whatever order the importer keeps for equal times. The file
goes through `files.outputs.write_file` (a temporary file renamed into place, never over
the input).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path

import msgspec
import numpy as np
from isal import igzip

from ..errors import TraceError, input_name
from ..files.outputs import write_file
from ..slicing.write import REPAIRS, valid_json_text
from ..trace.repair import flatten_deep
from ..trace.schema import TOP_KEYS
from ..trace.source import is_stdin
from .fix import Fixes, plan_fixes
from .layout import order, to_ns
from .read import Events, read_events
from .tracks import report_events

#: top-level key saying what the export changed (Perfetto ignores unknown keys)
EXPORT_KEY = "kinetoscopePerfetto"
_BLOCK = 4096  # events joined and cleaned at a time


@dataclass
class ExportResult:
    output: Path
    events: int  # of the input, all written
    slices: int  # complete (X) events of the input
    moved: dict[str, int]  # track name -> slices moved to its sub-tracks
    clamped: int
    flows: int  # flow ends moved with their slice
    added: int  # slices of kinetoscope's own tracks
    repaired: int  # pieces of text made valid JSON
    warnings: list[str] = field(default_factory=list)


def export_perfetto(path: Path, output: Path, report=None, force: bool = False) -> ExportResult:
    """Write `path` for Perfetto to `output` (gzip where it ends in .gz); `report` (the
    `explain` report of the same trace) adds the findings and critical-path tracks."""
    events = read_events(path)
    fixes = plan_fixes(events)
    pid = _free_pid(events)
    added = report_events(report, pid) if report is not None else []
    head, repaired = valid_json_text(
        _head(path, events, fixes, sum(1 for e in added if e["ph"] == "X"))
    )
    counts = {"repaired": repaired}

    def write(raw) -> None:
        sink = igzip.open(raw, "wb", compresslevel=2) if output.name.endswith(".gz") else raw
        with sink if sink is not raw else contextlib.nullcontext():
            sink.write(head)
            separator = b""
            for text in _texts(events, fixes, added, counts):
                text, fixed = valid_json_text(text)
                counts["repaired"] += fixed
                sink.write(separator + text)
                separator = b",\n"
            sink.write(b"\n]}\n")

    written = write_file(output, write, force=force, inputs=[] if is_stdin(path) else [path])
    warnings = list(events.warnings)
    if counts["repaired"]:
        warnings.append(f"{counts['repaired']} place(s) were made valid JSON text ({REPAIRS})")
    return ExportResult(
        output=written,
        events=len(events.raw),
        slices=sum(1 for ph in events.ph if ph == "X"),
        moved=dict(fixes.moved),
        clamped=len(fixes.clamped_us),
        flows=fixes.flows,
        added=sum(1 for e in added if e["ph"] == "X"),
        repaired=counts["repaired"],
        warnings=warnings,
    )


def _texts(events: Events, fixes: Fixes, added: list[dict], counts: dict[str, int]):
    """The events' text in blocks: metadata first, then by time as Perfetto opens them
    (`counts`: the repairs made in events rewritten whole, `_rewritten`)."""
    encode = msgspec.json.encode
    ts, dur = events.arrays()
    ts_int, dur_int = events.exact()
    for k, new in fixes.ts.items():
        ts[k], ts_int[k] = new, fixes.ts_int[k]
    timed = ~np.isnan(ts)
    meta = [k for k, ph in enumerate(events.ph) if ph == "M"]
    rest = np.flatnonzero(timed & np.array([ph != "M" for ph in events.ph], bool))
    untimed = np.flatnonzero(~timed & np.array([ph != "M" for ph in events.ph], bool))
    not_slice = np.array([events.ph[k] != "X" for k in rest.tolist()], np.int8)
    sorted_rest = rest[
        order(to_ns(ts[rest], ts_int[rest]), to_ns(dur[rest], dur_int[rest]), not_slice)
    ]
    extra_meta = [encode(e) for e in added if e["ph"] == "M"]
    extra_meta += [
        encode({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}})
        for (pid, tid), name in fixes.sub_tracks.items()
    ]
    yield from _blocks([events.raw[k] for k in meta] + extra_meta)
    chosen = [*sorted_rest.tolist(), *untimed.tolist()]
    for lo in range(0, len(chosen), _BLOCK):
        yield _join(events, fixes, chosen[lo : lo + _BLOCK], counts)
    yield from _blocks([encode(e) for e in added if e["ph"] != "M"])


def _blocks(texts: list[bytes]):
    for lo in range(0, len(texts), _BLOCK):
        yield b",\n".join(texts[lo : lo + _BLOCK])


def _join(events: Events, fixes: Fixes, chosen: list[int], counts: dict[str, int]) -> bytes:
    parts = [
        _rewritten(events, fixes, k, counts) if fixes.changed(k) else events.raw[k] for k in chosen
    ]
    text = b",\n".join(parts)
    return flatten_deep(text, value_level=3)[0] if events.deep else text


def _rewritten(events: Events, fixes: Fixes, k: int, counts: dict[str, int]) -> bytes:
    """Event k with its new tid and start, and a note in args saying why. Its text is made
    valid first, as every copied event is (a field the loader skips may hold bytes that
    are not UTF-8, a raw control character or an unpaired surrogate), and the repairs
    are counted there: the event written back is clean."""
    text, fixed = valid_json_text(events.raw[k])
    counts["repaired"] += fixed
    event = msgspec.json.decode(text)
    args = event.get("args") if isinstance(event.get("args"), dict) else {}
    if k in fixes.ts:
        event["ts"] = int(fixes.ts[k]) if fixes.ts_int[k] else fixes.ts[k]
    if k in fixes.clamped_us:
        args["kinetoscope_clamped_us"] = round(fixes.clamped_us[k], 3)
        args["kinetoscope_note"] = (
            "started before the runtime call that launched it (host/device clock skew): "
            "moved to the launch's start, duration kept"
        )
    if k in fixes.tid and events.ph[k] == "X":
        args["kinetoscope_track"] = f"moved from tid {events.tid[k]}: it overlaps a slice there"
        args.setdefault("kinetoscope_note", "overlapped a slice on its track partially")
    if k in fixes.tid:
        event["tid"] = fixes.tid[k]
    if events.ph[k] == "X":
        event["args"] = args
    return msgspec.json.encode(event)


def _free_pid(events: Events) -> int:
    used = {p for p in events.pid if isinstance(p, int)}
    pid = max((p for p in used if 0 <= p < 1 << 30), default=0) + 1
    while pid in used:
        pid += 1
    return pid


def _head(path: Path, events: Events, fixes: Fixes, added: int) -> bytes:
    """The input's top-level keys (deviceProperties, baseTimeNanoseconds, ...) and what
    the export changed."""
    try:
        top = TOP_KEYS.decode(events.top)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise TraceError(path, f"the top-level object is not valid JSON ({exc})") from None
    encode = msgspec.json.encode
    about = {
        "source": input_name(path) if is_stdin(path) else Path(path).name,
        "moved_to_sub_tracks": dict(fixes.moved),
        "clamped_to_launch": len(fixes.clamped_us),
        "flow_ends_moved": fixes.flows,
        "kinetoscope_slices": added,
    }
    parts = [
        encode(k) + b": " + bytes(v) for k, v in top.items() if k not in ("traceEvents", EXPORT_KEY)
    ]
    parts.append(encode(EXPORT_KEY) + b": " + encode(about))
    return b"{" + b",\n".join(parts) + b',\n"traceEvents": [\n'
