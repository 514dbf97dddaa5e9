"""Errors the CLI maps to exit codes.

A `TraceError` is the user's input being unusable (exit 2, one line). Anything
else escaping the library is our bug (exit 1). Every message passes `inert`:
a path or name holding ESC, a newline or an RTL override prints as one inert
line.
"""

from __future__ import annotations

import _thread
import os
import signal
import sys
import time

from .formatting.escaping import inert

#: how standard input (`-` on the command line) is named in messages and reports
STDIN_NAME = "<stdin>"


def input_name(path: object) -> str:
    """How an input is named to the user: `-` is standard input."""
    text = str(path)
    return STDIN_NAME if text == "-" else text


class KinetoscopeError(Exception):
    """Base class for errors that carry a user-facing one-line message."""

    exit_code = 1

    def __init__(self, *args: object) -> None:
        super().__init__(*(inert(a) if isinstance(a, str) else a for a in args))


class TraceError(KinetoscopeError):
    """The input trace cannot be read: missing, corrupt, not a Kineto trace."""

    exit_code = 2

    def __init__(self, path: object, problem: str) -> None:
        self.path = input_name(path)
        self.problem = inert(problem)  # shown on its own too (a rank's row in `explain DIR`)
        super().__init__(f"{self.path}: {problem}")


class OverBudget(KinetoscopeError):
    """The analyses of a trace would need, or took, more memory than the budget
    (`--max-memory`, or the RAM available by default): one line that says what fits."""

    exit_code = 2


class UsageError(KinetoscopeError):
    """The user asked for something that cannot be done with these arguments."""

    exit_code = 2


class Terminated(SystemExit):
    """SIGTERM's exit (`cli._terminated`, code 143), a class of its own so that an error
    raised while it unwinds (torch's profiler exit) is known as its doing, and a script
    runner does not take it for the script's own `sys.exit`."""


def _in_chain(exc: BaseException | None, kind: type) -> BaseException | None:
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, kind):
            return exc
        seen.add(id(exc))
        exc = exc.__context__
    return None


def raised_by_interrupt(exc: BaseException | None) -> bool:
    """Whether `exc` is a KeyboardInterrupt or was raised while one was being handled
    (torch's profiler raises `AssertionError: Profiler must be initialized before
    starting trace` from its exit while a Ctrl-C unwinds): the interrupt's doing."""
    return _in_chain(exc, KeyboardInterrupt) is not None


def raised_by_termination(exc: BaseException | None) -> Terminated | None:
    """The SIGTERM exit that `exc` is, or was raised while handling (as for a Ctrl-C)."""
    return _in_chain(exc, Terminated)


#: whether a Ctrl-C reached this command (`_on_interrupt`)
_SEEN = {"interrupt": False}


def _on_interrupt(signum, frame) -> None:
    """Python's own SIGINT action (raise KeyboardInterrupt), remembered."""
    _SEEN["interrupt"] = True
    signal.default_int_handler(signum, frame)


def _on_held(signum, frame) -> None:
    """A Ctrl-C before the CLI's guard: remembered, not raised."""
    _SEEN["interrupt"] = True


def hold_interrupts(
    fresh: bool = True, *, early_holder: object = None, early_held: list[int] | None = None
) -> None:
    """Until `raise_interrupts`, a Ctrl-C is remembered and not raised, unless a caller
    set its own SIGINT handler (`fresh`: forget an earlier command's, in a process that
    runs several).

    From the console entry's import to the CLI's guard around the command, nothing
    could catch a raised KeyboardInterrupt: a function's first instruction takes a
    pending signal, so one sent just after `kinetoscope.entry` imported was raised on
    `main`'s first line, before its `try` (CI saw the interpreter's traceback and death
    by SIGINT). One raised while typer, rich and numpy import could land in importlib's
    module-lock callback, where Python drops it. Held, it waits for the guard: at most
    the CLI's import (a fraction of a second), and no command has started.
    `early_holder`, `early_held`: the console entry's own first holder and the Ctrl-Cs it
    held, taken over (it holds from the entry's first line, before this module imports)."""
    if fresh:
        _SEEN["interrupt"] = False
    ours = (signal.default_int_handler, early_holder or signal.default_int_handler)
    if signal.getsignal(signal.SIGINT) in ours:
        signal.signal(signal.SIGINT, _on_held)
    if early_held:  # read once this module's handler holds
        _SEEN["interrupt"] = True


def raise_interrupts() -> None:
    """Inside the CLI's guard: one held since `hold_interrupts` is raised now, and from
    now on a Ctrl-C is raised and remembered (`interrupt_seen`).

    A raised KeyboardInterrupt can be lost: a library may catch it and go on (torch's
    profiler turned one into `AssertionError: Profiler must be initialized before
    starting trace`; a run then ended 0), and one raised where Python cannot unwind
    (a weakref callback or `__del__`: importlib's module-lock callback while a module
    imports) is printed as "Exception ignored" and dropped: a Ctrl-C 1.5 s into
    `explain -o` on a loaded machine left a traceback and a whole report, exit 0.
    Remembered, the CLI ends the run as interrupted anyway."""
    if signal.getsignal(signal.SIGINT) is _on_held:
        signal.signal(signal.SIGINT, _on_interrupt)
    if _SEEN["interrupt"]:
        raise KeyboardInterrupt


def interrupt_seen() -> bool:
    """Whether a Ctrl-C reached this command: held, raised or lost (`raise_interrupts`)."""
    return _SEEN["interrupt"]


def redeliver_dropped_signals() -> None:
    """A Ctrl-C or SIGTERM whose exception Python dropped is delivered again, and its
    "Exception ignored" traceback is not printed. For the console entry only: a process
    that calls the CLI (a test runner) keeps its own hook.

    Raised where Python cannot unwind (a weakref callback or `__del__`: importlib's
    module-lock callback while a module imports), the exception is printed and dropped,
    and the run goes on: a SIGTERM 0.4 s into `profile` printed "terminated; nothing
    written", then profiled and wrote its trace. It cannot be raised again from this
    hook, which is as unraisable; a new thread sends the signal again, and the main thread
    takes it at its next line that can raise. Every other unraisable exception goes to
    the hook that was set."""
    previous = sys.unraisablehook

    def hook(unraisable) -> None:
        exc = unraisable.exc_value
        if isinstance(exc, Terminated):
            signum = signal.SIGTERM
        elif isinstance(exc, KeyboardInterrupt) and _SEEN["interrupt"]:
            signum = signal.SIGINT
        else:
            previous(unraisable)
            return
        _thread.start_new_thread(_send_again, (signum,))  # returns at once: no wait to raise in

    sys.unraisablehook = hook


def _send_again(signum: int) -> None:
    """Send `signum` to this process from its own thread, after the main thread has left
    the hook: this thread starts only once the main thread hands over the GIL (at its
    switch interval, 5 ms, the hook's few lines long done), then sleeps 1 ms more. Were
    it to land in another callback, it would be dropped and sent again the same way."""
    time.sleep(0.001)
    os.kill(os.getpid(), signum)
