"""The memory budget: when to load a trace out of core, and when to refuse it.

Every load runs within a budget: `--max-memory SIZE`, or by default (`auto`) the
RAM the machine has available now (`MemAvailable` in /proc/meminfo; no budget
where the system does not say). Two projections, both measured
(docs/benchmarks.md, "Bounded memory" and "A limit, not a path"):

- The in-memory load's peak from the size of the JSON text, which the load reads
  once: `BASE_BYTES + BYTES_PER_BYTE * text bytes`. Over the budget, the
  out-of-core path is taken (columns in files, `spill.py`). Without a size
  (standard input, a pipe) an explicit budget means out of core and `auto` means
  in memory.
- The analyses' peak from the number of timed events, whichever path loaded them:
  `BASE_BYTES + BYTES_PER_EVENT * events`. Out of core the load itself stays near
  the base, but what the analyses compute per event is anonymous memory. The load
  counts events as it streams them (`EventLimit.check` after each batch) and
  refuses, one line that says how many events fit, as soon as the projection
  passes the budget: early, while the spill files are still small.

Where the process is kinetoscope's own (the console entry, `arm_backstop`), an
explicit budget is also a hard limit: `hold` sets `RLIMIT_DATA` (Linux >= 4.7
counts private writable mappings, malloc's and numpy's, not the file-backed spill
maps), so what the projection misses ends in a MemoryError the CLI turns into one
line (`backstop_line`) instead of taking the machine's memory.
"""

from __future__ import annotations

import math
import os
import re
import zlib
from pathlib import Path

from ..errors import OverBudget, UsageError
from .source import is_regular_file

#: interpreter, numpy and the analysis modules: `explain` of a 1 KB trace peaks at 55 MB
BASE_BYTES = 64 << 20
#: peak RSS of `explain` in memory mode per byte of JSON text beyond the base: 0.78
#: on a 63 MB corpus trace and 0.81 on the 1 GB bench trace when it was set
#: (docs/benchmarks.md, "Bounded memory"); 0.52, 0.60, 0.63 and 0.58 on the 63 MB,
#: 206 MB, 1 GB and 5 GB traces since the per-event temporaries went ("peak memory").
#: Kept: it errs towards out of core, and the factor grows with events per byte,
#: which those few traces do not span
BYTES_PER_BYTE = 0.85
#: peak RSS of `explain` per timed event, beyond the base (`ru_maxrss`; docs/benchmarks.md,
#: "A limit, not a path"). Out of core: 374 bytes on tiny host events
#: (`bench/make_tiny.py`: 419 MiB at 1M events, 1,133 MiB at 3M), 150 on a realistic
#: trace (`bench/make_large.py --sizes 100`: 119 MiB at 408,798 events). In memory the
#: columns are anonymous too: 421 and 394 bytes (464 and 1,188 MiB) on the same tiny
#: traces. The worst case, rounded up: a budget is kept, at the price of refusing
#: realistic traces that would have fitted in about half of it
BYTES_PER_EVENT = 450
#: what the backstop allows beyond the budget (`hold`): mapped but never resident
#: (thread stacks, allocator arenas) measured at the moment, plus this for threads
#: started later
_BACKSTOP_MARGIN = 32 << 20
_BACKSTOP: dict[str, int | str | bool | None] = {"armed": False, "bytes": None, "what": None}
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([KMGT]?)(?:I?B)?\s*$", re.IGNORECASE)
#: the CLI's help for the options (explain and summary)
MAX_MEMORY_HELP = (
    "Memory budget, e.g. 2GB, 512MB, 1.5G (default auto: the RAM available). A trace "
    "whose in-memory load would need more is loaded out of core, its columns in "
    "temporary files (same results); one whose analyses would need more is refused, "
    "saying how many events fit."
)
SPILL_DIR_HELP = "Folder for the out-of-core path's temporary files (default: $TMPDIR)."
_SAMPLE = 1 << 20  # compressed bytes read to estimate a gzip file's ratio
_SAMPLE_TEXT = 32 << 20  # text inflated from them at most


def parse_size(text: str | int | None) -> int | None:
    """Bytes in `2GB`, `512MB`, `1.5G`, `800k`, `1GiB` (powers of 1024), or None for
    `auto` (and None). Anything else is a `UsageError` naming the value."""
    if text is None or isinstance(text, int) and not isinstance(text, bool):
        if isinstance(text, int) and text < 0:
            raise UsageError(f"--max-memory {text}: must not be negative")
        return text
    if not isinstance(text, str):
        raise UsageError(f"--max-memory {text!r}: give a size such as 2GB, 512MB, 1.5G, or auto")
    if text.strip().lower() == "auto":
        return None
    match = _SIZE.match(text)
    size = float(match.group(1)) * _UNITS[match.group(2).upper()] if match else math.inf
    if not math.isfinite(size):  # 400 digits read as a float are infinite: no size
        shown = text if len(text) <= 40 else text[:40] + "..."
        raise UsageError(f"--max-memory {shown!r}: give a size such as 2GB, 512MB, 1.5G, or auto")
    return int(size)


def check_spill_dir(folder: str | os.PathLike | None) -> None:
    """Refuse a `--spill-dir` that is not an existing folder, before any reading (the
    out-of-core load met it only once it began, as an internal FileNotFoundError)."""
    if folder is not None and not os.path.isdir(folder):
        raise UsageError(f"--spill-dir {os.fspath(folder)}: not a folder (give an existing one)")


def available_ram(meminfo: str = "/proc/meminfo") -> int | None:
    """`MemAvailable` in bytes: what can be allocated without swapping; None where
    the system does not say (not Linux, an old kernel, a sandbox without /proc)."""
    try:
        with open(meminfo, encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def text_bytes(path: Path) -> int | None:
    """Size of the JSON text in `path`, estimated for gzip; None when unknown.

    gzip's trailer (ISIZE) holds the size mod 2^32, so it is exact only below 4
    GiB; the compression ratio of the first MiB times the file size says which
    side of that the text lies, and is the estimate above it."""
    if not is_regular_file(path):
        return None
    try:
        size = path.stat().st_size
        with open(path, "rb") as handle:
            head = handle.read(_SAMPLE)
            if head[:2] != b"\x1f\x8b":
                return size
            handle.seek(max(size - 4, 0))
            isize = int.from_bytes(handle.read(4), "little")
    except OSError:
        return None
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:  # at most _SAMPLE_TEXT out: a bomb's first MiB inflates to a GiB
        inflated = inflater.decompress(head, _SAMPLE_TEXT)
    except zlib.error:
        return size  # damaged: the load itself will say so
    used = len(head) - len(inflater.unconsumed_tail)
    ratio = len(inflated) / max(used, 1)
    estimate = int(size * ratio)
    return isize if estimate < (3 << 30) and isize >= len(inflated) else estimate


def projected_peak(text: int) -> int:
    """Peak RSS the in-memory path is expected to reach for `text` bytes of JSON."""
    return BASE_BYTES + int(BYTES_PER_BYTE * text)


def out_of_core_reason(text: int | None, budget: int | None, available: int | None) -> str | None:
    """Why the out-of-core path is taken, or None to load in memory.

    `text`: JSON bytes (None: unknown); `budget`: `--max-memory` in bytes (None:
    auto); `available`: `MemAvailable` (None: unknown)."""
    if text is None:  # a pipe or standard input: read once, size unknown in advance
        if budget is None:
            return None
        return f"out of core: the input's size is unknown and --max-memory {_mb(budget)} was given"
    peak = projected_peak(text)
    if budget is not None and peak > budget:
        return (
            f"out of core: the in-memory load would peak near {_mb(peak)} "
            f"(over --max-memory {_mb(budget)})"
        )
    if available is not None and peak > available:
        return (
            f"out of core: the in-memory load would peak near {_mb(peak)} "
            f"(over the {_mb(available)} of RAM available)"
        )
    return None


def analysis_peak(events: int) -> int:
    """Peak RSS the analyses are expected to reach for `events` timed events."""
    return BASE_BYTES + BYTES_PER_EVENT * events


def events_within(limit: int) -> int:
    """How many timed events the analyses are expected to fit in `limit` bytes."""
    return max((limit - BASE_BYTES) // BYTES_PER_EVENT, 0)


class EventLimit:
    """The budget the analyses' projection is held to while a trace is loaded.

    `budget`: `--max-memory` in bytes (None: auto, and then `available`, the RAM
    available, is the limit; None too: no limit)."""

    def __init__(self, budget: int | None, available: int | None) -> None:
        self.explicit = budget is not None
        self.limit = budget if budget is not None else available

    def check(self, name: str, events: int, *, so_far: bool = False) -> None:
        """Raise `OverBudget` naming `name` when `events` (`so_far`: counted before
        the end of the file) would take the analyses past the limit."""
        if self.limit is None or analysis_peak(events) <= self.limit:
            return
        counted = f"at least {events:,} events" if so_far else f"{events:,} events"
        fit = events_within(self.limit)
        if self.explicit:
            over = f"over --max-memory {_mb(self.limit)}"
            advice = "give a larger --max-memory"
        else:
            over = f"over the {_mb(self.limit)} of RAM available"
            advice = "give --max-memory SIZE to try anyway"
        raise OverBudget(
            f"{name}: {counted} would need about {_mb(analysis_peak(events))} to analyse, "
            f"{over} (about {fit:,} events fit): cut a window with `kinetoscope slice` "
            f"or {advice}"
        )


def arm_backstop() -> None:
    """This process is kinetoscope's own (the console entry): `hold` may limit it.
    Never called for the library, an in-process test runner, or the commands that
    run the user's workload (`profile`, `tune`, `sweep` do not call `hold`)."""
    _BACKSTOP["armed"] = True


def hold(budget: int | None, what: str = "the --max-memory budget") -> None:
    """Make an explicit budget a hard limit on this process (`RLIMIT_DATA`), where
    `arm_backstop` said the process is ours; a no-op otherwise, for `auto`, and
    where the platform has no such limit. `what` names the budget in the line."""
    if not _BACKSTOP["armed"] or budget is None:
        return
    try:
        import resource
    except ImportError:  # not POSIX
        return
    limit = budget + _unresident() + _BACKSTOP_MARGIN
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    if soft != resource.RLIM_INFINITY:
        limit = min(limit, soft)  # a caller's own tighter limit stays
    try:
        resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))
    except (OSError, ValueError):
        return
    _BACKSTOP["bytes"] = budget
    _BACKSTOP["what"] = what


def backstop_line() -> str | None:
    """What a MemoryError means once `hold` set the limit (None: it did not)."""
    budget, what = _BACKSTOP["bytes"], _BACKSTOP["what"]
    if not isinstance(budget, int):
        return None
    larger = " or give a larger --max-memory" if what == "the --max-memory budget" else ""
    return (
        f"ran past {what} of {_mb(budget)} and was stopped: cut a window with "
        f"`kinetoscope slice`{larger}"
    )


def _unresident(status: str = "/proc/self/status") -> int:
    """Private writable memory mapped but not resident now (`VmData - RssAnon`):
    thread stacks and allocator reservations `RLIMIT_DATA` counts and RSS does not."""
    fields = {}
    try:
        with open(status, encoding="ascii", errors="replace") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                if key in ("VmData", "RssAnon"):
                    fields[key] = int(value.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        return 0
    return max(fields.get("VmData", 0) - fields.get("RssAnon", 0), 0)


def _mb(size: int) -> str:
    return f"{size / (1 << 20):,.0f} MB" if size >= 1 << 20 else f"{size:,} bytes"
