"""Helpers for the capture and command tests: run the real CLI in a subprocess or in this
process, read what it wrote."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
from pathlib import Path

import kinetoscope

SRC = Path(__file__).resolve().parents[1] / "src"


def run_cli(*args: str, cwd: Path | None = None, code: str | None = None):
    """`python -m kinetoscope ARGS` (or `python -c code`) with this worktree's sources first."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
    }
    command = [sys.executable, "-c", code] if code else [sys.executable, "-m", "kinetoscope"]
    return subprocess.run(
        [*command, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=600
    )


def run_here(*args, cwd: Path | None = None, stdin: bytes | None = None):
    """`kinetoscope ARGS` run by the CLI's own `main` in this process, answered as `run_cli`
    answers (a CompletedProcess: exit code, stdout, stderr as text).

    For a test of what a command prints, writes and exits with. A child costs about a
    second of CPU before the command starts (the interpreter, then typer, numpy, rich and
    the commands' modules), more than most analyses of a corpus trace; a test of the
    process itself (signals, imports, limits, `python -m`, torch's teardown) uses
    `run_cli`. Standard streams are in-memory files with no descriptor, as a pipe is no
    terminal; the environment, the working folder and the signal handlers the command
    changes (`--no-cache` sets the environment, `main` installs its SIGINT and SIGTERM
    handlers) are put back. Never for a command that imports torch in a process that has
    not: `main` then ends the process at once, as it does for `profile`."""
    from kinetoscope.cli import main

    argv = [str(a) for a in args]
    out, err = io.BytesIO(), io.BytesIO()
    saved = (sys.argv, sys.stdout, sys.stderr, sys.stdin, dict(os.environ), os.getcwd())
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    streams = [io.TextIOWrapper(b, encoding="utf-8") for b in (out, err, io.BytesIO(stdin or b""))]
    sys.argv = ["kinetoscope", *argv]
    sys.stdout, sys.stderr, sys.stdin = streams
    code = 0
    try:
        if cwd is not None:
            os.chdir(cwd)
        main()
    except SystemExit as done:
        code = 0 if done.code is None else done.code
        if not isinstance(code, int):  # as the interpreter ends: the text, exit 1
            print(code, file=sys.stderr)
            code = 1
    finally:
        for stream in streams:
            stream.flush()
            stream.detach()  # a wrapper closes its buffer when collected; the text is read below
        sys.argv, sys.stdout, sys.stderr, sys.stdin, environ, folder = saved
        os.environ.clear()
        os.environ.update(environ)
        os.chdir(folder)
        for number, handler in handlers.items():
            signal.signal(number, handler)
    return subprocess.CompletedProcess(
        ["kinetoscope", *argv], code, out.getvalue().decode(), err.getvalue().decode()
    )


def error_lines(stderr: str) -> list[str]:
    """stderr without the progress lines (`[kinetoscope] importing torch`, ...)."""
    return [
        line
        for line in stderr.splitlines()
        if line.strip() and not line.startswith("[kinetoscope] ")
    ]


def step_numbers(trace: kinetoscope.Trace) -> list[int]:
    return [step.number for step in trace.steps]


def cli(*args, capsys) -> tuple[int, str, str]:
    """Run the CLI in-process: (exit code, stdout, stderr), by `run_here`; what the test
    printed before stays in `capsys`."""
    done = run_here(*args)
    return done.returncode, done.stdout, done.stderr
