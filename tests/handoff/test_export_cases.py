"""The Perfetto export's mechanisms, each on a built trace where it must act and where it
must not, and the findings / critical-path tracks on a real trace."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kinetoscope.api import explain
from kinetoscope.handoff.export import export_perfetto

from ..conftest import corpus, kernel, launch, op, write_trace
from .test_export_corpus import partial_overlaps

REPO = Path(__file__).resolve().parents[2]


def _events(path: Path) -> list[dict]:
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)["traceEvents"]


def test_a_slice_crossing_its_parents_end_moves_to_a_named_sub_track(tmp_path):
    # step 0-100 and a record_function 90-120 cross; a child 10-20 nests in the step
    trace = write_trace(tmp_path / "t.json", [
        {"ph": "M", "name": "thread_name", "pid": 100, "tid": 1, "args": {"name": "main"}},
        op("ProfilerStep#1", 0, 100), op("child", 10, 10), op("user_span", 90, 30),
    ])  # fmt: skip
    result = export_perfetto(trace, tmp_path / "out.json")
    out = _events(tmp_path / "out.json")
    span = next(e for e in out if e["name"] == "user_span")
    assert span["tid"] != 1 and span["ts"] == 90 and span["dur"] == 30
    assert "kinetoscope_track" in span["args"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in out if e["name"] == "thread_name"}
    assert names[(100, span["tid"])] == "main (overlap 1)"
    assert {e["name"]: e["tid"] for e in out if e["ph"] == "X"}["child"] == 1
    assert result.moved == {"main": 1} and partial_overlaps(out) == 0


def test_nested_and_adjacent_slices_stay_where_they_are(tmp_path):
    trace = write_trace(tmp_path / "t.json", [
        op("a", 0, 100), op("b", 0, 40), op("c", 40, 60), op("d", 100, 5),
    ])  # fmt: skip
    result = export_perfetto(trace, tmp_path / "out.json")
    assert result.moved == {} and result.clamped == 0
    assert {e["tid"] for e in _events(tmp_path / "out.json")} == {1}


def test_a_kernel_starting_before_its_launch_is_clamped_with_a_note(tmp_path):
    trace = write_trace(tmp_path / "t.json", [
        launch(100, 5, correlation=1), kernel("skewed", 97, 10, correlation=1),
        launch(200, 5, correlation=2), kernel("fine", 210, 10, correlation=2),
        {"ph": "f", "id": 1, "pid": 0, "tid": 7, "ts": 97, "cat": "ac2g", "bp": "e",
         "name": "ac2g"},
    ])  # fmt: skip
    result = export_perfetto(trace, tmp_path / "out.json")
    out = _events(tmp_path / "out.json")
    skewed = next(e for e in out if e["name"] == "skewed")
    assert skewed["ts"] == 100 and skewed["dur"] == 10
    assert skewed["args"]["kinetoscope_clamped_us"] == 3
    assert next(e for e in out if e["name"] == "fine")["ts"] == 210
    assert next(e for e in out if e["ph"] == "f")["ts"] == 100  # the arrow follows
    assert result.clamped == 1


def test_text_perfetto_rejects_is_cleaned(tmp_path):
    path = tmp_path / "t.json"
    path.write_bytes(
        b'{"traceEvents": [{"ph": "X", "name": "bad\\ud800 name\x01", "pid": 1, "tid": 1,'
        b' "ts": 1, "dur": 2, "args": {"s": "\xff"}}]}'
    )
    result = export_perfetto(path, tmp_path / "out.json")
    text = (tmp_path / "out.json").read_bytes()
    text.decode("utf-8")  # valid UTF-8
    [event] = json.loads(text)["traceEvents"]
    assert event["dur"] == 2 and "\x01" not in event["name"] and result.repaired >= 2


@pytest.mark.parametrize(
    ("bad", "kept", "repairs"),
    [(b"\xff\xfe", "\ufffd\ufffd", 2), (b"a\x01b", "a b", 1), (b"\\ud800", "\ufffd", 1)],
    ids=["not_utf8", "control", "surrogate"],
)
def test_text_perfetto_rejects_is_cleaned_in_an_event_the_export_rewrites(
    tmp_path, bad, kept, repairs
):
    """A kernel clamped to its launch is decoded and written back whole; a field the
    loader skips ("note") held text no decoder takes, and the export met an internal
    error there (exit 1) in every one of these three cases."""
    events = [launch(100, 5, correlation=1), kernel("skewed", 97, 10, correlation=1)]
    events[1]["note"] = "MARK"
    path = tmp_path / "t.json"
    path.write_bytes(json.dumps({"traceEvents": events}).encode().replace(b"MARK", bad))
    result = export_perfetto(path, tmp_path / "out.json")
    skewed = next(e for e in _events(tmp_path / "out.json") if e["name"] == "skewed")
    assert skewed["ts"] == 100 and skewed["args"]["kinetoscope_clamped_us"] == 3
    assert skewed["note"] == kept
    assert result.clamped == 1 and result.repaired == repairs


def test_findings_and_critical_path_become_tracks_of_their_own(tmp_path):
    """simple_add_a100: each timed piece of evidence is a slice titled by its finding,
    and the path's segments a slice each, on a pid no event of the trace uses."""
    path = corpus("gpu/simple_add_a100.json.gz")
    report = explain(path)
    export_perfetto(path, tmp_path / "out.json.gz", report=report)
    out = _events(tmp_path / "out.json.gz")
    names = {e["args"]["name"]: e for e in out if e["name"] in ("thread_name", "process_name")}
    pid = names["kinetoscope"]["pid"]
    assert pid not in {e.get("pid") for e in _events(path)}
    findings = [e for e in out if e.get("cat") == "kinetoscope_finding"]
    timed = [(f.title, ev) for f in report.findings for ev in f.evidence if ev.ts_us is not None]
    assert len(findings) == len(timed) > 0
    first_title, first = timed[0]
    hit = [e for e in findings if e["name"] == first_title and e["args"]["evidence"] == first.text]
    assert hit and abs(hit[0]["ts"] - (report.trace.origin_us + first.ts_us)) < 1e-3
    path_slices = [e for e in out if e.get("cat") == "kinetoscope_path"]
    segments = report.critical_path["segments"]
    assert [e["name"] for e in path_slices] == [s["name"] for s in segments]
    assert partial_overlaps(out) == 0


def test_export_command_writes_beside_never_over(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    out = tmp_path / "o.json.gz"
    trace = str(corpus("gpu/simple_add_a100.json.gz"))
    cmd = [sys.executable, "-m", "kinetoscope", "export", trace,
           "--format", "perfetto", "-o", str(out), "--no-findings"]  # fmt: skip
    first = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    second = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert first.returncode == 0 and "none dropped" in first.stderr, first.stderr
    assert second.returncode == 0 and (tmp_path / "o_2.json.gz").exists()
    again = [*cmd[:4], str(out), "-o", str(out)]
    res = subprocess.run(again, capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 2 and "never writes over its input" in res.stderr
