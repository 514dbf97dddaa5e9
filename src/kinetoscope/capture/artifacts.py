"""Write what one profiling cycle produced: the trace (with our metadata) and the table.

The trace comes from torch's own `export_chrome_trace`; the run's metadata goes
into the trace's top-level object under `"kinetoscope"` (Kineto's top level
allows extra keys; `kinetoscope.load` exposes it as `trace.meta.kinetoscope`).
The key is spliced in while streaming the exported file to its destination, so
the trace is never parsed nor held in memory, and gzip happens in the same pass.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from isal import igzip

from ..errors import UsageError

_CHUNK = 1 << 20


def output_dir(path: Path) -> Path:
    """Create the output folder up front, so an unwritable --out fails before any work."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(
            f"{path}: cannot create the output folder ({exc.strerror or exc})"
        ) from None
    return path


def write_trace(prof, path: Path, meta: dict, gzip: bool = False) -> Path:
    """Export `prof`'s last cycle to `path` (`.gz` appended when `gzip`), metadata included."""
    path = Path(str(path) + ".gz") if gzip and not str(path).endswith(".gz") else Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, raw = tempfile.mkstemp(prefix=".export-", suffix=".json", dir=path.parent)
    os.close(handle)
    try:
        prof.export_chrome_trace(raw)
        with open(raw, "rb") as src, _open_out(path, gzip) as dst:
            _splice_meta(src, dst, meta)
    finally:
        os.unlink(raw)
    return path


def _open_out(path: Path, gzip: bool):
    return igzip.open(path, "wb") if gzip else open(path, "wb")


def _splice_meta(src, dst, meta: dict) -> None:
    """Copy the JSON object from src to dst with `"kinetoscope": meta` as its first key."""
    head = src.read(_CHUNK)
    brace = head.find(b"{")
    if brace < 0:
        raise ValueError("the profiler's exported trace does not start with a JSON object")
    entry = json.dumps({"kinetoscope": meta}, default=str)[1:-1]
    dst.write(head[: brace + 1] + b"\n  " + entry.encode() + b"," + head[brace + 1 :])
    shutil.copyfileobj(src, dst, _CHUNK)


def table_sort_key(on_device: bool) -> str:
    """Sort the table by device time where kernels were recorded, else by CPU time."""
    return "device_time_total" if on_device else "cpu_time_total"


def write_table(prof, path: Path, on_device: bool) -> Path:
    """The profiler's own `key_averages().table()`, every row, as a text file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    table = prof.key_averages().table(sort_by=table_sort_key(on_device), row_limit=-1)
    path.write_text(table + "\n", encoding="utf-8")
    return path
