"""Ctrl-C (SIGINT) and `kill` (SIGTERM) at a random moment of a run (issue 36, item 5).

Two targets through the real console entry in a child (`tests/fuzz_child.py`):
`profile matmul_add` on the CPU (imports torch, records, exports, explains: every
stage a signal can land in) and `explain --format json -o` on a generated trace of
200,000 events (reading, analysing, publishing the output). The moment is drawn
uniformly from 0 to 1.1 times the target's measured length, so some signals land
after the end. Property: SIGINT exits 130 and SIGTERM 143 (`cli._interrupted`,
`cli._terminated`; a SIGTERM before the entry point installed its handler ends
the process by the signal, with nothing written), or 0 when the run ended first;
exactly one line `kinetoscope: interrupted; ...` / `kinetoscope: terminated; ...`;
no traceback, no internal error; the files it says it kept are whole (a report that
parses, a trace that loads) and nothing else is left: no `-o` target after
`nothing written`, no temporary file in the output folder or in TMPDIR.

Fixed moments of `profile` (during the imports, inside the recorded steps) are in
tests/capture/test_profile_safety.py; the default run here adds one: `explain -o` on
the generated trace, SIGINT at a fixed moment. `pytest -m fuzz` runs
`KINETOSCOPE_FUZZ_SIGNAL_CASES` (default 60) random moments, logged (tests/fuzz_log.py,
surface `signals`).
"""

from __future__ import annotations

import gzip
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import kinetoscope
from kinetoscope.errors import TraceError
from tests.fuzz_child import error_lines, judge, left_in_tmp, start, wait
from tests.fuzz_log import log_run

EVENT = b'{"ph":"X","cat":"kernel","name":"k%d","ts":%d,"dur":3,"pid":0,"tid":7},'
TORCH_AS = 16 << 30  # torch maps far more address space than it touches
TORCH_RSS = 2 << 30
TIMEOUT = 300.0
SRC_FILE = Path(kinetoscope.__file__).with_name("entry.py")


def big_trace(folder: Path, events: int) -> Path:
    """A trace of `events` kernels with counting timestamps (gzip level 1)."""
    path = folder / "big.json.gz"
    body = b"".join(EVENT % (i % 500, 4 * i) for i in range(events))
    path.write_bytes(gzip.compress(b'{"traceEvents":[' + body[:-1] + b"]}", compresslevel=1))
    return path


def target_args(target: str, trace: Path | None) -> list[str]:
    if target == "profile":
        return ["profile", "matmul_add", "--size", "16", "--device", "cpu", "--out", "traces"]
    return ["explain", str(trace), "--format", "json", "-o", "out.json"]


def signalled(case: Path, target: str, trace: Path | None, signum: int, moment: float):
    """Run `target`, send `signum` `moment` s after start (if still running): the outcome
    (tests/fuzz_log.py) and the run's stderr."""
    case.mkdir(parents=True)
    torch = target == "profile"
    started = time.monotonic()
    proc = start(target_args(target, trace), case, address_space=TORCH_AS if torch else 3 << 29)
    while time.monotonic() - started < moment and _running(proc):
        time.sleep(0.005)
    if _running(proc):
        os.kill(proc.pid, signum)  # the child alone: as a terminal's Ctrl-C reaches python
    ended = wait(proc, case, started, TIMEOUT)
    expected = 130 if signum == signal.SIGINT else 143
    cap = TORCH_RSS if torch else 1 << 30
    if ended.code == 0:
        outcome = judge(ended, (0,), cap=cap)
    elif ended.code == -signum and not ended.stderr.strip():
        # the default action, silent: before the entry's SIGTERM handler, or a Ctrl-C
        # before the interpreter's own (a few ms in): nothing can have been written (a
        # progress line would say the command ran: then it is a finding)
        outcome = "ok"
    elif (
        signum == signal.SIGINT
        and ended.code in (-signum, 1)
        and before_the_package(ended.stderr.decode())
    ):
        outcome = "ok"  # in the interpreter's own start-up: nothing can have been written
    else:
        line = "kinetoscope: interrupted;" if expected == 130 else "kinetoscope: terminated;"
        outcome = judge(ended, (expected,), expect_signal_line=line, cap=cap)
    if outcome == "ok":
        outcome = _left(case, target, ended.stderr.decode("utf-8", "replace"))
    name = f"{target}-{signal.Signals(signum).name.lower() if signum else 'none'}"
    log_run("signals", name, outcome)
    return outcome, ended.stderr.decode("utf-8", "replace")


#: the interpreter's first line when a Ctrl-C lands while it imports `site`
SITE_FAILED = "Fatal Python error: init_import_site: Failed to import the site module"


def before_the_package(stderr: str) -> bool:
    """Whether `stderr` is the interpreter's own report of a KeyboardInterrupt raised
    before any of kinetoscope's code ran: a Ctrl-C in the first few tens of milliseconds
    lands in `python -m`'s start-up (runpy importing importlib.util, contextlib), where no
    program's handler can be yet, and Python prints its traceback and dies by SIGINT
    (seen 36 ms in), or, landed in `site`, says "Fatal Python error: init_import_site"
    over the traceback and exits 1 (6-27 ms in: 60 Ctrl-Cs sent 3-36 ms into
    `explain`). A traceback through a file of the package is a finding."""
    lines = stderr.strip().splitlines()
    if lines[:2] and lines[0].startswith(SITE_FAILED) and lines[1].startswith("Python runtime"):
        lines = lines[2:]
    frames = [line for line in lines if line.lstrip().startswith("File ")]
    return (
        bool(lines) and lines[0].startswith("Traceback") and lines[-1] == "KeyboardInterrupt"
        and not any(f"{os.sep}kinetoscope{os.sep}" in frame for frame in frames)
    )  # fmt: skip


def _running(proc) -> bool:
    """Whether the child still runs, without reaping it (`wait` reaps it for its rusage;
    `Popen.poll` would reap it first, a harness error when a run ends before its signal)."""
    return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None


def _left(case: Path, target: str, stderr: str) -> str:
    """What the run left: whole files only, and only those it says it kept (or wrote)."""
    if left_in_tmp(case):
        return "over-disk"
    lines = error_lines(stderr)
    nothing = bool(lines) and lines[0].endswith("nothing written")
    extra = {p.name for p in case.iterdir()} - {"stdout", "stderr", "tmp", "cache"}
    if target == "explain":
        if nothing:
            return "bad-output" if extra else "ok"
        if extra - {"out.json"}:
            return "bad-output"
        if extra:
            try:
                json.loads((case / "out.json").read_text())
            except ValueError:
                return "bad-output"
        return "ok"
    if nothing:
        return "bad-output" if extra else "ok"
    if extra - {"traces"}:
        return "bad-output"
    for path in (case / "traces").rglob("*") if extra else ():
        if path.is_file() and (path.name.startswith(".") or "tmp" in path.name):
            return "bad-output"
        if path.is_file() and path.name.endswith((".json", ".json.gz")):
            try:
                kinetoscope.load(path)
            except TraceError:
                return "bad-output"
    return "ok"


@pytest.fixture(scope="module")
def trace(tmp_path_factory) -> Path:
    return big_trace(tmp_path_factory.mktemp("signals"), 200_000)


def test_sigint_during_explain_leaves_no_partial_report(tmp_path, trace):
    """One fixed moment (1.5 s: the imports are done, the trace is being read or analysed):
    exit 130 with one line and no out.json, or (on a fast machine) a whole report."""
    outcome, stderr = signalled(tmp_path / "c", "explain", trace, signal.SIGINT, 1.5)
    assert outcome == "ok", (outcome, stderr)


#: what a Ctrl-C 36 ms into `python -m kinetoscope explain` printed (a fuzz run's finding)
IN_START_UP = """Traceback (most recent call last):
  File "<frozen runpy>", line 14, in <module>
  File "<frozen importlib.util>", line 14, in <module>
  File "/usr/lib/python3.11/contextlib.py", line 39, in <module>
    class AbstractAsyncContextManager(abc.ABC):
  File "/usr/lib/python3.11/contextlib.py", line 43, in AbstractAsyncContextManager
    __class_getitem__ = classmethod(GenericAlias)
                        ^^^^^^^^^^^^^^^^^^^^^^^^^
KeyboardInterrupt
"""


def test_an_interrupt_in_the_interpreters_start_up_is_not_ours_but_one_in_ours_is():
    """The harness excuses only a traceback with no frame of the package."""
    assert before_the_package(IN_START_UP)
    ours = IN_START_UP.replace(
        '  File "<frozen importlib.util>"', f'  File "{SRC_FILE}", line 30, in main\n  File "x"'
    )
    assert not before_the_package(ours)
    assert not before_the_package("kinetoscope: interrupted; nothing written\n")
    in_site = f"{SITE_FAILED}\nPython runtime state: initialized\n{IN_START_UP}"
    assert before_the_package(in_site)
    assert not before_the_package(in_site.replace(IN_START_UP, ours))
    assert not before_the_package(f"{SITE_FAILED}\n{IN_START_UP}")  # not the interpreter's
    assert not before_the_package(IN_START_UP.replace("KeyboardInterrupt", "ValueError"))


@pytest.mark.fuzz
def test_fuzz_signals_at_random_moments(tmp_path, trace):
    """The long run: profile and explain, SIGINT or SIGTERM at a moment drawn from 0 to 1.1x
    the run's measured length; every finding listed at the end."""
    seed = int(os.environ.get("KINETOSCOPE_FUZZ_SEED", time.time_ns() % 10**6))
    count = int(os.environ.get("KINETOSCOPE_FUZZ_SIGNAL_CASES", 60))
    rng, findings, length = random.Random(seed), [], {}
    for target in ("profile", "explain"):  # each target's length, unsignalled
        started = time.monotonic()
        outcome, stderr = signalled(tmp_path / f"len-{target}", target, trace, 0, 0)
        assert outcome == "ok", (target, outcome, stderr)
        length[target] = time.monotonic() - started
    for i in range(count):
        target = "profile" if rng.random() < 0.6 else "explain"
        signum = signal.SIGINT if rng.random() < 0.7 else signal.SIGTERM
        moment = rng.uniform(0, 1.1 * length[target])
        outcome, stderr = signalled(tmp_path / f"c{i}", target, trace, signum, moment)
        if outcome != "ok":
            findings.append((i, target, signum, round(moment, 3), outcome, stderr[-400:]))
    assert not findings, f"seed {seed}, lengths {length}: " + "\n".join(map(repr, findings))


#: `python -m kinetoscope ARGV...` with a Ctrl-C that lands in the exit, after the command
#: has written its output: an atexit callback (the first registered runs last) sends it
AT_EXIT_CTRL_C = """
import atexit, os, runpy, signal, sys, time
atexit.register(lambda: (os.kill(os.getpid(), signal.SIGINT), time.sleep(2)))
sys.argv = ["kinetoscope", *sys.argv[1:]]
runpy.run_module("kinetoscope", run_name="__main__", alter_sys=True)
"""


def test_sigint_in_the_exit_after_the_report_says_what_was_kept(tmp_path):
    """A Ctrl-C as `explain -o` exits (its report written) ends it 130 with the one line
    naming the report, which is whole. It went to the interpreter's teardown: "Exception
    ignored in atexit callback" and a traceback, or, once Python had put SIGINT back to
    its default action, death by SIGINT after "wrote out.json" (run 103, at 82947eb)."""
    trace = Path(__file__).parent / "data" / "traces" / "cpu" / "cpu_only_rank34.pt.trace.json.gz"
    args = ["explain", str(trace), "--format", "json", "-o", "out.json"]
    run = subprocess.run(
        [sys.executable, "-c", AT_EXIT_CTRL_C, *args],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    lines = run.stderr.splitlines()
    assert run.returncode == 130, run.stderr
    assert lines == ["wrote out.json", "kinetoscope: interrupted; kept out.json"], lines
    assert json.loads((tmp_path / "out.json").read_text())["verdict"]
