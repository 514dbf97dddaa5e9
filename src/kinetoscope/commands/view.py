"""`kinetoscope view TRACE`: open the trace in the Perfetto UI without uploading it.

Serves the file on 127.0.0.1 (serve/perfetto.py), prints the deep link, opens a
browser where one exists (not under CI or `--no-browser`), and stops cleanly
on Ctrl-C, or by itself once no request came for `--timeout` seconds (15 minutes by
default: the UI fetches the trace once, and a forgotten server should not stay open).
`--slice 3-5` first cuts the trace down to those steps with the slicer (slicing/)
into a temporary file, removed when the server stops: the Perfetto UI loads a whole
trace into browser memory, so large ones are trimmed before they are served.
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
from pathlib import Path

import typer

from ..errors import UsageError
from ..serve.perfetto import IDLE_TIMEOUT_S, check_port, check_timeout


def register(app: typer.Typer) -> None:
    app.command("view")(view_command)


def view_command(
    trace_path: Path = typer.Argument(..., metavar="TRACE", help="Kineto trace (.json/.gz)."),
    port: int = typer.Option(0, "--port", help="Port on 127.0.0.1 (default: a free one)."),
    no_browser: bool = typer.Option(
        False, "--no-browser", help="Only print the link; do not open a browser."
    ),
    slice_steps: str | None = typer.Option(
        None,
        "--slice",
        metavar="STEPS",
        help="Serve only these ProfilerStep numbers: N or FIRST-LAST (e.g. 3-5).",
    ),
    timeout: float = typer.Option(
        IDLE_TIMEOUT_S,
        "--timeout",
        help="Stop after this many seconds idle (0: never).",
    ),
    raw: bool = typer.Option(
        False, "--raw", help="Serve the trace as it is (Perfetto may drop overlapping slices)."
    ),
) -> None:
    """Serve TRACE on 127.0.0.1 and print the link that opens it in ui.perfetto.dev."""
    check_port(port)  # before a slice is cut
    check_timeout(timeout)
    if not trace_path.is_file():
        raise UsageError(f"{trace_path}: no such trace file")
    with tempfile.TemporaryDirectory(prefix="kinetoscope-view-") as folder:
        served = trace_path
        if slice_steps is not None:
            served = _sliced(trace_path, slice_steps, Path(folder))
        if not raw:
            exported = _exported(served, Path(folder) / f"{_stem(trace_path)}.perfetto.json.gz")
            if served != trace_path:
                served.unlink()  # the slice, exported: one copy on disk
            served = exported
        _serve(served, port, no_browser, timeout)


def _sliced(trace_path: Path, slice_steps: str, folder: Path) -> Path:
    from ..slicing import Selection, parse_steps, slice_trace

    selection = Selection(steps=parse_steps(slice_steps))
    sliced = folder / f"{_stem(trace_path)}.steps{slice_steps}.json.gz"
    result = slice_trace(trace_path, selection, sliced)
    print(
        f"sliced {trace_path} to steps {slice_steps}: "
        f"{result.events_out:,} of {result.events_in:,} events",
        flush=True,
    )
    return result.output


def _exported(trace_path: Path, output: Path) -> Path:
    """The trace as `export --format perfetto` writes it, with one line saying what changed."""
    from .export import describe, handoff

    result = handoff(trace_path, output)
    print(describe(result), file=sys.stderr, flush=True)
    return result.output


def _stem(path: Path) -> str:
    """`run.pt.trace.json.gz` -> `run.pt.trace`: the name without its .json(.gz)."""
    name = path.name
    for suffix in (".gz", ".json"):
        name = name.removesuffix(suffix)
    return name


def _serve(trace_path: Path, port: int, no_browser: bool, timeout: float) -> None:
    """Serve `trace_path` until Ctrl-C, or until no request came for `timeout` seconds."""
    from ..serve.perfetto import deep_link, make_server, serve_until_idle

    try:
        server = make_server(trace_path.resolve(), port)
    except OSError as exc:
        raise UsageError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}") from None
    link = deep_link(trace_path, server.server_port)
    # before the link is printed: whoever reads it may stop us at once
    previous = {sig: signal.signal(sig, _stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        print(f"serving {trace_path} on http://127.0.0.1:{server.server_port}/ (Ctrl-C to stop)")
        print(f"open in Perfetto: {link}", flush=True)
        if not no_browser and not os.environ.get("CI"):
            _open_browser(link)
        serve_until_idle(server, timeout)
        print(f"stopped: no request for {timeout:g} s (--timeout)", file=sys.stderr)
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
    finally:
        server.server_close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _stop(signum: int, frame: object) -> None:
    """Ctrl-C or `kill` stops the server cleanly (the slice removed, one line printed).

    Installed explicitly: a process started in the background by a non-interactive
    shell inherits SIGINT as ignored, and Python then never raises KeyboardInterrupt.
    """
    raise KeyboardInterrupt


def _open_browser(link: str) -> None:
    """Open `link` where a browser exists; headless machines just keep the printed link."""
    import webbrowser

    try:
        webbrowser.get()
    except webbrowser.Error:
        return
    webbrowser.open(link)
