"""Build large Kineto traces by repeating a real corpus trace in time (and side by side).

Copy k of the source's events is shifted by k times the source's time span, and
every id that links events (correlation, External id, flow ids, Python ids,
sequence numbers) is shifted by k times the largest id in the source, so the
launch -> kernel and op -> kernel links of each copy stay distinct, exactly as
in one long profiling run. `ProfilerStep#N` is renumbered so step numbers keep
increasing. Metadata events (`ph: M`) are written once.

`--wide W` puts W copies side by side in each step instead of one: copy j > 0
runs at the same time as copy 0 on its own host threads and device streams
(every integer tid shifted by j times a power of ten above the largest tid,
its thread metadata repeated), without its own `ProfilerStep`s. The steps
are copy 0's, so W doubles the events per step and leaves the steps as they
are; `--copies N` fixes the number of copies in time instead of a size.
These two give traces that differ only in events per step or only in steps
(`bench/bench_scaling.py`).

The output is streamed copy by copy (compact JSON, one event per line), so
building 1 GB needs memory for one copy of the source only.

    python bench/make_large.py --sizes 100 200 500 1000 [--gzip 200]
"""

from __future__ import annotations

import argparse
import gzip
import math
import re
import sys
import time
from pathlib import Path

import msgspec

DEFAULT_SOURCE = (
    Path(__file__).resolve().parents[1]
    / "tests"
    / "data"
    / "traces"
    / "gpu"
    / "resnet_train_ns.pt.trace.json.gz"
)
OUT = Path(__file__).resolve().parent / "out"

#: args that hold an id linking two events; shifted per copy
LINK_ARGS = (
    "External id",
    "external id",
    "correlation",
    "Python id",
    "Python parent id",
    "Sequence number",
    "Record function id",
)
_STEP = re.compile(r"^ProfilerStep#(\d+)$")


class Source:
    """The source trace split into what is written once and what is repeated."""

    def __init__(self, path: Path) -> None:
        raw = path.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        top = msgspec.json.decode(raw)
        events = top.pop("traceEvents")
        self.top = top
        self.metadata = [e for e in events if e.get("ph") == "M"]
        self.events = [e for e in events if e.get("ph") != "M"]
        starts = [e["ts"] for e in self.events if isinstance(e.get("ts"), (int, float))]
        ends = [
            e["ts"] + e.get("dur", 0) for e in self.events if isinstance(e.get("ts"), (int, float))
        ]
        # one millisecond between copies, like the gap between two profiled steps
        self.time_shift = math.ceil(max(ends) - min(starts)) + 1000
        self.id_shift = 10 ** len(str(self._max_id()))
        steps = [int(m.group(1)) for e in self.events if (m := _STEP.match(str(e.get("name"))))]
        self.step_shift = (max(steps) - min(steps) + 1) if steps else 0
        tids = [e["tid"] for e in events if isinstance(e.get("tid"), int)]
        self.tid_shift = 10 ** len(str(max(map(abs, tids), default=0)))

    def side_metadata(self, j: int) -> list[dict]:
        """Thread metadata of side copy `j`: the source's, on the shifted tids."""
        return [
            {**e, "tid": e["tid"] + j * self.tid_shift}
            for e in self.metadata
            if isinstance(e.get("tid"), int) and str(e.get("name", "")).startswith("thread_")
        ]

    def _max_id(self) -> int:
        ids = [0]
        for e in self.events:
            if isinstance(e.get("id"), int):
                ids.append(e["id"])
            args = e.get("args") or {}
            ids.extend(args[k] for k in LINK_ARGS if isinstance(args.get(k), int))
        return max(ids)

    def copy(self, k: int, j: int = 0, wide: int = 1) -> list[dict]:
        """Events of copy `k` in time, side copy `j` of `wide`: shifted in time, ids, step
        numbers (and for j > 0 in tids, without ProfilerSteps)."""
        dt, did, dstep = k * self.time_shift, (k * wide + j) * self.id_shift, k * self.step_shift
        out = []
        for e in self.events:
            if j and _STEP.match(str(e.get("name"))):
                continue
            e = dict(e)
            if j and isinstance(e.get("tid"), int):
                e["tid"] = e["tid"] + j * self.tid_shift
            if isinstance(e.get("ts"), (int, float)):
                e["ts"] = e["ts"] + dt
            if isinstance(e.get("id"), int):
                e["id"] = e["id"] + did
            args = e.get("args")
            if args and any(k in args for k in LINK_ARGS):
                args = e["args"] = dict(args)
                for key in LINK_ARGS:
                    if isinstance(args.get(key), int) and args[key] >= 0:
                        args[key] += did
            if dstep and (m := _STEP.match(str(e.get("name")))):
                e["name"] = f"ProfilerStep#{int(m.group(1)) + dstep}"
            out.append(e)
        return out


def _open_output(path: Path, compress: bool):
    return gzip.open(path, "wb", compresslevel=6) if compress else open(path, "wb")  # noqa: SIM115


def write_large(
    source: Source,
    target_bytes: int,
    path: Path,
    compress: bool,
    copies_wanted: int | None = None,
    wide: int = 1,
) -> tuple[int, int]:
    """Write whole copies until the JSON text reaches `target_bytes` (or `copies_wanted`
    copies in time), each `wide` copies side by side; (bytes, copies in time)."""
    encode = msgspec.json.encode
    head = encode(source.top)[:-1]  # the top-level object without its closing brace
    opener = (head + b',\n"traceEvents": [\n') if len(head) > 1 else b'{"traceEvents": [\n'
    written = 0
    copies = 0
    with _open_output(path, compress) as handle:
        written += handle.write(opener)
        metadata = source.metadata + [m for j in range(1, wide) for m in source.side_metadata(j)]
        written += handle.write(b",\n".join(encode(e) for e in metadata))
        while written < target_bytes if copies_wanted is None else copies < copies_wanted:
            for j in range(wide):
                chunk = b",\n" + b",\n".join(encode(e) for e in source.copy(copies, j, wide))
                written += handle.write(chunk)
            copies += 1
        written += handle.write(b"\n]}\n")
    return written, copies


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 200, 500, 1000], help="MB")
    parser.add_argument(
        "--gzip", type=int, nargs="*", default=[], help="sizes (MB) to also write as .json.gz"
    )
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument(
        "--copies", type=int, nargs="+", default=[], help="copies in time (instead of --sizes)"
    )
    parser.add_argument("--wide", type=int, default=1, help="copies side by side in each step")
    args = parser.parse_args(argv)
    if not args.source.exists():
        print(f"error: source trace {args.source} not found", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    source = Source(args.source)
    stem = args.source.name.split(".")[0]
    wide = f"_wide{args.wide}" if args.wide > 1 else ""
    if args.copies:
        jobs = [(f"{n}copies{wide}", 0, False, n) for n in args.copies]
    else:
        jobs = [(f"{mb}MB{wide}", mb, False, None) for mb in args.sizes]
        jobs += [(f"{mb}MB{wide}", mb, True, None) for mb in args.gzip]
    for label, mb, compress, count in jobs:
        path = args.out / f"{stem}_{label}.json{'.gz' if compress else ''}"
        start = time.perf_counter()
        size, copies = write_large(source, mb * 1_000_000, path, compress, count, args.wide)
        print(
            f"{path}: {size / 1e6:.1f} MB of JSON, {copies} x {args.wide} copies of "
            f"{args.source.name}, "
            f"{path.stat().st_size / 1e6:.1f} MB on disk, {time.perf_counter() - start:.1f} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
