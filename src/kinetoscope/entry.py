"""The console entry point: a Ctrl-C is honoured from the first instant.

`kinetoscope` and `python -m kinetoscope` start here, in a module that imports
nothing heavy (the package's `__init__` loads its reader lazily). From this
module's first line a Ctrl-C is held (`errors.hold_interrupts`) until the CLI's guard
around the command, which ends the run with exit 130 and its one line: it was a
Python traceback while typer, numpy or rich loaded, and one sent just after this
module imported landed on `main`'s first line, before any `try`. Once the command
runs, one whose exception Python dropped (importlib's module-lock callback, while
the command imports torch) is delivered again (`errors.redeliver_dropped_signals`).

Only here is the process known to be kinetoscope's own: `own_process=True` lets an
explicit `--max-memory` become a hard limit on it (`trace.budget.hold`), which a
test runner or a program calling `cli.main` in its own process must not get.
"""

import _signal  # built in and loaded: nothing runs before the hold below

#: Ctrl-Cs that arrived while this module's own imports ran (`_held_early`)
_EARLY: list[int] = []


def _held_early(signum, frame) -> None:
    """A Ctrl-C before `errors` is in: held for `errors.hold_interrupts` to take over."""
    _EARLY.append(signum)


if _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:
    _signal.signal(_signal.SIGINT, _held_early)

import sys  # noqa: E402 - after the hold: a statement before it is a place to be interrupted

from .errors import hold_interrupts, redeliver_dropped_signals  # noqa: E402

hold_interrupts(early_holder=_held_early, early_held=_EARLY)


def main() -> None:
    redeliver_dropped_signals()
    try:
        from .cli import main as run
    except KeyboardInterrupt:  # raised by code while the CLI imports (a Ctrl-C is held)
        print("kinetoscope: interrupted; nothing written", file=sys.stderr, flush=True)
        sys.exit(130)
    run(own_process=True)


def quit_now(code: int) -> None:
    """End the process with `code` after the exit functions, without the interpreter's
    own exit path (which can turn a handled Ctrl-C into death by SIGINT: `__main__`)."""
    import atexit
    import os

    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
