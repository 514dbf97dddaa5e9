"""Build large Kineto traces by repeating a real corpus trace in time.

Copy k of the source's events is shifted by k times the source's time span, and
every id that links events (correlation, External id, flow ids, Python ids,
sequence numbers) is shifted by k times the largest id in the source, so the
launch -> kernel and op -> kernel links of each copy stay distinct, exactly as
in one long profiling run. `ProfilerStep#N` is renumbered so step numbers keep
increasing. Metadata events (`ph: M`) are written once.

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

    def _max_id(self) -> int:
        ids = [0]
        for e in self.events:
            if isinstance(e.get("id"), int):
                ids.append(e["id"])
            args = e.get("args") or {}
            ids.extend(args[k] for k in LINK_ARGS if isinstance(args.get(k), int))
        return max(ids)

    def copy(self, k: int) -> list[dict]:
        """Events of copy `k`, shifted in time, ids and step numbers."""
        dt, did, dstep = k * self.time_shift, k * self.id_shift, k * self.step_shift
        out = []
        for e in self.events:
            e = dict(e)
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


def write_large(source: Source, target_bytes: int, path: Path, compress: bool) -> tuple[int, int]:
    """Write whole copies until the JSON text reaches `target_bytes`; (bytes, copies)."""
    encode = msgspec.json.encode
    head = encode(source.top)[:-1]  # the top-level object without its closing brace
    opener = (head + b',\n"traceEvents": [\n') if len(head) > 1 else b'{"traceEvents": [\n'
    written = 0
    copies = 0
    with _open_output(path, compress) as handle:
        written += handle.write(opener)
        body = b",\n".join(encode(e) for e in source.metadata)
        written += handle.write(body)
        while written < target_bytes:
            chunk = b",\n" + b",\n".join(encode(e) for e in source.copy(copies))
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
    args = parser.parse_args(argv)
    if not args.source.exists():
        print(f"error: source trace {args.source} not found", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    source = Source(args.source)
    stem = args.source.name.split(".")[0]
    jobs = [(mb, False) for mb in args.sizes] + [(mb, True) for mb in args.gzip]
    for mb, compress in jobs:
        path = args.out / f"{stem}_{mb}MB.json{'.gz' if compress else ''}"
        start = time.perf_counter()
        size, copies = write_large(source, mb * 1_000_000, path, compress)
        print(
            f"{path}: {size / 1e6:.1f} MB of JSON, {copies} copies of {args.source.name}, "
            f"{path.stat().st_size / 1e6:.1f} MB on disk, {time.perf_counter() - start:.1f} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
