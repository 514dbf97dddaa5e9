"""Load a large uncompressed trace on two cores: each half in its own process.

Building the columns costs about three times the JSON decoding itself and is
Python-level work, so one process uses one core. Above a size threshold the
file is cut in two at an event boundary near its middle; a forked worker reads,
decodes and builds the second half from the file itself (the parent never
holds its text) while the parent does the first half, then sends its columns
and intern tables back through a pipe and the parent merges them
(`TraceBuilder.absorb`). The result is identical to a one-pass load.

Anything unusual makes the split give up and the caller load in one pass, which
then reports the problem exactly as it always does: a cut that was not an
event boundary, a file cut off early (its warning counts every event), any
error in either half, a worker that dies.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import TraceError
from .cuts import events_head, first_boundary
from .decode import EventStream, NotSplittable
from .source import plain_range

#: files smaller than this load in one pass (the fork and the merge cost ~0.1 s)
SPLIT_MIN_BYTES = 64 << 20
_HEAD_MAX = 1 << 20  # bytes searched for `"traceEvents": [`
_WINDOW = 1 << 20  # bytes searched for an event boundary after the middle


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def split_point(path: Path) -> tuple[bytes, int, int] | None:
    """(head text, end of the first half, start of the second half), or None."""
    size = path.stat().st_size
    with open(path, "rb") as handle:
        head = events_head(handle.read(_HEAD_MAX))
        if head is None:
            return None
        middle = len(head) + (size - len(head)) // 2
        handle.seek(middle)
        cut = first_boundary(handle.read(_WINDOW))
    if cut is None:
        return None
    return head, middle + cut[0], middle + cut[1]


def build_split(path: Path, new_builder: Callable[[str], Any]):
    """(builder, top-level object, events decoded, warnings) of the whole file, or
    None when the file is not split (see the module docstring)."""
    point = split_point(path)
    if point is None:
        return None
    head, first_end, second_start = point
    read_fd, write_fd = os.pipe()
    try:
        pid = os.fork()
    except OSError:  # no process to be had (limits, memory): one pass it is
        os.close(read_fd)
        os.close(write_fd)
        return None
    if pid == 0:  # the worker: never returns
        os.close(read_fd)
        _worker(path, head, second_start, new_builder, write_fd)
    os.close(write_fd)
    reaped = False
    try:
        with os.fdopen(read_fd, "rb") as results:
            warnings: list[str] = []
            stream = EventStream(str(path), warnings)
            builder = new_builder(str(path))
            for batch in stream.prefix_batches(plain_range(path, 0, first_end)):
                builder.add(batch)
            second = pickle.load(results)
        os.waitpid(pid, 0)
        reaped = True
    except (NotSplittable, TraceError, EOFError, pickle.UnpicklingError):
        return None
    finally:
        if not reaped:  # the parent failed first, or the worker died: stop and reap it
            kill_and_reap(pid)
    if second is None:
        return None
    state, top, count, second_warnings = second
    builder.absorb(state)
    warnings.extend(w for w in second_warnings if w not in warnings)
    return builder, top, stream.count + count, warnings


def _worker(
    path: Path, head: bytes, start: int, new_builder: Callable[[str], Any], write_fd: int
) -> None:
    """Build the second half and send (state, top, count, warnings), or None when it
    cannot be done on its own; exit without running any of the parent's clean-up."""
    code = 1
    try:
        with os.fdopen(write_fd, "wb") as out:
            try:
                warnings: list[str] = []
                stream = EventStream(str(path), warnings)
                builder = new_builder(str(path))
                for batch in stream.suffix_batches(plain_range(path, start), head, start):
                    builder.add(batch)
                result = (builder.state(), stream.top, stream.count, warnings)
            except (NotSplittable, TraceError):
                result = None
            pickle.dump(result, out, protocol=pickle.HIGHEST_PROTOCOL)
        code = 0
    finally:
        os._exit(code)


def kill_and_reap(pid: int) -> None:
    """End a forked worker that has not finished (the other side failed first) and
    reap it, so no zombie and no orphan outlives the call."""
    with contextlib.suppress(ProcessLookupError):  # already exited
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
