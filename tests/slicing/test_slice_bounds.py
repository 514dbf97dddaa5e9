"""`slice` holds one event in memory while it scans: an event that nests deeper than any
reader decodes, or that never ends, is refused at once in bounded memory.

Found by the resource fuzz (`tests/test_fuzz_resources.py`, class bracket_flood): a
gzip holding 73 MB of `{"a":` inside one event's args took `slice` to 1.5 GB (four
int64 arrays per bracket, the buffer doubling until the event ended), where
`summary` refuses the same file at 120 MB."""

from __future__ import annotations

import gzip

from ..fuzz_child import CAP_RSS, run

HEAD = b'{"traceEvents":[{"ph":"X","name":"k","ts":1,"dur":1,"args":'


def _flood(path, unit: bytes, size: int) -> None:
    with gzip.open(path, "wb", compresslevel=1) as out:
        out.write(HEAD)
        block = unit * (1 << 20)
        for _ in range(size // len(block)):
            out.write(block)


def _one_line(ended) -> str:
    lines = ended.stderr.decode("utf-8", "replace").splitlines()
    assert ended.code == 2, (ended.code, lines[-5:])
    assert len(lines) == 1 and lines[0].startswith("kinetoscope: error: "), lines
    return lines[0]


def test_an_event_nested_past_the_decoder_is_refused_early(tmp_path):
    trace = tmp_path / "deep.json.gz"
    _flood(trace, b'{"a":', 75 << 20)
    ended = run(["slice", str(trace), "--window", "0:", "-o", "out.json"], tmp_path)
    assert "nests deeper than 1000 levels" in _one_line(ended)
    assert ended.max_rss < CAP_RSS // 2, ended.max_rss  # refused at the first scan
    assert not (tmp_path / "out.json").exists()


def test_shallow_brackets_in_one_event_stay_within_bounds(tmp_path):
    """Must not fire: brackets that open and close (depth stays low) are an event's
    own business until it ends; a well-formed deep-but-decodable event slices."""
    trace = tmp_path / "ok.json"
    nested = b'{"a":' * 900 + b"1" + b"}" * 900
    trace.write_bytes(HEAD + nested + b'},{"ph":"X","name":"k","ts":2,"dur":1}]}')
    ended = run(["slice", str(trace), "--window", "0:", "-o", "out.json"], tmp_path)
    assert ended.code == 0, ended.stderr
