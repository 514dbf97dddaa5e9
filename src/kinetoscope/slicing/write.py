"""`slice_trace`: two streaming passes over a trace, writing a smaller valid one.

Pass one (`plan.survey`) decides; pass two copies the kept events' bytes
verbatim into a temporary file next to the output, renamed into place only when
complete, so a crash or Ctrl-C never leaves a half-written slice and the input
is never written to. Memory holds one scan buffer (a few MB), the top-level
metadata, and the plan's per-launch numbers, never the document.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import msgspec
from isal import igzip

from ..errors import TraceError, UsageError
from ..trace.source import trace_chunks
from .columns import Classifier
from .plan import Plan, Selection, survey
from .scan import Batch, EventScanner, ScanError

#: top-level key saying what the slice was cut from (Perfetto ignores unknown keys)
SLICE_KEY = "kinetoscopeSlice"


@dataclass
class SliceResult:
    source: Path
    output: Path
    source_bytes: int  # on disk
    source_json_bytes: int  # decompressed
    output_bytes: int  # on disk
    events_in: int
    events_out: int
    steps: list[int]
    window_rel_us: tuple[float, float]  # from the trace start, as Perfetto shows


def slice_trace(path: Path, selection: Selection, output: Path, force: bool = False) -> SliceResult:
    """Write the part of `path` that `selection` asks for to `output` (gzip if it
    ends in .gz); see `plan.py` for what is kept."""
    _check_paths(path, output, force)
    try:
        return _slice(path, selection, output)
    except ScanError as exc:
        raise TraceError(path, f"not a Kineto trace: {exc}") from None


def _slice(path: Path, selection: Selection, output: Path) -> SliceResult:
    classifier = Classifier(selection.drop)
    scanner = EventScanner()
    plan = survey(_batches(path, scanner), classifier, selection, lambda: bytes(scanner.top))
    head = _head(path, plan, selection)
    events_out = 0
    fd, tmp_name = tempfile.mkstemp(dir=output.parent, prefix=f".{output.name}.", suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as raw:
            sink = igzip.open(raw, "wb", compresslevel=2) if output.name.endswith(".gz") else raw
            with sink if sink is not raw else contextlib.nullcontext():
                sink.write(head)
                separator = b""
                for batch in _batches(path, EventScanner()):
                    kept = plan.keep(classifier.columns(batch)).nonzero()[0].tolist()
                    if kept:
                        data, starts, ends = batch.data, batch.starts, batch.ends
                        sink.write(separator)
                        sink.write(b",\n".join([data[starts[k] : ends[k]] for k in kept]))
                        separator = b",\n"
                        events_out += len(kept)
                sink.write(b"\n]}\n")
        os.replace(tmp, output)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    lo, hi = plan.window
    return SliceResult(
        source=path,
        output=output,
        source_bytes=path.stat().st_size,
        source_json_bytes=scanner.offset,
        output_bytes=output.stat().st_size,
        events_in=plan.events,
        events_out=events_out,
        steps=plan.steps,
        window_rel_us=(max(lo, plan.start) - plan.start, hi - plan.start),
    )


def _check_paths(path: Path, output: Path, force: bool) -> None:
    if not path.exists():
        raise TraceError(path, "no such file")
    if not path.is_file():
        raise TraceError(
            path, "slice reads its input twice: give a regular file (not a directory or a pipe)"
        )
    if output.exists():
        with contextlib.suppress(OSError):
            if output.samefile(path):
                raise UsageError(f"{output}: is the input trace; choose another -o file")
        if output.is_dir():
            raise UsageError(f"{output}: is a directory; -o names the slice file")
        if not force:
            raise UsageError(f"{output}: exists; pass --force to replace it")
    if not output.parent.is_dir():
        raise UsageError(f"{output.parent}: no such directory for -o")


def _batches(path: Path, scanner: EventScanner) -> Iterator[Batch]:
    """The trace's events in batches, decompressing as a stream."""
    warnings: list[str] = []
    for piece in trace_chunks(path, warnings):
        if (batch := scanner.feed(piece)) is not None:
            yield batch
    if warnings:
        raise TraceError(path, f"{warnings[0]}; slice needs a complete trace")
    if (batch := scanner.finish()) is not None:
        yield batch


def _head(path: Path, plan: Plan, selection: Selection) -> bytes:
    """The top-level object up to the events array: every metadata key of the input
    (deviceProperties, distributedInfo, baseTimeNanoseconds, traceName, ...) and
    the slice's own description."""
    try:
        top = msgspec.json.decode(plan.top, type=dict[str, msgspec.Raw])
    except msgspec.DecodeError as exc:
        raise TraceError(path, f"the top-level object is not valid JSON ({exc})") from None
    encode = msgspec.json.encode
    about = {
        "source": path.name,
        "selection": selection.describe(),
        "steps": plan.steps,
        "window_us_from_start": [
            round(max(plan.window[0], plan.start) - plan.start, 3),
            round(plan.window[1] - plan.start, 3) if plan.window[1] != float("inf") else None,
        ],
        "dropped_categories": sorted(selection.drop),
    }
    parts = [
        encode(k) + b": " + bytes(v) for k, v in top.items() if k not in ("traceEvents", SLICE_KEY)
    ]
    parts.append(encode(SLICE_KEY) + b": " + encode(about))
    return b"{" + b",\n".join(parts) + b',\n"traceEvents": [\n'
