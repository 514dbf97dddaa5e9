"""Helpers for the capture and command tests: run the real CLI in a subprocess or in this
process, read what it wrote."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import signal
import subprocess
import sys
from pathlib import Path

import kinetoscope

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"


def sources_first() -> str:
    """PYTHONPATH for a child that must import this worktree's kinetoscope, whatever the
    environment's editable install points at."""
    return os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])


def run_cli(*args: str, cwd: Path | None = None, code: str | None = None):
    """`python -m kinetoscope ARGS` (or `python -c code`) with this worktree's sources first."""
    env = {**os.environ, "PYTHONPATH": sources_first()}
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


def profile_here(*args, cwd: Path | None = None):
    """`kinetoscope profile ARGS` in this process, answered as `run_here` answers.

    A `profile` child costs about 3 s of CPU before it records anything (the CLI and
    `import torch`); in a worker that has them already, only the profiling is left.
    torch is imported first where it is installed: `main` ends a process at once
    (`cli._leave`) when the command imported torch there. What a run leaves in the
    process a child would have taken with it is put back: torch's global RNG (the
    transformer workload seeds it), torch.profiler's warnings shown once per process
    (a later test's own profiler would not see "Profiler clears events", which a
    script's run raises under kinetoscope's filter) and the modules a script imported
    from its own folder or the working folder (`helpers.py`). A test of the process itself (a cold
    start, what reaches file descriptor 2, signals, environment read at torch's import
    such as OMP_NUM_THREADS) keeps a child (`run_cli`)."""
    if importlib.util.find_spec("torch") is None:  # the command says torch is missing
        return run_here("profile", *args, cwd=cwd)
    scripts = [Path(cwd or ".", a).resolve().parent for a in map(str, args) if a.endswith(".py")]
    folders = [  # a test's own folder, never one holding the sources or the environment
        f
        for f in [*scripts, *([Path(cwd).resolve()] if cwd else [])]
        if not any(Path(p).resolve().is_relative_to(f) for p in (SRC, sys.prefix))
    ]
    modules = set(sys.modules)
    try:
        with torch_state_kept():
            return run_here("profile", *args, cwd=cwd)
    finally:
        forget_modules(modules, folders)


@contextlib.contextmanager
def torch_state_kept():
    """Put back what a recording run changes in torch for the rest of its process, as a
    child would have taken it away: the global RNG (workloads and scripts seed it), the
    intra-op thread count (scripts pin one thread) and torch.profiler's warnings shown
    once per process (a later test's own profiler would not see "Profiler clears
    events")."""
    import torch
    import torch.profiler.profiler as torch_profiler

    rng, threads = torch.random.get_rng_state(), torch.get_num_threads()
    shown = set(torch_profiler._WARNINGS_SHOWN)
    try:
        yield
    finally:
        torch.random.set_rng_state(rng)
        torch.set_num_threads(threads)
        torch_profiler._WARNINGS_SHOWN.intersection_update(shown)


def forget_modules(before: set[str], folders: list[Path]) -> None:
    """Drop the modules imported since `before` from `folders` (a script's own, never
    torch's or ours): a later run of another script of the same name imports its own."""
    for name in set(sys.modules) - before:
        where = getattr(sys.modules[name], "__file__", None)
        if where and any(Path(where).resolve().is_relative_to(f) for f in folders):
            del sys.modules[name]


def record_here(script: str, *argv) -> None:
    """Run a recording script, the text a test would hand to `python -c SCRIPT ARGV`, in
    this process.

    A child cost 4.3 s of CPU for the MoE and the LLM recordings here, 3.1 s of it
    `import torch` before the script's first line; a worker that has torch already
    pays only for the recording. For a recording of the steady state only: a
    cold start (the first call of an op, the profiler's own first start) keeps a child
    (tests/torch_traces.py). What a script sets for itself is put back as its process
    would have taken it away: `sys.argv`, torch's global RNG (scripts seed it), its
    intra-op thread count (scripts pin one thread) and torch.profiler's warnings shown
    once per process; the script's own warnings are not the test's."""
    import warnings

    saved_argv, sys.argv = sys.argv, ["-c", *map(str, argv)]
    try:
        with torch_state_kept(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(compile(script, "<recording script>", "exec"), {"__name__": "__main__"})
    except SystemExit as done:  # a script that ends early on purpose (an optional library)
        if done.code not in (None, 0):
            raise
    finally:
        sys.argv = saved_argv


def record_judged(script: str, path: Path, *argv, tries: int = 3) -> kinetoscope.Trace:
    """`record_here` into `path`, recorded again (under a new name, at most `tries` times)
    while the capture is not judged, and loaded: for a test of what a verdict says.

    A short recording on a loaded machine can lose most of its window with its thread
    off the CPU. The capture grade then rightly withholds the verdict (a full run with
    two CPU hogs beside six workers: 12.2 ms of a 16.1 ms window with no op, one
    recording in ten of a small conv net), which says nothing of the evidence a verdict
    carries. A capture withheld every time fails the test."""
    from kinetoscope.rules.verdict import classify

    for attempt in range(tries):
        target = path if attempt == 0 else path.with_name(f"again{attempt}_{path.name}")
        record_here(script, target, *argv)
        trace = kinetoscope.load(target)
        call = classify(trace)
        if call.regime != "not-judged":
            return trace
    raise AssertionError(f"{tries} recordings, none judged: {call.reasons}")


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
