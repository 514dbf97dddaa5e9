"""The console entry point: a Ctrl-C is honoured from the first instant.

`kinetoscope` and `python -m kinetoscope` start here, in a module that imports
nothing heavy (the package's `__init__` loads its reader lazily). From this
module's import a Ctrl-C is held (`errors.hold_interrupts`) until the CLI's guard
around the command, which ends the run with exit 130 and its one line: it was a
Python traceback while typer, numpy or rich loaded, and one sent just after this
module imported landed on `main`'s first line, before any `try`. Once the command
runs, one whose exception Python dropped (importlib's module-lock callback, while
the command imports torch) is delivered again (`errors.redeliver_dropped_signals`).

Only here is the process known to be kinetoscope's own: `own_process=True` lets an
explicit `--max-memory` become a hard limit on it (`trace.budget.hold`), which a
test runner or a program calling `cli.main` in its own process must not get.
"""

from __future__ import annotations

import sys

from .errors import hold_interrupts, redeliver_dropped_signals

hold_interrupts()


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
