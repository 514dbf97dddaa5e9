"""`kinetoscope slice` on real corpus traces: exactly the steps asked, launches with
their device work, no dangling flow, metadata kept, gzip in and out, `},{` in strings."""

from __future__ import annotations

import gzip
import json

import pytest

import kinetoscope
from kinetoscope.slicing import SLICE_KEY, Selection, slice_trace
from kinetoscope.slicing.scan import EventScanner

from ..capture_helpers import run_cli, run_here
from ..conftest import corpus

RESNET = "gpu/resnet_train_ns.pt.trace.json.gz"  # steps 101-105, ac2g and fwdbwd flows
DLRM0 = "multirank/dlrm_8ranks/worker0_step_12.1694128201545.pt.trace.json.gz"


def _doc(path):
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)


def _launch_corrs(events):
    return {
        e["args"]["correlation"]
        for e in events
        if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})
    }


def test_steps_slice_of_resnet(tmp_path):
    src = corpus(RESNET)
    out = tmp_path / "small.json.gz"
    result = slice_trace(src, Selection(steps=(102, 103)), out)
    original, sliced = _doc(src), _doc(out)
    events = sliced["traceEvents"]
    # the loader reads it and finds exactly steps 102 and 103
    assert [s.number for s in kinetoscope.load(out).steps] == [102, 103]
    steps = sorted(e["name"] for e in events if e.get("name", "").startswith("ProfilerStep#"))
    assert set(steps) == {"ProfilerStep#102", "ProfilerStep#103"}
    # every top-level metadata key and every metadata event survive
    assert set(original) - {"traceEvents"} <= set(sliced)
    assert sliced["deviceProperties"] == original["deviceProperties"]
    assert sliced["distributedInfo"] == original["distributedInfo"]
    assert sliced[SLICE_KEY]["steps"] == [102, 103]
    meta = [e for e in original["traceEvents"] if e.get("ph") == "M"]
    assert [e for e in events if e.get("ph") == "M"] == meta
    # every kept kernel/memcpy/memset with a launch in the original keeps its launch
    launches = _launch_corrs(events)
    all_launches = _launch_corrs(original["traceEvents"])
    device = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    assert device
    for e in device:
        c = e["args"]["correlation"]
        assert c not in all_launches or c in launches, e["name"]
    # device work of a kept launch is kept even when it ends after the window
    end = max(e["ts"] + e["dur"] for e in events if e.get("name") == "ProfilerStep#103")
    kept_corr = {e["args"]["correlation"] for e in device}
    late = [
        e
        for e in original["traceEvents"]
        if e.get("cat") == "kernel" and e["args"]["correlation"] in launches and e["ts"] > end
    ]
    assert all(e["args"]["correlation"] in kept_corr for e in late)
    # no dangling flow: each kept (cat, id) has a start and an end
    flows: dict = {}
    for e in events:
        if e.get("ph") in ("s", "f"):
            flows.setdefault((e["cat"], e["id"]), set()).add(e["ph"])
    assert flows and all(p == {"s", "f"} for p in flows.values())
    assert any(cat == "fwdbwd" for cat, _ in flows)
    assert result.events_in == len(original["traceEvents"])
    assert result.events_out == len(events) < result.events_in


def test_window_slice_and_plain_output(tmp_path):
    src = corpus(DLRM0)  # plain JSON in, plain JSON out; one step (ProfilerStep#12)
    out = tmp_path / "w.json"
    original = _doc(src)
    start = min(e["ts"] for e in original["traceEvents"] if e.get("ph") in ("X", "i"))
    result = slice_trace(src, Selection(window=(0.0, 1000.0)), out)
    events = json.loads(out.read_text())["traceEvents"]
    timed = [e for e in events if e.get("ph") == "X" and e.get("pid") != 0]  # pid 0: the GPU
    # host events overlap [start, start + 1 ms]
    assert timed and all(
        e["ts"] < start + 1000
        and e["ts"] + e["dur"] > start
        or e["dur"] == 0
        and start <= e["ts"] <= start + 1000  # instants: closed window
        for e in timed
    )
    assert result.window_rel_us == (0.0, 1000.0)
    assert len(kinetoscope.load(out)) > 0


def test_strings_with_event_separators(tmp_path):
    """`},{` inside strings (a Python repr in args) must not be taken for an event boundary."""
    tricky = 'x"},{"ph":"X"},{\\\\"},{'  # escaped quote, backslashes, separators
    events = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1,
         "ts": 0, "dur": 100, "args": {"repr": tricky}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm },{ ]]", "pid": 1, "tid": 1,
         "ts": 10, "dur": 5},
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1,
         "ts": 200, "dur": 100},
    ]  # fmt: skip
    src = tmp_path / "t.json.gz"
    src.write_bytes(gzip.compress(json.dumps({"traceEvents": events, "traceName": "t"}).encode()))
    out = tmp_path / "o.json"
    slice_trace(src, Selection(steps=(1, 1)), out)
    sliced = json.loads(out.read_text())
    assert sliced["traceEvents"] == events[:2]
    assert sliced["traceName"] == "t"


def test_scanner_chunk_boundaries_anywhere():
    """The same spans whatever the piece size, with separators and escapes in strings."""
    events = [{"name": 'a\\"},{\\\\' + str(i), "args": {"l": [{"x": "]"}, {}]}} for i in range(50)]
    text = json.dumps({"a": [1, {"b": "},{"}], "traceEvents": events, "z": "]"}).encode()
    for size in (1, 7, 64, len(text)):
        scanner = EventScanner()
        scanner._threshold = 16  # scan often, cutting between pieces anywhere
        found = []
        for k in range(0, len(text), size):
            if (b := scanner.feed(text[k : k + size])) is not None:
                found += [json.loads(b.event(i)) for i in range(len(b))]
        if (b := scanner.finish()) is not None:
            found += [json.loads(b.event(i)) for i in range(len(b))]
        assert found == events
        assert json.loads(bytes(scanner.top)) == {
            "a": [1, {"b": "},{"}],
            "traceEvents": [],
            "z": "]",
        }


def _cli(*args):
    """`kinetoscope slice ARGS` in this process: what it writes, prints and exits with."""
    return run_here("slice", *args)


def test_cli_refuses_output_that_is_the_input(tmp_path):
    # a copy: a hard link to the corpus file itself would outlive the test in pytest's
    # kept temporary folders, and the MCP server refuses a file with several links
    src = tmp_path / "input.json.gz"
    src.write_bytes(corpus(RESNET).read_bytes())
    link = tmp_path / "link.json.gz"
    link.hardlink_to(src) if src.stat().st_dev == tmp_path.stat().st_dev else link.symlink_to(src)
    before = src.read_bytes()
    # the input itself through `python -m kinetoscope`: slice's console path
    for run, target in ((run_cli, src), (run_here, link)):
        proc = run("slice", *map(str, (src, "--steps", "102", "-o", target, "--force")))
        assert proc.returncode == 2 and "is the input" in proc.stderr
        assert "Traceback" not in proc.stderr
    assert src.read_bytes() == before


def test_cli_errors_are_one_line(tmp_path):
    src = corpus(RESNET)
    out = tmp_path / "o.json"
    cases = [
        (["--steps", "7-9"], "not in the trace (it has steps 101-105)"),
        (["--steps", "101", "--window", "0:10"], "exactly one of"),
        (["--window", "5"], "expected START:END"),
    ]
    for extra, message in cases:
        proc = _cli(src, *extra, "-o", out)
        assert proc.returncode == 2, proc.stderr
        assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    truncated = tmp_path / "cut.json"
    truncated.write_bytes(gzip.decompress(src.read_bytes())[:100_000])
    proc = _cli(truncated, "--steps", "101", "-o", out)
    assert proc.returncode == 2 and "ends early" in proc.stderr
    assert not out.exists() and not list(tmp_path.glob(".kinetoscope-*"))
    proc = _cli(src, "--steps", "101", "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert "68,692 events" in proc.stdout
    proc = _cli(src, "--steps", "101", "-o", out)  # an existing output: _2, said in one line
    assert proc.returncode == 0 and proc.stderr == f"{out} exists (use --force to replace it); " \
        f"wrote {tmp_path / 'o_2.json'}\n"  # fmt: skip


@pytest.mark.parametrize("drop", ["python_function", "cuda_runtime"])
def test_drop_categories(tmp_path, drop):
    src = corpus(RESNET)
    out = tmp_path / "d.json"
    slice_trace(src, Selection(steps=(104, 104), drop=frozenset({drop})), out)
    events = json.loads(out.read_text())["traceEvents"]
    assert not [e for e in events if e.get("cat") == drop]
    flows = {}
    for e in events:
        if e.get("ph") in ("s", "f"):
            flows.setdefault((e["cat"], e["id"]), set()).add(e["ph"])
    if drop == "cuda_runtime":  # launch flows lose their start: they go too
        assert not [k for k in flows if k[0] == "ac2g"]
