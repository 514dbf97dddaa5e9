"""`kinetoscope view`'s HTTP server fuzzed with hostile requests (issues 33 and 36).

One `view --raw` server runs for the module, started as a user starts it; each case
sends one raw request over a socket: any method (those the server has, others,
garbage), any target (the trace, `/`, `..` and its percent-encodings, a file next to
the trace, absolute URLs, 70 kB paths, control characters), any HTTP version, a right,
wrong, missing or doubled `Host`, huge or many headers, a body; now and then a crowd of
idle connections is held open first. A second property starts `view` (exported, or
`--slice`) on a mutated trace of tests/test_fuzz.py.

The property: an HTTP answer (without a status line where http.server cannot read the
request line: it answers those the HTTP/0.9 way), 200 only for GET/HEAD of the trace's
own path with the printed `Host` alone (so a wrong or doubled `Host` is refused), a
200 body that is the trace and never the marker the files beside it hold, nothing on
stderr but one-line notes (no traceback), and the server answers the next request.
On a mutated trace, `view` serves it or refuses in one line.

Default run: a few cases. `pytest -m fuzz tests/serve/test_fuzz_view.py`: 3,000
requests and 60 started servers.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fuzz_log import log_run
from tests.fuzz_surfaces import MARKER
from tests.test_fuzz import COMMON, _mutated

from ..conftest import corpus

REPO = Path(__file__).resolve().parents[2]
TRACE = "gpu/compare_base.json.gz"
SETTINGS = {**COMMON, "deadline": None}
#: a request answered after this hangs (an answer takes milliseconds)
BOUND_S = 20.0


def _start(path: Path, errlog: Path, *extra: str) -> tuple[subprocess.Popen, int | None]:
    """`view PATH` in a child: (process, port), port None when it exited before serving."""
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), CI="1")
    with open(errlog, "ab") as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", "from kinetoscope.cli import main; main()", "view", str(path),
             "--no-browser", "--timeout", "0", *extra],
            stdout=subprocess.PIPE, stderr=err, text=True, env=env,
        )  # fmt: skip
    for line in proc.stdout:
        if line.startswith("serving "):
            proc.stdout.readline()
            return proc, int(line.split("http://127.0.0.1:", 1)[1].split("/", 1)[0])
    proc.wait(timeout=60)
    return proc, None


def _stop(proc: subprocess.Popen) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        return proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise


class Served:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.trace = folder / "t.json.gz"
        shutil.copy(corpus(TRACE), self.trace)
        (folder / "secret.txt").write_text(MARKER)
        (folder.parent / "outside.txt").write_text(MARKER)
        self.body = self.trace.read_bytes()
        self.errlog = folder.parent / "view.err"
        self.err_seen = 0
        self.proc, self.port = _start(self.trace, self.errlog, "--raw")
        assert self.port is not None, self.errlog.read_text()

    def new_stderr(self) -> str:
        text = self.errlog.read_text(errors="replace")
        fresh, self.err_seen = text[self.err_seen :], len(text)
        return fresh


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    base = tmp_path_factory.mktemp("viewfuzz")
    (base / "served").mkdir()
    server = Served(base / "served")
    yield server
    assert _stop(server.proc) == 0
    assert "Traceback" not in server.errlog.read_text(errors="replace")


def _exchange(port: int, request: bytes, crowd: int = 0) -> bytes:
    """Send `request` raw and read the answer to its end (HTTP/1.0: the server closes)."""
    idle = [socket.create_connection(("127.0.0.1", port), timeout=BOUND_S) for _ in range(crowd)]
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=BOUND_S) as conn:
            try:
                conn.sendall(request)
                conn.shutdown(socket.SHUT_WR)
            except OSError:
                pass  # the server answered and closed before the whole request was sent
            chunks = []
            try:
                while chunk := conn.recv(1 << 16):
                    chunks.append(chunk)
            except ConnectionResetError:
                pass
            return b"".join(chunks)
    finally:
        for sock in idle:
            sock.close()


METHODS = ["GET", "HEAD", "OPTIONS", "POST", "PUT", "DELETE", "TRACE", "CONNECT", "PATCH",
           "get", "G\x00T", "GET GET", "\x1b[31m", "X" * 5000]  # fmt: skip
VERSIONS = ["HTTP/1.1", "HTTP/1.0", "HTTP/0.9", "HTTP/2.0", "HTTP/9.9", "HTTP/1.1x", "", "FTP/1"]


def _targets(name: str) -> st.SearchStrategy[str]:
    return st.sampled_from([
        f"/{name}", f"/{name}?x=1", f"/{name}#frag", f"/{name}/", f"//{name}", f"/./{name}",
        f"/{name.upper()}", f"/{name.replace('.', '%2e')}", f"/{name}%00", f"/{name}\x00",
        "/", "", "*", "/secret.txt", "/../secret.txt", "/..%2fsecret.txt", "/%2e%2e/secret.txt",
        "/../outside.txt", "/..%2f..%2foutside.txt", "/%252e%252e/secret.txt", "/.%2e/outside.txt",
        "/etc/passwd", "//etc/passwd", "/proc/self/environ", "\\..\\secret.txt",
        f"http://127.0.0.1/{name}", f"http://evil.example/{name}", "/" + "a" * 70_000,
        "/" + "../" * 1000 + "etc/passwd", "/\x1b]8;;x\x07", "/\u202e", "/%ff%fe", "/%",
    ]) | st.text(st.characters(codec="utf-8"), max_size=40).map(lambda t: "/" + t)  # fmt: skip


def _hosts(port: int) -> st.SearchStrategy[list[str]]:
    right = f"127.0.0.1:{port}"
    one = st.sampled_from([right, right, "evil.example", f"evil.example:{port}", "127.0.0.1",
                           f"localhost:{port}", f"127.0.0.1:{port + 1}", f" {right}",
                           right.upper(), f"{right}\x00", "", "x" * 10_000])  # fmt: skip
    return st.lists(one, max_size=3)


EXTRA = st.sampled_from([
    [], [], ["Origin: https://ui.perfetto.dev"], ["Origin: https://evil.example"],
    ["X-Big: " + "b" * 70_000], [f"X-{i}: {i}" for i in range(150)], ["Bad header line"],
    ["Content-Length: 99999999999"], ["Content-Length: -1"], ["Transfer-Encoding: chunked"],
    ["Expect: 100-continue"], ["Range: bytes=0-10"], ["X-Ctl: \x1b[2J\x07"], [": empty"],
    ["Connection: keep-alive"],
])  # fmt: skip


def _request(data, port: int, name: str) -> tuple[str, str, list[str], bytes]:
    method = data.draw(st.sampled_from(METHODS), label="method")
    target = data.draw(_targets(name), label="target")
    version = data.draw(st.sampled_from(VERSIONS), label="version")
    hosts = data.draw(_hosts(port), label="hosts")
    lines = [f"{method} {target} {version}".rstrip()]
    lines += [f"Host: {h}" for h in hosts] + data.draw(EXTRA, label="headers")
    body = data.draw(st.sampled_from([b"", b"x" * 100, b"\x00" * 10]), label="body")
    text = "\r\n".join(lines) + "\r\n\r\n"
    return method, target, hosts, text.encode("utf-8", "surrogateescape") + body


def _status(answer: bytes) -> int | None:
    head = answer.split(b"\r\n", 1)[0]
    if not head.startswith(b"HTTP/1."):
        return None
    return int(head.split()[1])


def _word(method: str) -> str:
    """The method as one word for the log (`odd` for garbage)."""
    return "".join(c for c in method[:12] if c.isalnum()) or "odd"


def _request_case(served: Served, data) -> None:
    name = served.trace.name
    method, target, hosts, request = _request(data, served.port, name)
    crowd = data.draw(st.sampled_from([0] * 9 + [30]), label="idle connections")
    try:
        answer = _exchange(served.port, request, crowd)
    except TimeoutError:
        log_run("view", f"{_word(method)}-request", "hang")
        raise AssertionError(f"no answer within {BOUND_S} s: {request[:300]!r}") from None
    status = _status(answer)
    stderr = served.new_stderr()
    right = [h.strip() for h in hosts] == [f"127.0.0.1:{served.port}"]
    own = target.split("?", 1)[0] == f"/{name}"
    outcome = "clean-error" if status is None or status >= 400 else "ok"
    # a request line http.server cannot read (no version, HTTP/2.0, 5 kB) is answered the
    # HTTP/0.9 way, without a status line: an answer all the same, judged by what it holds
    if "Traceback" in stderr:
        outcome = "traceback"
    elif served.body in answer and not (right and own):
        outcome = "bad-output"
    elif status is not None and status < 400 and not (right and own or method == "OPTIONS"):
        outcome = "bad-output"  # served what it must not, or to whom it must not
    elif MARKER.encode() in answer:
        outcome = "bad-output"
    log_run("view", f"{_word(method)}-request", outcome)
    assert outcome in ("ok", "clean-error"), (outcome, request[:500], answer[:500], stderr)
    if status == 200 and method == "GET":
        assert answer.split(b"\r\n\r\n", 1)[1] == served.body
    if status is not None and status < 400 and method == "OPTIONS":
        assert right, (request[:300], answer[:300])
    assert all(line.count("\n") <= 1 for line in stderr.splitlines(keepends=True))
    good = _exchange(
        served.port, f"GET /{name} HTTP/1.1\r\nHost: 127.0.0.1:{served.port}\r\n\r\n".encode()
    )
    assert _status(good) == 200 and good.endswith(served.body), "the server stopped serving"


def _vanish_case(served: Served, data) -> None:
    """The trace renamed, removed or replaced while served: an HTTP answer, no traceback."""
    how = data.draw(st.sampled_from(["rename", "remove", "folder", "empty"]), label="vanish")
    hidden = served.trace.with_name("hidden.json.gz")
    served.trace.rename(hidden)
    if how == "folder":
        served.trace.mkdir()
    elif how == "empty":
        served.trace.write_bytes(b"")
    try:
        request = f"GET /{served.trace.name} HTTP/1.1\r\nHost: 127.0.0.1:{served.port}\r\n\r\n"
        status = _status(_exchange(served.port, request.encode()))
    finally:
        if served.trace.is_dir():
            served.trace.rmdir()
        served.trace.unlink(missing_ok=True)
        hidden.rename(served.trace)
    stderr = served.new_stderr()
    outcome = (
        "traceback" if "Traceback" in stderr else "ok" if status in (200, 404) else "bad-output"
    )
    log_run("view", f"vanished-{how}", outcome)
    assert outcome == "ok", (how, status, stderr)


def _mutated_view_case(data, tmp_path) -> None:
    """`view` (exported, or `--slice`) on a mutated trace: serves it, or one line, exit 2."""
    _, path = _mutated(data, tmp_path)
    options = [[], [], ["--slice", "1009"], ["--slice", "1-99999999999999999999"], ["--raw"]]
    extra = data.draw(st.sampled_from(options), label="options")
    errlog = tmp_path / f"err{os.getpid()}.txt"
    errlog.write_bytes(b"")
    proc, port = _start(path, errlog, *extra)
    status = None
    if port is not None:
        answer = _exchange(port, f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        status = _status(answer)
        code = _stop(proc)
    else:
        code = proc.returncode
    err = errlog.read_text(errors="replace")
    lines = [line for line in err.splitlines() if line.startswith("kinetoscope: ")]
    if "Traceback" in err:
        outcome = "traceback"
    elif "internal error" in err:
        outcome = "internal-error"
    elif port is None:
        outcome = "clean-error" if code == 2 and len(lines) == 1 else "internal-error"
    else:
        outcome = "ok" if code == 0 and status == 404 else "bad-output"
    log_run("view", f"view{'-' + extra[0].strip('-') if extra else ''}", outcome)
    assert outcome in ("ok", "clean-error"), (outcome, extra, code, status, err[-2000:])
    path.unlink()


@settings(max_examples=10, **SETTINGS)
@given(data=st.data())
def test_view_answers_hostile_requests(served, data):
    _request_case(served, data)


@settings(max_examples=2, **SETTINGS)
@given(data=st.data())
def test_view_answers_while_the_trace_vanishes(served, data):
    _vanish_case(served, data)


@settings(max_examples=1, **SETTINGS)
@given(data=st.data())
def test_view_on_a_mutated_trace(data, tmp_path):
    _mutated_view_case(data, tmp_path)


@pytest.mark.fuzz
@settings(max_examples=3000, **SETTINGS)
@given(data=st.data())
def test_fuzz_view_requests_3000(served, data):
    _request_case(served, data)


@pytest.mark.fuzz
@settings(max_examples=100, **SETTINGS)
@given(data=st.data())
def test_fuzz_view_vanishing_trace_100(served, data):
    _vanish_case(served, data)


@pytest.mark.fuzz
@settings(max_examples=60, **SETTINGS)
@given(data=st.data())
def test_fuzz_view_on_mutated_traces_60(data, tmp_path):
    _mutated_view_case(data, tmp_path)
