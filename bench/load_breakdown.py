"""Where loading time goes, in CPU seconds inside one process.

Separates the floor set by msgspec (structural scan of the event array; typed
decoding into `Event` structs, discarded at once) from the whole `load()` (the
same decoding plus building the columns) and from `summarize()` on the result.
CPU time (`time.process_time`) rather than wall time, so that other work on a
shared machine disturbs the split less. The last line is the default load of a
large plain file, in two processes (trace/split.py): its wall time, and the CPU
of the parent and of the worker (read from RUSAGE_CHILDREN once it is reaped).

    python bench/load_breakdown.py bench/out/resnet_train_ns_200MB.json
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import msgspec

import kinetoscope
from kinetoscope.analysis.summary import summarize
from kinetoscope.trace.decode import EventStream
from kinetoscope.trace.source import trace_chunks


def cpu(fn) -> tuple[float, object]:
    start = time.process_time()
    result = fn()
    return time.process_time() - start, result


def decode_only(path: Path) -> int:
    stream = EventStream(str(path), [])
    return sum(len(batch) for batch in stream.batches(trace_chunks(path, [])))


def scan_only(path: Path) -> int:
    """Parse the whole file keeping nothing: JSON validation speed."""
    return len(msgspec.json.decode(path.read_bytes(), type=msgspec.Raw))


def two_processes(path: Path) -> tuple[float, float, float]:
    """(wall s, parent CPU s, worker CPU s) of the default `load`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall, cpu_start = time.perf_counter(), time.process_time()
    kinetoscope.load(path)
    parent = time.process_time() - cpu_start
    wall = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    worker = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return wall, parent, worker


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    args = parser.parse_args(argv)
    mb = sum(len(chunk) for chunk in trace_chunks(args.file, [])) / 1e6
    scan_s, _ = cpu(lambda: scan_only(args.file))
    decode_s, events = cpu(lambda: decode_only(args.file))
    load_s, trace = cpu(lambda: kinetoscope.load(args.file, split_min_bytes=1 << 62))
    summary_s, _ = cpu(lambda: summarize(trace))
    print(f"{args.file.name}: {mb:.0f} MB of JSON, {events} events ({len(trace)} timed)")
    for label, seconds in (
        ("read + JSON scan (msgspec.Raw)", scan_s),
        ("streamed typed decode (Event structs)", decode_s),
        ("load() in one pass = decode + columns", load_s),
        ("summarize()", summary_s),
    ):
        print(f"  {label:40s} {seconds:6.2f} s CPU  {mb / seconds:6.0f} MB/s")
    wall, parent, worker = two_processes(args.file)
    print(
        f"  {'load() default (two processes if split)':40s} {wall:6.2f} s wall "
        f"{mb / wall:6.0f} MB/s; CPU {parent:.2f} s parent + {worker:.2f} s worker"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
