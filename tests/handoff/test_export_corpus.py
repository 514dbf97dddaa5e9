"""The Perfetto export by property, on a corpus trace of each family (tests/corpus_families.py;
every corpus trace under `pytest -m corpus`): (a) no two slices on one track (pid, tid)
overlap partially, so Perfetto's importer drops none (it keeps one stack of open slices
per thread track: Perfetto FAQ, "overlapping events in JSON traces"); (b) every complete
event of the input is in the output, counted by name and duration; (c) the output is
strict JSON. The checks are written here from the rule, not with the export's
own layout code."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from kinetoscope.handoff.export import export_perfetto

from ..conftest import corpus, corpus_files
from ..corpus_families import by_family

TRACES = corpus_files()


def _strict(text: bytes):
    """json.loads refusing NaN/Infinity (not JSON) as Perfetto's parser does."""

    def refuse(name):
        raise ValueError(f"not strict JSON: {name}")

    return json.loads(text.decode("utf-8"), parse_constant=refuse)


def _read(path: Path):
    raw = path.read_bytes()
    return _strict(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)


def _ns(us: float) -> int:
    return round(us * 1000)


def partial_overlaps(events) -> int:
    """Slices that cross the end of a slice open on their track, in Perfetto's order."""
    tracks: dict[tuple, list[tuple[int, int]]] = {}
    for e in events:
        if e.get("ph") == "X" and isinstance(e.get("ts"), (int, float)):
            start = _ns(e["ts"])
            end = start + max(_ns(e.get("dur", 0)), 0)
            tracks.setdefault((e.get("pid"), e.get("tid")), []).append((start, end))
    bad = 0
    for slices in tracks.values():
        open_ends: list[int] = []
        for start, end in sorted(slices, key=lambda s: (s[0], -s[1])):
            while open_ends and open_ends[-1] <= start:
                open_ends.pop()
            if open_ends and end > open_ends[-1]:
                bad += 1
            else:
                open_ends.append(end)
    return bad


def _slices(events, skip_pid=None) -> Counter:
    return Counter(
        (e.get("name"), e.get("dur"))
        for e in events
        if e.get("ph") == "X" and (skip_pid is None or e.get("pid") != skip_pid)
    )


@pytest.mark.parametrize("path", by_family(TRACES), ids=[p.name for p in TRACES])
def test_export_keeps_every_slice_and_nests_every_track(path, tmp_path):
    source = _read(path)
    events = source["traceEvents"] if isinstance(source, dict) else source
    out = tmp_path / "out.json.gz"
    result = export_perfetto(path, out)
    exported = _read(out)["traceEvents"]
    assert partial_overlaps(exported) == 0
    assert _slices(exported) == _slices(events)  # nothing dropped, durations kept
    added = _sub_track_names(exported)  # one thread_name per sub-track, nothing else
    assert len(exported) == len(events) + len(added)
    assert len(added) >= (1 if result.moved else 0)


def _sub_track_names(events) -> list:
    return [e for e in events if e.get("name") == "thread_name" and "(overlap " in str(e["args"])]


def test_the_corpus_has_overlaps_the_export_removes():
    """Without the export these tracks lose slices in Perfetto: simple_add_a100's stream 7
    holds gpu_user_annotation ranges crossing kernel edges (read from the trace)."""
    events = _read(corpus("gpu/simple_add_a100.json.gz"))["traceEvents"]
    assert partial_overlaps(events) > 0
