"""`kinetoscope view`: serves the trace to the Perfetto UI from 127.0.0.1 with CORS."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from ..conftest import corpus

REPO = Path(__file__).resolve().parents[2]
TRACE = "gpu/tracelens_h100__gaunernst_bert-small-uncased__1016001.json.gz"


def test_view_raw_serves_the_trace_to_perfetto_and_stops_on_ctrl_c():
    path = corpus(TRACE)
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), CI="1")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from kinetoscope.cli import main; main()",
            "view",
            str(path),
            "--raw",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        first = proc.stdout.readline()
        link_line = proc.stdout.readline()
        assert first.startswith("serving ") and "http://127.0.0.1:" in first
        prefix = "open in Perfetto: https://ui.perfetto.dev/#!/?url=http://127.0.0.1:"
        assert link_line.startswith(prefix), link_line
        url = link_line.split("url=", 1)[1].strip()
        assert url.endswith("/" + path.name)
        request = urllib.request.Request(url, headers={"Origin": "https://ui.perfetto.dev"})
        with urllib.request.urlopen(request, timeout=10) as resp:
            body = resp.read()
            assert resp.headers["Access-Control-Allow-Origin"] == "https://ui.perfetto.dev"
            assert int(resp.headers["Content-Length"]) == path.stat().st_size
        assert body == path.read_bytes()
        preflight = urllib.request.Request(url, method="OPTIONS")
        with urllib.request.urlopen(preflight, timeout=10) as resp:
            assert resp.status == 204
            assert "GET" in resp.headers["Access-Control-Allow-Methods"]
        other = url.rsplit("/", 1)[0] + "/etc-passwd"
        try:
            urllib.request.urlopen(other, timeout=10)
            raise AssertionError("a path other than the trace was served")
        except urllib.error.HTTPError as exc:
            assert exc.code == 404
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0 and "Traceback" not in err and "stopped" in err


def test_view_serves_the_export_with_the_findings_track_and_removes_it_on_stop(tmp_path):
    """Without --raw the served bytes are the Perfetto export: the input's events plus a
    "kinetoscope findings" track, written under TMPDIR and gone once the server stops."""
    import gzip
    import json

    path = corpus("gpu/simple_add_a100.json.gz")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), CI="1", TMPDIR=str(scratch))
    proc = subprocess.Popen(
        [sys.executable, "-c", "from kinetoscope.cli import main; main()", "view", str(path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        assert proc.stdout.readline().startswith("serving ")
        url = proc.stdout.readline().split("url=", 1)[1].strip()
        assert url.endswith("/simple_add_a100.perfetto.json.gz")
        request = urllib.request.Request(url, headers={"Origin": "https://ui.perfetto.dev"})
        with urllib.request.urlopen(request, timeout=30) as resp:
            trace = json.loads(gzip.decompress(resp.read()))
        names = {e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
        assert "kinetoscope findings" in names and "critical path" in names
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0 and "Traceback" not in err, err
    assert "none dropped" in err
    assert list(scratch.iterdir()) == []


def test_view_of_a_missing_file_is_one_line_exit_2(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    res = subprocess.run(
        [sys.executable, "-c", "from kinetoscope.cli import main; main()", "view",
         str(tmp_path / "nope.json")],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "nope.json" in res.stderr


def test_view_slice_serves_only_those_steps_and_removes_the_slice_on_stop(tmp_path):
    """`--slice 6-7` on resnet (steps #5..#10): the served bytes are a trace holding
    ProfilerStep#6 and #7 only, written under TMPDIR and gone once the server stops."""
    import gzip
    import json

    path = corpus("gpu/resnet50_dataloader_workers0.pt.trace.json.gz")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), CI="1", TMPDIR=str(scratch))
    proc = subprocess.Popen(
        [sys.executable, "-c", "from kinetoscope.cli import main; main()", "view", str(path),
         "--slice", "6-7"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        sliced_line = proc.stdout.readline()
        assert sliced_line.startswith("sliced ") and "steps 6-7" in sliced_line, sliced_line
        proc.stdout.readline()  # serving ...
        url = proc.stdout.readline().split("url=", 1)[1].strip()
        served = next(scratch.rglob("*.json.gz"))
        assert url.endswith("/" + served.name)
        request = urllib.request.Request(url, headers={"Origin": "https://ui.perfetto.dev"})
        with urllib.request.urlopen(request, timeout=30) as resp:
            body = resp.read()
        events = json.loads(gzip.decompress(body))["traceEvents"]
        steps = sorted({e["name"] for e in events if e.get("name", "").startswith("ProfilerStep#")})
        assert steps == ["ProfilerStep#6", "ProfilerStep#7"]
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0 and "Traceback" not in err, err
    assert list(scratch.iterdir()) == []  # the temporary slice is removed
    assert path.exists()


def test_view_slice_with_a_bad_range_is_one_line_exit_2():
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), CI="1")
    res = subprocess.run(
        [sys.executable, "-c", "from kinetoscope.cli import main; main()", "view",
         str(corpus(TRACE)), "--slice", "7-x"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_view_stops_cleanly_when_started_as_a_background_job(stop):
    """`kinetoscope view T &` from a script: the shell starts it with SIGINT ignored,
    and Python then never raises KeyboardInterrupt; Ctrl-C (SIGINT) and `kill`
    (SIGTERM) must still stop it with "stopped" and exit 0 (before: SIGINT hung)."""
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), CI="1")
    proc = subprocess.Popen(
        [sys.executable, "-c", "from kinetoscope.cli import main; main()", "view",
         str(corpus(TRACE))],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        preexec_fn=_ignore_sigint,
    )  # fmt: skip
    try:
        assert proc.stdout.readline().startswith("serving ")
        assert proc.stdout.readline().startswith("open in Perfetto: ")
    finally:
        proc.send_signal(stop)
        try:
            _, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert proc.returncode == 0 and "stopped" in err and "Traceback" not in err, err
