"""`--max-memory`: when to load a trace out of core (columns in files, `spill.py`).

The in-memory path's peak is projected from the size of the JSON text, which
the load reads once: `BASE_BYTES + BYTES_PER_BYTE * text bytes`. Both numbers
were measured (docs/benchmarks.md, "Bounded memory"): peak RSS of `explain`
in memory mode on traces from 1 KB to 1 GB. When that projection exceeds the
budget (`--max-memory SIZE`) or the RAM the machine has available now
(`MemAvailable` in /proc/meminfo), the out-of-core path is taken. Without /proc
only the budget counts; without a size (standard input, a pipe) an explicit
budget means out of core and `auto` means in memory, as before.
"""

from __future__ import annotations

import math
import os
import re
import zlib
from pathlib import Path

from ..errors import UsageError
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
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([KMGT]?)(?:I?B)?\s*$", re.IGNORECASE)
#: the CLI's help for the options (explain and summary)
MAX_MEMORY_HELP = (
    "Memory budget, e.g. 2GB, 512MB, 1.5G; a trace whose in-memory load would "
    "need more (or more than the RAM available: auto, the default) is loaded out "
    "of core, its columns in temporary files. Same results."
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


def plan(path: Path, budget: int | None) -> str | None:
    """The out-of-core reason for loading `path` under `budget` (`parse_size` of
    `--max-memory`; None: auto), or None."""
    return out_of_core_reason(text_bytes(path), budget, available_ram())


def _mb(size: int) -> str:
    return f"{size / (1 << 20):,.0f} MB" if size >= 1 << 20 else f"{size:,} bytes"
