"""A one-file HTTP server on 127.0.0.1 that the Perfetto UI can fetch a trace from.

ui.perfetto.dev opens `#!/?url=http://127.0.0.1:PORT/NAME` by fetching that URL
from the browser: a cross-origin request, so the response must carry
`Access-Control-Allow-Origin: https://ui.perfetto.dev` (and answer the CORS
preflight). Only the one file is served, read from disk in pieces; any other path
is a 404, and so is the trace once it is gone (renamed or removed while served).
The trace never leaves the machine.

Only requests whose `Host` is the `127.0.0.1:PORT` the link names are answered
(403 otherwise): a web page the user visits can point a name it owns at 127.0.0.1
(DNS rebinding) and fetch from this port as its own origin, but its requests carry
its own name. The server stops by itself once no request has come for its idle
timeout (`serve_until_idle`).
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote

from ..errors import UsageError
from ..formatting.escaping import inert

PERFETTO_ORIGIN = "https://ui.perfetto.dev"
HOST = "127.0.0.1"
#: seconds without a request after which `view` stops (the UI fetches the trace once)
IDLE_TIMEOUT_S = 900.0


class _TraceHandler(BaseHTTPRequestHandler):
    def __init__(self, path: Path, *args, **kwargs) -> None:
        self.trace_path = path
        super().__init__(*args, **kwargs)

    def _cors(self) -> None:
        self.send_header("Access-Control-Allow-Origin", PERFETTO_ORIGIN)
        self.send_header("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
        self.send_header("Access-Control-Allow-Headers", "*")
        self.send_header("Vary", "Origin")

    def _empty(self, status: int, cors: bool = True) -> None:
        self.send_response(status)
        if cors:
            self._cors()
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _addressed_to_us(self) -> bool:
        """The `Host` the printed link sends, once; anything else gets 403 and nothing more
        (a second `Host` after the right one was answered: HTTP says 400 for two)."""
        if self.headers.get_all("Host") == [f"{HOST}:{self.server.server_port}"]:
            return True
        self._empty(403, cors=False)
        return False

    def do_OPTIONS(self) -> None:  # noqa: N802 - the http.server naming
        with self.server.activity():
            if self._addressed_to_us():
                self._empty(204)

    def _open(self):
        """The trace opened for this request with its size, or None once answered 404
        (another path, or the trace gone since the server started)."""
        if self.path.split("?", 1)[0] != "/" + quote(self.trace_path.name):
            self._empty(404)
            return None
        try:
            handle = self.trace_path.open("rb")
        except OSError:
            self._empty(404)
            return None
        self.send_response(200)
        self._cors()
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(os.fstat(handle.fileno()).st_size))
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        return handle

    def do_HEAD(self) -> None:  # noqa: N802
        with self.server.activity():
            if self._addressed_to_us() and (handle := self._open()) is not None:
                handle.close()

    def do_GET(self) -> None:  # noqa: N802
        with self.server.activity():
            if not self._addressed_to_us() or (handle := self._open()) is None:
                return
            with handle:
                while chunk := handle.read(1 << 20):
                    try:
                        self.wfile.write(chunk)
                    except (BrokenPipeError, ConnectionResetError):
                        return

    def log_message(self, format: str, *args) -> None:  # quiet: the command prints the link
        return


class TraceServer(ThreadingHTTPServer):
    """The server, counting requests in flight and when the last one ended."""

    daemon_threads = True

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._lock = threading.Lock()
        self._busy = 0
        self.last_active = time.monotonic()

    @contextmanager
    def activity(self) -> Iterator[None]:
        """Around each request: the server is not idle while one is answered."""
        with self._lock:
            self._busy += 1
        try:
            yield
        finally:
            with self._lock:
                self._busy -= 1
                self.last_active = time.monotonic()

    def idle_for(self) -> float:
        """Seconds since the last request ended; 0 while one is in flight."""
        with self._lock:
            return 0.0 if self._busy else time.monotonic() - self.last_active

    def handle_error(self, request, client_address) -> None:
        """One line instead of socketserver's traceback (a client gone mid-answer)."""
        print(inert(f"kinetoscope: view: a request failed: {sys.exc_info()[1]}"), file=sys.stderr)


def check_port(port: int) -> None:
    """Refuse a port no socket has, before binding (the socket raised OverflowError)."""
    if not 0 <= port <= 65535:
        raise UsageError(f"--port {port}: give a port from 0 to 65535 (0: a free one)")


def check_timeout(seconds: float) -> None:
    """Refuse an idle timeout that is no duration (0: never stop)."""
    if not math.isfinite(seconds) or seconds < 0:
        raise UsageError(f"--timeout {seconds}: give seconds, 0 or more (0: never stop)")


def make_server(path: Path, port: int = 0) -> TraceServer:
    """A server for `path` on 127.0.0.1 (`port` 0: a free one, see `server.server_port`;
    `check_port` first)."""
    return TraceServer((HOST, port), partial(_TraceHandler, path))


def serve_until_idle(server: TraceServer, timeout: float) -> None:
    """Answer requests until none has come for `timeout` seconds (0: until stopped)."""
    server.timeout = 0.5  # how often handle_request returns to look at the clock
    while not timeout or server.idle_for() < timeout:
        server.handle_request()


def deep_link(path: Path, port: int) -> str:
    """The Perfetto UI address that opens the served trace."""
    return f"{PERFETTO_ORIGIN}/#!/?url=http://{HOST}:{port}/{quote(path.name)}"
