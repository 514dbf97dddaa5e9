"""What a long command is doing, told while it does it.

A command that can run for more than a couple of seconds (`profile`: importing
torch, warming up, the profiled steps, exporting, reading the trace; `sweep` and
`tune`: trial k of N; loading a large trace: bytes read) reports its stages here.
On a terminal they show as one rich progress line on stderr, replaced as work
moves on and cleared at the end (its spinner and clock keep moving); piped or
redirected, each stage is one plain line on stderr (`[kinetoscope] warming up: 3
iterations`), and one that runs on past 2 s without a new line gets `...: still
running, 2 s` (then at 4, 8, 16 s), so logs say where a slow run spent its time,
a long stage is never silent, and stdout stays the report alone.

Nothing is shown unless a command turned reporting on (`reporting()`): library
callers (`kinetoscope.load`, `kinetoscope.profile`) stay silent. The display
writes to its own duplicate of file descriptor 2, taken when reporting starts,
so it still reaches the terminal while capture filters the profiler's noise out
of fd 2 (`capture/quiet.py`).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from contextlib import contextmanager
from typing import IO

#: prefix of the plain (piped) lines, so scripts and tests can tell them from errors
PREFIX = "[kinetoscope] "


class _Silent:
    """The reporter when no command asked for one: every call does nothing."""

    def stage(self, text: str) -> None:
        pass

    def count(self, text: str, done: int, total: int, *, line: bool = False) -> None:
        pass

    def pause(self) -> None:
        pass


#: the clock of the "still running" lines (a test turns it by hand)
_now = time.monotonic

#: A stage silent this long gets a line saying it is still running (piped stderr)...
STILL_AFTER_S = 2.0
#: ...and the next one after this many times the silence so far (2, 4, 8, 16 s ...): a
#: log of a long stage stays short, and a stuck one still shows it is alive.
STILL_GROWTH = 2.0


class _Plain:
    """Piped stderr: one line per stage; counts only where each item is a stage. When
    the command has said nothing for 2 s, a watcher thread says what it is doing (the
    latest stage or count: a step, a trial), then again at 4, 8, 16 s ..., so every
    stage longer than 2 s says so within 2 s, whatever the command does meanwhile."""

    def __init__(self, out: IO[str]) -> None:
        self.out = out
        self.started = _now()
        self.lock = threading.Lock()
        self.latest = ""  # what the command is doing now ("" once it prints its result)
        self.since = self.spoke = self.started  # the stage's start, the command's last line
        self.beats = 0  # "still running" lines since the command last spoke
        self.done = threading.Event()
        self.watcher = threading.Thread(target=self._watch, name="kinetoscope-progress")
        self.watcher.daemon = True
        self.watcher.start()

    def _write(self, text: str) -> None:
        with self.lock:
            self.out.write(PREFIX + text + "\n")
            self.out.flush()

    def _line(self, text: str) -> None:
        self._write(text)
        with self.lock:
            self.spoke, self.beats = _now(), 0

    def stage(self, text: str) -> None:
        with self.lock:
            self.latest, self.since = text, _now()
        self._line(text)

    def count(self, text: str, done: int, total: int, *, line: bool = False) -> None:
        with self.lock:
            self.latest = text
        if line:
            self._line(f"{text} ({_timing(_now() - self.started, done, total)})")

    def _watch(self) -> None:
        while not self.done.wait(0.25):
            with self.lock:
                latest, since, spoke, beats = self.latest, self.since, self.spoke, self.beats
            now = _now()
            if latest and now - spoke >= STILL_AFTER_S * STILL_GROWTH**beats:
                self._write(f"{latest}: still running, {now - since:.0f} s")
                with self.lock:
                    if self.spoke == spoke:  # the command did not speak meanwhile
                        self.beats = beats + 1

    def pause(self) -> None:
        """The command prints its result: nothing is running until the next stage."""
        with self.lock:
            self.latest = ""

    def close(self) -> None:
        self.pause()
        self.done.set()
        self.watcher.join()


class _Live:
    """A terminal: one rich progress line (spinner, stage, bar for counts, elapsed and
    remaining time), cleared when the command prints its result."""

    def __init__(self, out: IO[str]) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            Progress,
            SpinnerColumn,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        console = Console(file=out, force_terminal=True, stderr=True)
        self.bar = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(bar_width=24),
            TaskProgressColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=True,
            # stdout is the report: never routed through the progress line's console
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self.task = None

    def _show(self) -> None:
        if self.task is None:
            self.bar.start()
            self.task = self.bar.add_task("", total=None)

    def stage(self, text: str) -> None:
        self._show()
        self.bar.reset(self.task, description=text, total=None)

    def count(self, text: str, done: int, total: int, *, line: bool = False) -> None:
        self._show()
        self.bar.update(self.task, description=text, completed=done, total=total)

    def pause(self) -> None:
        if self.task is not None:
            self.bar.stop()
            self.bar.remove_task(self.task)
            self.task = None


_current: _Silent | _Plain | _Live = _Silent()


def stage(text: str) -> None:
    """A new stage of the running command (`warming up: 3 iterations`)."""
    _current.stage(text)


def count(text: str, done: int, total: int, *, line: bool = False) -> None:
    """`done` of `total` items (steps, trials, bytes). `line`: each item is a stage, so
    piped output gets a line for it (trials do; steps and bytes do not)."""
    _current.count(text, done, total, line=line)


def pause() -> None:
    """Clear the terminal line before the command prints its result (the next
    `stage` shows it again)."""
    _current.pause()


@contextmanager
def reporting(enabled: bool = True):
    """Turn reporting on for a command's work (a CLI command wraps its body in this)."""
    global _current
    if not enabled or not isinstance(_current, _Silent):
        yield
        return
    out, owned = _stderr()
    _current = _Live(out) if out.isatty() else _Plain(out)
    try:
        yield
    finally:
        _current.pause()
        if isinstance(_current, _Plain):
            _current.close()
        _current = _Silent()
        if owned:
            out.close()


def _stderr() -> tuple[IO[str], bool]:
    """(where to report, whether it is ours to close): a duplicate of fd 2 where
    sys.stderr is the process's own, else sys.stderr itself (a test's capture)."""
    try:
        if sys.stderr is not None and sys.stderr.fileno() == 2:
            sys.stderr.flush()
            return os.fdopen(os.dup(2), "w", buffering=1, encoding="utf-8"), True
    except (AttributeError, OSError, ValueError):
        pass
    return sys.stderr, False


def _timing(elapsed: float, done: int, total: int) -> str:
    """`12 s elapsed, about 30 s left` (the rest at the mean pace so far)."""
    text = f"{elapsed:.0f} s elapsed"
    if 0 < done < total:
        text += f", about {elapsed / done * (total - done):.0f} s left"
    return text
