"""A one-file HTTP server on 127.0.0.1 that the Perfetto UI can fetch a trace from.

ui.perfetto.dev opens `#!/?url=http://127.0.0.1:PORT/NAME` by fetching that URL
from the browser: a cross-origin request, so the response must carry
`Access-Control-Allow-Origin: https://ui.perfetto.dev` (and answer the CORS
preflight). Only the one file is served, from memory-mapped disk reads; any
other path is a 404. The trace never leaves the machine.
"""

from __future__ import annotations

import threading
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote

from ..errors import UsageError

PERFETTO_ORIGIN = "https://ui.perfetto.dev"
HOST = "127.0.0.1"


class _TraceHandler(BaseHTTPRequestHandler):
    def __init__(self, path: Path, *args, **kwargs) -> None:
        self.trace_path = path
        super().__init__(*args, **kwargs)

    def _cors(self) -> None:
        self.send_header("Access-Control-Allow-Origin", PERFETTO_ORIGIN)
        self.send_header("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
        self.send_header("Access-Control-Allow-Headers", "*")
        self.send_header("Vary", "Origin")

    def do_OPTIONS(self) -> None:  # noqa: N802 - the http.server naming
        self.send_response(204)
        self._cors()
        self.end_headers()

    def _head(self) -> bool:
        if self.path.split("?", 1)[0] != "/" + quote(self.trace_path.name):
            self.send_response(404)
            self._cors()
            self.send_header("Content-Length", "0")
            self.end_headers()
            return False
        self.send_response(200)
        self._cors()
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(self.trace_path.stat().st_size))
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        return True

    def do_HEAD(self) -> None:  # noqa: N802
        self._head()

    def do_GET(self) -> None:  # noqa: N802
        if not self._head():
            return
        with self.trace_path.open("rb") as f:
            while chunk := f.read(1 << 20):
                try:
                    self.wfile.write(chunk)
                except (BrokenPipeError, ConnectionResetError):
                    return

    def log_message(self, format: str, *args) -> None:  # quiet: the command prints the link
        return


def check_port(port: int) -> None:
    """Refuse a port no socket has, before binding (the socket raised OverflowError)."""
    if not 0 <= port <= 65535:
        raise UsageError(f"--port {port}: give a port from 0 to 65535 (0: a free one)")


def make_server(path: Path, port: int = 0) -> ThreadingHTTPServer:
    """A server for `path` on 127.0.0.1 (`port` 0: a free one, see `server.server_port`;
    `check_port` first)."""
    server = ThreadingHTTPServer((HOST, port), partial(_TraceHandler, path))
    server.daemon_threads = True
    return server


def deep_link(path: Path, port: int) -> str:
    """The Perfetto UI address that opens the served trace."""
    return f"{PERFETTO_ORIGIN}/#!/?url=http://{HOST}:{port}/{quote(path.name)}"


def serve_in_thread(server: ThreadingHTTPServer) -> threading.Thread:
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return thread
