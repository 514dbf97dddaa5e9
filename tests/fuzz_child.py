"""Run the real console entry in a child under limits, and judge how it ended.

Why a child: the resource and signal fuzzers feed inputs built to exhaust memory, disk
or time. In-process (`CliRunner`) a bomb would take the test runner with it, and the
peak RSS, a signal's effect or a file left in `$TMPDIR` could not be observed. Each
child gets an address-space limit (a bomb cannot hurt the machine), a file-size limit
(an unbounded write ends in SIGXFSZ, counted as `over-disk`), a fresh `TMPDIR` and
cache, and a wall-clock bound (past it: killed, `hang`). Its peak RSS comes from
`os.wait4`'s rusage, so it is the child's own, not the test runner's.
"""

from __future__ import annotations

import os
import re
import resource
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[1] / "src")
#: address space of a child: a bomb ends in MemoryError (an internal error) here
LIMIT_AS = 3 << 29  # 1.5 GiB
#: peak RSS a child may reach (the budget a run is judged against)
CAP_RSS = 1 << 30  # 1 GiB
#: largest file a child may write (its outputs, temporary and spill files)
CAP_FILE = 256 << 20
#: characters that must never reach a terminal or a report raw (as tests/test_fuzz.py)
ACTIVE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]"
)
#: the bytes of an ESC, CSI or other C0/C1 control in UTF-8 output (tab, LF, CR allowed)
ACTIVE_BYTES = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]")


def _limits(address_space: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
        resource.setrlimit(resource.RLIMIT_FSIZE, (CAP_FILE, CAP_FILE))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


@dataclass
class Ended:
    """How one child ended."""

    code: int  # exit code, or -N when signal N ended it
    stdout: bytes
    stderr: bytes
    max_rss: int  # bytes
    timed_out: bool


def child_env(case: Path) -> dict[str, str]:
    """The environment of a child: this checkout's source, a fresh TMPDIR and cache under
    `case` (so what a run leaves behind is seen), no colour."""
    tmp, cache = case / "tmp", case / "cache"
    tmp.mkdir(parents=True, exist_ok=True)
    cache.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KINETOSCOPE_")}
    env.update(
        PYTHONPATH=SRC,
        TMPDIR=str(tmp),
        KINETOSCOPE_CACHE_DIR=str(cache),
        NO_COLOR="1",
        COLUMNS="100",
    )
    return env


def start(
    args: list[str], case: Path, stdin=None, address_space: int = LIMIT_AS
) -> subprocess.Popen:
    """`python -m kinetoscope ARGS` in `case`, under the limits, stdout and stderr to files
    (`address_space`: more for a command that imports torch, which maps GBs it never uses)."""
    out = open(case / "stdout", "wb")  # noqa: SIM115 - handed to the child, closed below
    err = open(case / "stderr", "wb")  # noqa: SIM115
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "kinetoscope", *args],
            cwd=case,
            env=child_env(case),
            stdin=stdin if stdin is not None else subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            preexec_fn=_limits(address_space),
            start_new_session=True,  # a hang is killed with its own children
        )
    finally:
        out.close()
        err.close()


def wait(proc: subprocess.Popen, case: Path, started: float, timeout: float) -> Ended:
    """Reap `proc` with its rusage; past `timeout` s kill its process group (a hang)."""
    deadline, timed_out, peak = started + timeout, False, 0
    while True:
        peak = max(peak, _high_water(proc.pid))
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline and not timed_out:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
        time.sleep(0.01)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Ended(
        code=proc.returncode,
        stdout=_head(case / "stdout"),
        stderr=_head(case / "stderr"),
        max_rss=peak,
        timed_out=timed_out,
    )


def _high_water(pid: int) -> int:
    """The child's own peak RSS so far (`VmHWM`, bytes; 0 once it has exited). Not
    `ru_maxrss`: Linux carries the forking parent's peak across `exec`, so a child of a
    large test worker reads as large as the worker. Sampled while the child runs, it
    misses at most the growth of its last poll interval."""
    try:
        with open(f"/proc/{pid}/status", "rb") as status:
            for line in status:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def run(args: list[str], case: Path, stdin_path=None, timeout: float = 60.0) -> Ended:
    """Run one command to its end (or its bound)."""
    stdin = open(stdin_path, "rb") if stdin_path is not None else None  # noqa: SIM115
    try:
        started = time.monotonic()
        proc = start(args, case, stdin=stdin)
    finally:
        if stdin is not None:
            stdin.close()
    return wait(proc, case, started, timeout)


def _head(path: Path, limit: int = 1 << 20) -> bytes:
    with open(path, "rb") as f:
        return f.read(limit)


def left_in_tmp(case: Path) -> list[Path]:
    """Files a run left in its TMPDIR: a temporary or spill file not removed. torch's
    compile cache (`torchinductor_USER`, made on import, kept between runs by design)
    is not the run's own."""
    return [
        p
        for p in (case / "tmp").rglob("*")
        if p.is_file() and not p.relative_to(case / "tmp").parts[0].startswith("torchinductor_")
    ]


def disk_used(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def error_lines(stderr: str) -> list[str]:
    """stderr lines the CLI speaks as itself (`kinetoscope: error: ...`, `kinetoscope:
    interrupted; ...`); progress (`[kinetoscope] `) and `warning: ` lines may stand beside."""
    return [line for line in stderr.splitlines() if line.startswith("kinetoscope:")]


def judge(
    ended: Ended, allowed: tuple[int, ...], *, expect_signal_line: str = "", cap: int = CAP_RSS
) -> str:
    """The outcome (tests/fuzz_log.py) of a run that should exit with a code in `allowed`
    or 2 with one error line (`expect_signal_line`: the prefix of the one line a signal
    exit must print, e.g. `kinetoscope: interrupted;`)."""
    if ended.timed_out:
        return "hang"
    if ended.code == -signal.SIGXFSZ:
        return "over-disk"
    stderr = ended.stderr.decode("utf-8", "replace")
    if "Traceback" in stderr or "Traceback" in ended.stdout.decode("utf-8", "replace"):
        return "traceback"
    if ended.max_rss > cap:
        return "over-budget"
    if ACTIVE_BYTES.search(ended.stderr) or ACTIVE_BYTES.search(ended.stdout):
        return "control-char"
    if ended.code in allowed:
        if expect_signal_line:
            lines = error_lines(stderr)
            if len(lines) != 1 or not lines[0].startswith(expect_signal_line):
                return "bad-output"
        return "ok"
    if ended.code == 2:
        lines = error_lines(stderr)
        if (
            len(lines) == 1
            and lines[0].startswith("kinetoscope: error: ")
            and "internal error" not in stderr
        ):
            return "clean-error"
    return "internal-error"
