"""The least time `explain` could take on this machine: each of its parts at its floor.

Issue 24 asks for 150 MB/s end to end. This measures, on one uncompressed file (the
split loader's case), what each part of `explain --format json` costs now and the least
it could cost with the tools it is built on, so the gap can be read part by part:

- start-up: the interpreter with numpy and msgspec only (the floor), against the
  imports `explain` makes (kinetoscope, typer and the pydantic it coerces options with);
- decoding: msgspec's typed decode into the `Event` structs, in two processes (the
  split loader's halves) and building nothing (the floor of the load), against the
  load as it is (decode + columns, two processes);
- columns: one C-level pass per field the `Trace` cannot do without (start, duration,
  name, category, pid, tid, two ids), CPU on top of the decode, halved for two cores;
- `explain` after the load: wall as it runs (its rules shared with a second process on
  a large trace, `rules/two_cores.py`), and again with every shared analysis already
  computed (what the rules and the report cost beyond the analyses); the floor is its
  one-process time split perfectly over two cores;
- the whole command, as a user runs it (best of `--repeat`).

    PYTHONPATH=src python bench/explain_floor.py /tmp/large/resnet_train_ns_200MB.json
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from operator import attrgetter
from pathlib import Path

import numpy as np

import kinetoscope
from kinetoscope.rules import two_cores
from kinetoscope.trace.columns import intern_column
from kinetoscope.trace.decode import EventStream
from kinetoscope.trace.source import plain_range, trace_chunks
from kinetoscope.trace.split import split_point

TARGET_MB_S = 150.0
_FIELDS = [attrgetter(a) for a in ("ts", "dur")]
_KEYS = [attrgetter(a) for a in ("name", "cat", "pid", "tid")]
_IDS = [attrgetter(a) for a in ("external_id", "correlation")]
_ARGS = attrgetter("args")


def best_wall(command: list[str], repeat: int) -> float:
    """Least wall time of `command` over `repeat` runs (each a fresh process)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return min(times)


def decode_two_processes(path: Path) -> float:
    """Wall time of the typed decode alone, the file's halves in two processes."""
    point = split_point(path)
    if point is None:
        sys.exit(f"error: {path} cannot be split at an event boundary (read in one pass)")
    head, first_end, second_start = point
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # the second half, decoded and dropped; never returns
        try:
            stream = EventStream(str(path), [])
            for _ in stream.suffix_batches(plain_range(path, second_start), head, second_start):
                pass
        finally:
            os._exit(0)
    stream = EventStream(str(path), [])
    for _ in stream.prefix_batches(plain_range(path, 0, first_end)):
        pass
    os.waitpid(pid, 0)
    return time.perf_counter() - start


class MinimalColumns:
    """The columns no `Trace` can do without, one C-level pass per field (the intern
    tables kept across batches, as the loader keeps them)."""

    def __init__(self) -> None:
        self.tables: list[dict] = [{} for _ in _KEYS]

    def __call__(self, batch: list) -> None:
        n = len(batch)
        for get in _FIELDS:
            np.fromiter(map(get, batch), np.float64, n)
        for get, table in zip(_KEYS, self.tables, strict=True):
            intern_column(table, list(map(get, batch)))
        args = list(map(_ARGS, batch))
        for get in _IDS:
            np.array(list(map(get, args)), np.int64)


def decode_cpu(path: Path, build) -> float:
    """CPU seconds of a one-process typed decode, calling `build` on each batch."""
    start = time.process_time()
    for batch in EventStream(str(path), []).batches(trace_chunks(path, [])):
        build(batch)
    return time.process_time() - start


def timed_explain(trace, share: bool = True) -> float:
    """Wall seconds of `explain` on a loaded trace; `share=False`: its rules in one process."""
    limit = two_cores.SHARE_MIN_EVENTS
    two_cores.SHARE_MIN_EVENTS = limit if share else 1 << 62
    try:
        start = time.perf_counter()
        kinetoscope.explain(trace)
        return time.perf_counter() - start
    finally:
        two_cores.SHARE_MIN_EVENTS = limit


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each timed command")
    args = parser.parse_args(argv)
    mb = args.file.stat().st_size / 1e6
    python = sys.executable
    rows: list[tuple[str, float, float]] = []  # (part, now, floor), seconds of wall
    bare = best_wall([python, "-c", "import numpy, msgspec"], args.repeat)
    imports = "import kinetoscope.cli, kinetoscope.pipeline.build, typer._adapters"
    rows.append(("start-up and imports", best_wall([python, "-c", imports], args.repeat), bare))
    load_start = time.perf_counter()
    trace = kinetoscope.load(args.file)
    load_wall = time.perf_counter() - load_start
    decode_floor = min(decode_two_processes(args.file) for _ in range(args.repeat))
    decode = min(decode_cpu(args.file, len) for _ in range(2))
    columns = min(decode_cpu(args.file, MinimalColumns()) for _ in range(2)) - decode
    rows.append(("load (decode + columns, two processes)", load_wall, decode_floor + columns / 2))
    explain_wall = timed_explain(trace)
    alone = kinetoscope.load(args.file)
    one_core = timed_explain(alone, share=False)
    warm = timed_explain(alone, share=False)  # every analysis in this process's memo
    rows.append(("explain after the load", explain_wall, one_core / 2))
    with tempfile.TemporaryDirectory() as folder:
        out = str(Path(folder) / "report.json")
        command = [python, "-m", "kinetoscope", "explain", "--format", "json", "-o", out]
        whole = best_wall([*command, "--force", str(args.file)], args.repeat)
    print(f"{args.file.name}: {mb:.1f} MB, {len(trace):,} timed events, {len(trace.steps)} steps")
    print(f"{'part':42s} {'now':>8s} {'floor':>8s}")
    for part, now, floor in rows:
        print(f"{part:42s} {now:7.2f}s {floor:7.2f}s")
    now_sum, floor_sum = sum(r[1] for r in rows), sum(r[2] for r in rows)
    print(f"{'sum of the parts':42s} {now_sum:7.2f}s {floor_sum:7.2f}s")
    print(f"the whole command (best of {args.repeat}): {whole:.2f} s, {mb / whole:.0f} MB/s")
    print(f"budget at {TARGET_MB_S:.0f} MB/s: {mb / TARGET_MB_S:.2f} s")
    print(
        f"floors: imports numpy+msgspec only {bare:.2f} s; typed decode alone in two "
        f"processes {decode_floor:.2f} s ({decode:.2f} s CPU in one); the columns every "
        f"Trace needs {columns:.2f} s CPU beyond it; explain after the load in one process "
        f"{one_core:.2f} s, split perfectly over two cores {one_core / 2:.2f} s"
    )
    print(f"explain again with every shared analysis computed: {warm:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
