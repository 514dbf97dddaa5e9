"""Could a compiled JSON reader from the package index build the columns faster?

Issue 24 allows a compiled helper only as a wheel from the index. The two that read JSON
straight into columns are Apache Arrow's (`pyarrow.json`) and Polars' (`read_json`);
this times both on a Kineto file, in an interpreter that has them (not kinetoscope's
dependencies; a separate virtual environment):

    python3 -m venv /tmp/arrowvenv && /tmp/arrowvenv/bin/pip install pyarrow polars msgspec
    /tmp/arrowvenv/bin/python bench/compiled_readers.py /tmp/large/resnet_train_ns_200MB.json

- Polars reads the file as written (one object holding `traceEvents`); the events are
  then one list column, exploded and unnested into a row per event.
- Arrow reads only newline-delimited objects, so the events are first written one per
  line (with msgspec; not timed). It is timed with an explicit schema for the fields
  the loader keeps, twice: with `pid` and `tid` (which Kineto writes as numbers on
  events and as strings on some metadata, and Arrow refuses a column whose type
  changes), and without them, the best case for Arrow.

Compare the walls with `bench/explain_floor.py`'s load (decode + every column, two
processes) on the same file.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

try:
    import msgspec
    import polars as pl
    import pyarrow as pa
    import pyarrow.json as pj
except ImportError as missing:  # kinetoscope's own environment has neither reader
    sys.exit(f"error: {missing.name} is not installed here; run this with the venv above")


class _Top(msgspec.Struct):
    traceEvents: list[msgspec.Raw]


_ARGS = pa.struct(
    [
        ("External id", pa.int64()),
        ("correlation", pa.int64()),
        ("stream", pa.int64()),
        ("device", pa.int64()),
        ("grid", pa.list_(pa.int64())),
        ("block", pa.list_(pa.int64())),
        ("registers per thread", pa.int64()),
        ("shared memory", pa.int64()),
        ("est. achieved occupancy %", pa.float64()),
        ("Bytes", pa.int64()),
        ("name", pa.string()),
    ]
)
_EVENT = [
    ("ph", pa.string()),
    ("name", pa.string()),
    ("cat", pa.string()),
    ("ts", pa.float64()),
    ("dur", pa.float64()),
    ("args", _ARGS),
]
_IDS = [("pid", pa.int64()), ("tid", pa.int64())]


def polars_read(path: Path) -> str:
    start = time.perf_counter()
    frame = pl.read_json(path)
    events = frame.select(pl.col("traceEvents").explode()).unnest("traceEvents")
    return f"{time.perf_counter() - start:.2f} s, {events.height:,} rows"


def arrow_read(lines: Path, fields: list) -> str:
    options = pj.ParseOptions(explicit_schema=pa.schema(fields), unexpected_field_behavior="ignore")
    start = time.perf_counter()
    try:
        table = pj.read_json(lines, parse_options=options)
    except pa.ArrowInvalid as exc:
        return f"refused after {time.perf_counter() - start:.2f} s: {exc}"
    return f"{time.perf_counter() - start:.2f} s, {table.num_rows:,} rows"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    args = parser.parse_args(argv)
    print(f"{args.file.name}: {args.file.stat().st_size / 1e6:.1f} MB; pyarrow {pa.__version__}, "
          f"polars {pl.__version__}, {pa.cpu_count()} threads")  # fmt: skip
    print(f"polars read_json + explode + unnest: {polars_read(args.file)}")
    with tempfile.TemporaryDirectory() as folder:
        lines = Path(folder) / "events.ndjson"
        top = msgspec.json.decode(args.file.read_bytes(), type=_Top)
        lines.write_bytes(b"\n".join(map(bytes, top.traceEvents)) + b"\n")
        del top
        print(f"pyarrow read_json, with pid and tid: {arrow_read(lines, _EVENT + _IDS)}")
        print(f"pyarrow read_json, without pid and tid: {arrow_read(lines, _EVENT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
