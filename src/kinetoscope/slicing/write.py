"""`slice_trace`: two streaming passes over a trace, writing a smaller valid one.

Pass one (`plan.survey`) decides; pass two copies the kept events' bytes
verbatim into a temporary file next to the output, renamed into place only when
complete, so a crash or Ctrl-C never leaves a half-written slice and the input
is never written to. Memory holds one scan buffer (a few MB), the top-level
metadata, and the plan's per-launch numbers, never the document.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import msgspec
import numpy as np
from isal import igzip

from ..errors import TraceError, input_name
from ..files.outputs import is_stdout, write_file
from ..trace.decode import DEEP_PROBLEM, EventStream
from ..trace.json_strings import OutsideStrings
from ..trace.repair import flatten_deep, replace_lone_surrogates
from ..trace.schema import TOP_KEYS
from ..trace.source import is_regular_file, is_stdin, trace_chunks
from ..trace.stack import decoder_stack
from ..trace.top_decode import CONTROL_RE
from ..trace.utf8 import utf8_problem
from .columns import Classifier
from .plan import Plan, Selection, survey
from .scan import Batch, EventScanner, ScanError
from .spool import spooled

#: the control characters JSON allows outside strings: tab, LF, CR
_JSON_WHITESPACE = (9, 10, 13)

#: top-level key saying what the slice was cut from (Perfetto ignores unknown keys)
SLICE_KEY = "kinetoscopeSlice"
REPAIRS = "bytes not UTF-8 as U+FFFD, control characters as spaces, unpaired surrogates as \\ufffd"


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
    warnings: list[str]  # what was repaired or ignored on the way (the loader's words)


def slice_trace(path: Path, selection: Selection, output: Path, force: bool = False) -> SliceResult:
    """Write the part of `path` that `selection` asks for to `output` (gzip if it
    ends in .gz; `-`: standard output), or to `output_2`, ... where `output` exists
    and not `force` (`SliceResult.output` says where); see `plan.py` for what is kept.

    Standard input (`-`), a FIFO or `/dev/fd/N` can be read only once: it is
    first copied as it is (still compressed) to a temporary file, removed after,
    within bounds (`spool.py`)."""
    _check_input(path)
    try:
        with decoder_stack():  # what is dropped as too deep, whoever raised the limit
            if is_regular_file(path):
                return _slice(path, path, selection, output, force)
            with spooled(path) as copy:
                return _slice(path, copy, selection, output, force)
    except ScanError as exc:
        raise TraceError(path, f"not a Kineto trace: {exc}") from None


def _slice(name: Path, path: Path, selection: Selection, output: Path, force: bool) -> SliceResult:
    """Slice `path` (`name` is what the user gave: `-` for a spooled stdin) into
    `output` through `files.outputs.write_file`, as every command writes: a temporary
    file renamed into place, never over the input or an existing file without
    `force` (`_2` then), its mode from the umask; `-` is standard output."""
    warnings: list[str] = []
    stream = EventStream(input_name(name), warnings)
    classifier = Classifier(stream, selection.drop)
    scanner = EventScanner()
    batches = _batches(path, scanner, warnings)
    plan = survey(batches, classifier, selection, lambda: bytes(scanner.top))
    head, repaired = valid_json_text(_head(name, plan, selection))
    counts = {"events": 0, "repaired": repaired, "bytes": 0}

    def write(raw) -> None:
        sink = igzip.open(raw, "wb", compresslevel=2) if output.name.endswith(".gz") else raw
        with sink if sink is not raw else contextlib.nullcontext():
            _copy(sink, head, path, plan, name, selection, stream, counts)

    written = write_file(output, write, force=force, inputs=[] if is_stdin(name) else [name])
    if counts["repaired"]:
        warnings.append(
            f"{counts['repaired']} place(s) were made valid JSON text in the slice ({REPAIRS})"
        )
    lo, hi = plan.window
    return SliceResult(
        source=name,
        output=written,
        source_bytes=path.stat().st_size,
        source_json_bytes=scanner.offset,
        output_bytes=counts["bytes"] if is_stdout(written) else written.stat().st_size,
        events_in=plan.events,
        events_out=counts["events"],
        steps=plan.steps,
        window_rel_us=(max(lo, plan.start) - plan.start, hi - plan.start),
        warnings=warnings,
    )


def _copy(sink, head: bytes, path: Path, plan: Plan, name: Path, selection: Selection,
          stream: EventStream, counts: dict) -> None:  # fmt: skip
    """Pass two: the head, then the kept events' bytes, each piece made valid JSON text."""
    sink.write(head)
    counts["bytes"] += len(head)
    separator = b""
    quiet = EventStream(input_name(name), [])  # pass one warned already
    second = Classifier(quiet, selection.drop)
    for batch in _batches(path, EventScanner(), []):
        kept = plan.keep(second.columns(batch)).nonzero()[0].tolist()
        if kept:
            data, starts, ends = batch.data, batch.starts, batch.ends
            text = b",\n".join([data[starts[k] : ends[k]] for k in kept])
            if "deep" in stream.repairs:  # drop them from the slice too
                text = flatten_deep(text, value_level=3)[0]
            text, fixed = valid_json_text(text)
            sink.write(separator)
            sink.write(text)
            counts["bytes"] += len(separator) + len(text)
            separator = b",\n"
            counts["events"] += len(kept)
            counts["repaired"] += fixed
    sink.write(b"\n]}\n")
    counts["bytes"] += 4


def valid_json_text(text: bytes) -> tuple[bytes, int]:
    """`text` as strict JSON in valid UTF-8, and how many pieces were changed.

    The bytes are copied verbatim, but the decoder reads only the fields it
    needs: a string it skips may hold bytes that are not UTF-8, a raw control
    character or an unpaired surrogate escape. Those become U+FFFD, a space and
    `\\ufffd` (the loader's repairs), so every reader can open the slice."""
    text, changed = _controls_in_strings_as_spaces(text)
    text, surrogates = replace_lone_surrogates(text)
    changed += surrogates
    try:
        text.decode("utf-8")
    except UnicodeDecodeError:
        fixed = text.decode("utf-8", "replace")
        changed += fixed.count("\ufffd") - text.count("\ufffd".encode())
        text = fixed.encode("utf-8")
    return text, changed


def _controls_in_strings_as_spaces(text: bytes) -> tuple[bytes, int]:
    """Raw control characters as spaces, where JSON forbids them: all of them inside
    strings, and outside strings all but the whitespace JSON allows (tab, LF, CR),
    as the loader reads them. A block at a time (`OutsideStrings`): whole-text quote
    arrays ran out of memory on a 90 MB string of backslashes (the fuzz)."""
    if not CONTROL_RE.search(text):
        return text, 0
    raw = np.frombuffer(text, np.uint8)
    bad = raw < 32
    bad[OutsideStrings().marks(raw, _JSON_WHITESPACE)] = False
    changed = int(np.count_nonzero(bad))
    if not changed:
        return text, 0
    out = raw.copy()
    out[bad] = 32
    return out.tobytes(), changed


def _check_input(path: Path) -> None:
    if not is_stdin(path) and not path.exists():
        raise TraceError(path, "no such file")
    if path.is_dir():
        raise TraceError(path, "is a directory, not a trace file")


def _batches(path: Path, scanner: EventScanner, warnings: list[str]) -> Iterator[Batch]:
    """The trace's events in batches, decompressing as a stream. The source's
    warnings (a gzip trailer that does not match, bytes after the gzip data) are
    kept; a text cut off early fails the scanner's check that it is complete."""
    for piece in trace_chunks(path, warnings):
        if (batch := scanner.feed(piece)) is not None:
            yield batch
    if (batch := scanner.finish()) is not None:
        yield batch


def _head(path: Path, plan: Plan, selection: Selection) -> bytes:
    """The top-level object up to the events array: every metadata key of the input
    (deviceProperties, distributedInfo, baseTimeNanoseconds, traceName, ...) and
    the slice's own description."""
    try:
        top = TOP_KEYS.decode(plan.top)
    except msgspec.DecodeError as exc:
        raise TraceError(path, f"the top-level object is not valid JSON ({exc})") from None
    except UnicodeDecodeError as exc:
        raise TraceError(path, utf8_problem(exc)) from None
    except RecursionError:
        raise TraceError(path, DEEP_PROBLEM) from None
    encode = msgspec.json.encode
    about = {
        "source": input_name(path) if is_stdin(path) else path.name,
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
