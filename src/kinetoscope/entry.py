"""The console entry point: a Ctrl-C is honoured from the first instant.

`kinetoscope` and `python -m kinetoscope` start here, in a module that imports
nothing heavy (the package's `__init__` loads its reader lazily), so a Ctrl-C that
arrives while typer, numpy or rich load exits 130 with the CLI's one line; it was
a Python traceback. One raised where the import cannot unwind (importlib's
module-lock callback) is dropped by Python, with an "Exception ignored" traceback;
remembered from the first line (`errors.remember_interrupts`) and delivered again
(`errors.redeliver_dropped_signals`), it ends the run the same way. One that lands
after this module's import and before `main`'s guard is held (`errors.hold_interrupts`)
and honoured inside it. From then on `cli.main` handles interrupts.

Only here is the process known to be kinetoscope's own: `own_process=True` lets an
explicit `--max-memory` become a hard limit on it (`trace.budget.hold`), which a
test runner or a program calling `cli.main` in its own process must not get.
"""

from __future__ import annotations

import sys

from .errors import hold_interrupts, interrupt_seen

hold_interrupts()


def main() -> None:
    try:
        from .errors import redeliver_dropped_signals, remember_interrupts

        remember_interrupts(fresh=False)  # keep one held since the import
        redeliver_dropped_signals()
        from .cli import main as run

        if interrupt_seen():  # held before the guard, or dropped where it could not unwind
            raise KeyboardInterrupt
    except KeyboardInterrupt:
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
