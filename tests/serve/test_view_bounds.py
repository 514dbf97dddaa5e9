"""`kinetoscope view` within bounds (issue 36): it answers only requests addressed to the
loopback name and port it printed (a page using DNS rebinding sends its own host name),
stops by itself after an idle timeout and says so, and answers a trace that vanished
while served with an HTTP error instead of a traceback."""

from __future__ import annotations

import http.client
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from ..conftest import corpus

REPO = Path(__file__).resolve().parents[2]
TRACE = "gpu/tracelens_h100__gaunernst_bert-small-uncased__1016001.json.gz"


def _start(path: Path, *extra: str) -> tuple[subprocess.Popen, int, str]:
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), CI="1")
    proc = subprocess.Popen(
        [sys.executable, "-c", "from kinetoscope.cli import main; main()", "view", str(path),
         "--raw", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    first = proc.stdout.readline()
    assert first.startswith("serving "), first
    proc.stdout.readline()
    port = int(first.split("http://127.0.0.1:", 1)[1].split("/", 1)[0])
    return proc, port, "/" + path.name


def _get(port: int, target: str, host: str | None = None, method: str = "GET"):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.putrequest(method, target, skip_host=True)
    conn.putheader("Host", host if host is not None else f"127.0.0.1:{port}")
    conn.endheaders()
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    return resp.status, body


def _stop(proc: subprocess.Popen) -> str:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    return err


def test_only_the_printed_host_and_port_are_answered(tmp_path):
    path = tmp_path / "t.json.gz"
    shutil.copy(corpus(TRACE), path)
    proc, port, target = _start(path)
    try:
        assert _get(port, target)[0] == 200
        for host in ("evil.example", f"evil.example:{port}", "127.0.0.1", "127.0.0.1:1",
                     f"localhost.evil:{port}", ""):  # fmt: skip
            for method in ("GET", "HEAD", "OPTIONS"):
                status, body = _get(port, target, host, method)
                assert status == 403 and path.read_bytes() not in body, (host, method, status)
    finally:
        err = _stop(proc)
    assert "Traceback" not in err, err


def test_view_stops_after_the_idle_timeout_and_says_so(tmp_path):
    proc, port, target = _start(corpus(TRACE), "--timeout", "2")
    try:
        assert _get(port, target)[0] == 200  # a request restarts the clock
        began = time.monotonic()
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert 1.5 < time.monotonic() - began < 20
    assert "no request for 2 s" in err and "Traceback" not in err, err


def test_a_negative_timeout_is_one_line_exit_2():
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), CI="1")
    res = subprocess.run(
        [sys.executable, "-c", "from kinetoscope.cli import main; main()", "view",
         str(corpus(TRACE)), "--timeout", "-1"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "--timeout" in res.stderr


def test_a_trace_that_vanished_while_served_is_an_http_error(tmp_path):
    path = tmp_path / "t.json.gz"
    shutil.copy(corpus(TRACE), path)
    proc, port, target = _start(path)
    try:
        path.rename(tmp_path / "elsewhere.json.gz")
        for method in ("GET", "HEAD"):
            assert _get(port, target, method=method)[0] == 404
        assert proc.poll() is None  # still serving
    finally:
        err = _stop(proc)
    assert "Traceback" not in err, err


def test_a_request_with_two_host_headers_is_refused(tmp_path):
    # the server read the first `Host` only, so the right one followed by another was
    # answered (found by tests/serve/test_fuzz_view.py); HTTP/1.1 says 400 for two
    path = tmp_path / "t.json.gz"
    shutil.copy(corpus(TRACE), path)
    proc, port, target = _start(path)
    try:
        right = f"127.0.0.1:{port}"
        for hosts in ([right, "evil.example"], ["evil.example", right], [right, right]):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.putrequest("GET", target, skip_host=True)
            for host in hosts:
                conn.putheader("Host", host)
            conn.endheaders()
            resp = conn.getresponse()
            assert resp.status == 403 and resp.read() == b"", hosts
            conn.close()
        assert _get(port, target)[0] == 200  # one Host, the printed one
    finally:
        err = _stop(proc)
    assert "Traceback" not in err, err
