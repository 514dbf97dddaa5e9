"""Write what one profiling cycle produced: the trace (with our metadata) and the table.

The trace comes from torch's own `export_chrome_trace`; the run's metadata goes
into the trace's top-level object under `"kinetoscope"` (Kineto's top level
allows extra keys; `kinetoscope.load` exposes it as `trace.meta.kinetoscope`).
The key is spliced in while streaming the exported file to its destination, so
the trace is never parsed nor held in memory, and gzip happens in the same pass.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from isal import igzip

from ..files.outputs import staged

_CHUNK = 1 << 20


def write_trace(prof, path: Path, meta: dict, gzip: bool = False) -> Path:
    """Export `prof`'s last cycle into `path` (gzip-compressed when `gzip`), metadata
    included. `path` is a staged temporary file; `outputs.publish` names it."""
    with staged(path.parent, ".json") as raw:
        prof.export_chrome_trace(str(raw))
        with open(raw, "rb") as src, _open_out(path, gzip) as dst:
            _splice_meta(src, dst, meta)
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


def table_header(meta: dict) -> str:
    """The run's settings above the table (`# kinetoscope: ...` lines), so the counts the
    file name leaves out (warm-up iterations, schedule, cycle) travel with the table."""
    keys = ("workload", "script", "params", "dtype", "compile", "warmup_iters", "schedule")
    lines = [f"# kinetoscope: {k} = {json.dumps(meta[k])}" for k in keys if k in meta]
    if "cycle" in meta:
        lines.append(f"# kinetoscope: cycle = {meta['cycle']}")
    return "".join(line + "\n" for line in lines)


def write_table(prof, path: Path, on_device: bool, meta: dict | None = None) -> Path:
    """The profiler's own `key_averages().table()`, every row, as a text file, under the
    run's settings. `path` is a staged temporary file."""
    table = prof.key_averages().table(sort_by=table_sort_key(on_device), row_limit=-1)
    path.write_text(table_header(meta or {}) + table + "\n", encoding="utf-8")
    return path
