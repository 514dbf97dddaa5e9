"""`load(path) -> Trace`: read, decode and normalise a Kineto trace file."""

from __future__ import annotations

import gc
import os
from contextlib import contextmanager
from pathlib import Path

from .. import progress
from ..errors import TraceError, input_name
from . import cache
from .budget import (
    EventLimit,
    available_ram,
    check_spill_dir,
    out_of_core_reason,
    parse_size,
    text_bytes,
)
from .build import TraceBuilder
from .categories import DEVICE_CATS, HOST_TREE_CATS
from .decode import EventStream
from .model import Trace
from .schema import TopLevel
from .source import GZIP_MAGIC, is_regular_file, report_from, trace_chunks
from .spill import MemoryParts, SpillParts
from .split import SPLIT_MIN_BYTES, build_split, cores
from .stack import DECODE_STACK, decoder_stack
from .steps import long_step_warning
from .top_meta import devices_of, trace_meta
from .utf8 import utf8_problem


def load(
    path: str | os.PathLike,
    *,
    split_min_bytes: int | None = None,
    max_memory: str | int | None = "auto",
    spill_dir: str | os.PathLike | None = None,
    out_of_core: bool = False,
) -> Trace:
    """Load a `.json`, `.json.gz` or `.pt.trace.json[.gz]` file into a `Trace`.

    Raises `TraceError` (one line, names the file) for anything unusable.
    Recoverable damage (truncation, control characters) becomes `Trace.warnings`.
    An uncompressed file of at least `split_min_bytes` is loaded in two halves
    on two cores (`split.py`); by default from `SPLIT_MIN_BYTES` up and only
    when two cores are free to use; an explicit value always tries.

    `max_memory` (`"2GB"`, bytes, or `"auto"`): when the in-memory load is
    projected to need more, or more than the RAM available (`budget.py`), the
    columns are built in files in a private temporary directory under
    `spill_dir` (default: `$TMPDIR`) and mapped back (`spill.py`): one pass, no
    split, the same `Trace`; `Trace.out_of_core` says why. The directory is
    removed before this returns or raises, Ctrl-C included. `out_of_core=True`
    takes that path whatever the budget (the tests and benches compare the paths).

    A regular file read before is not parsed again: its columns are mapped from
    the cache (`cache.py`; `KINETOSCOPE_NO_CACHE=1` turns it off), which gives the
    same `Trace`, in bounded memory on either path.

    `max_memory` is also a limit (`budget.py`): a trace whose analyses are
    projected to need more than it (with `auto`, more than the RAM available) is
    refused with `OverBudget`, during the load as soon as the events read so far
    say so, whichever path loads it.
    """
    path = Path(path)
    budget = parse_size(max_memory)
    check_spill_dir(spill_dir)
    available = available_ram()
    reason = out_of_core_reason(text_bytes(path), budget, available)
    if out_of_core and reason is None:
        reason = "out of core: asked for (out_of_core=True)"
    limit = EventLimit(budget, available)
    trace = cache.fetch(path)
    if trace is None:
        sink = SpillParts(spill_dir) if reason is not None else MemoryParts()
        try:
            trace = _load(path, split_min_bytes, sink, limit)
        finally:
            sink.close()
        cache.store(path, trace)
    limit.check(input_name(path), len(trace))  # a cached or split load counts at the end
    trace.out_of_core = reason
    trace.memory_budget = budget
    return trace


def _load(
    path: Path, split_min_bytes: int | None, sink: MemoryParts | SpillParts, limit: EventLimit
) -> Trace:
    built = None
    gz = path.name.endswith(".gz")
    if is_regular_file(path) and (size := os.stat(path).st_size) >= report_from(gz):
        progress.stage(f"reading {input_name(path)} ({size / (1 << 20):.0f} MiB)")
    with _cyclic_gc_paused(), _decoder_limits(path):
        if not sink.spilled and _split_wanted(path, split_min_bytes):
            built = build_split(path, TraceBuilder)
        if built is None:
            built = _build(path, sink, limit)
    builder, top, count, warnings = built
    if top is None or top.traceEvents is None:
        raise TraceError(path, "is JSON but not a Kineto trace (no 'traceEvents' key)")
    trace = builder.finish(trace_meta(top), devices_of(top), warnings)
    if (long_steps := long_step_warning(trace.names)) is not None:
        trace.warnings.append(long_steps)
    if len(trace) == 0:
        if count == 0:
            raise TraceError(path, "has no events (empty 'traceEvents')")
        raise TraceError(path, "has no timed events (only metadata)")
    if not trace.mask(*HOST_TREE_CATS, *DEVICE_CATS).any():
        raise TraceError(
            path, "is not a PyTorch profiler (Kineto) trace: no operator, runtime or device events"
        )
    return trace


def _build(
    path: Path, sink: MemoryParts | SpillParts, limit: EventLimit
) -> tuple[TraceBuilder, TopLevel | None, int, list[str]]:
    """One pass over the file: (builder fed every event, top-level object, events
    decoded, warnings); refused as soon as the timed events so far are over `limit`."""
    warnings: list[str] = []
    name = input_name(path)
    stream = EventStream(name, warnings)
    builder = TraceBuilder(name, sink)
    for batch in stream.batches(trace_chunks(path, warnings)):
        builder.add(batch)
        limit.check(name, builder.count, so_far=True)
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
            gzipped = handle.read(2) == GZIP_MAGIC
    except OSError:  # missing, a directory, unreadable: the one-pass load says which
        return False
    return not gzipped and size >= (SPLIT_MIN_BYTES if min_bytes is None else min_bytes)


@contextmanager
def _decoder_limits(path: Path):
    """The JSON decoder's own refusals, as the user's input being unusable: bytes
    that are not UTF-8 (`UnicodeDecodeError`, under any msgspec: `utf8`) and `RecursionError`
    for values nested deeper than the stack `decoder_stack` gives it."""
    try:
        with decoder_stack():
            yield
    except UnicodeDecodeError as exc:
        raise TraceError(path, utf8_problem(exc)) from None
    except RecursionError:
        raise TraceError(
            path, f"has values nested too deeply to decode (about {DECODE_STACK} levels)"
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
