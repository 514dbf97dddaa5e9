"""The `kinetoscope` command: thin on purpose.

Each verb lives in `kinetoscope.commands.<verb>` and registers itself on `app`;
this module only wires them up and maps errors to exit codes (2 for bad input,
1 for our bugs), printing one line instead of a traceback unless `--debug`.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import sys

import typer
from typer.core import TyperCommand, TyperGroup

from ._version import __version__
from .errors import (
    KinetoscopeError,
    Terminated,
    hold_interrupts,
    interrupt_seen,
    raise_interrupts,
    raised_by_interrupt,
    raised_by_termination,
)
from .formatting.escaping import inert
from .trace.budget import arm_backstop, backstop_line


def _flags_unlabelled(params: list) -> list:
    """A flag takes no value, so its help row shows no type: typer labels every
    option with its Python type, `<bool>` on each flag and on --help itself."""
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
    return params


class _Command(TyperCommand):
    """Every command: flags shown without a type label."""

    def get_params(self, ctx):
        return _flags_unlabelled(super().get_params(ctx))


class _Group(TyperGroup):
    """The `kinetoscope` group: flags shown without a type label."""

    def get_params(self, ctx):
        return _flags_unlabelled(super().get_params(ctx))


app = typer.Typer(
    name="kinetoscope",
    help="Profile PyTorch programs and read their Kineto traces the way an expert would.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=_Group,
    # inherited by every command's context: -h is --help everywhere
    context_settings={"help_option_names": ["-h", "--help"]},
)

#: Command modules, each defines `register(app)`.
COMMANDS: list[str] = [
    "summary",
    "table",
    "profile",
    "explain",
    "lines",
    "chain",
    "memory",
    "diff",
    "check",
    "sweep",
    "slice",
    "export",
    "view",
    "plot",
    "tune",
    "mcp",
    "cache",
]

_DEBUG = {"on": False}

#: whether `_terminated` has printed its line in this command
_SAID = {"terminated": False}

#: Options of `kinetoscope` itself, accepted after the subcommand too: `kinetoscope explain
#: t.json --debug` is what a user retyping a failed command writes.
GLOBAL_OPTIONS = ("--debug", "--no-cache")


def _show_version(wanted: bool) -> None:
    if wanted:
        print(f"kinetoscope {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    debug: bool = typer.Option(False, "--debug", help="Show Python tracebacks on errors."),
    no_cache: bool = typer.Option(
        False,
        "--no-cache",
        help="Parse the trace again, neither reading nor writing the trace cache "
        "(as KINETOSCOPE_NO_CACHE=1; `kinetoscope cache` lists it).",
    ),
    version: bool = typer.Option(
        False,
        "--version",
        callback=_show_version,
        is_eager=True,
        help="Print the version and exit.",
    ),
) -> None:
    _DEBUG["on"] = debug
    if no_cache:  # the environment, so the MCP server's and multi-rank workers see it too
        os.environ["KINETOSCOPE_NO_CACHE"] = "1"


for _name in COMMANDS:
    importlib.import_module(f"kinetoscope.commands.{_name}").register(app)
for _info in app.registered_commands:
    if _info.cls in (None, TyperCommand):  # not a command that chose its own class
        _info.cls = _Command


def main(own_process: bool = False) -> None:
    """Console entry point: run the app, turning library errors into one line.

    `own_process` (the console entry, `entry.main`): an explicit `--max-memory`
    may limit this process (`trace.budget.arm_backstop`), and the process ends here
    (`_leave`), not in the interpreter's teardown."""
    if own_process:
        arm_backstop()
    torch_before = "torch" in sys.modules  # a caller's own torch is its to tear down
    hold_interrupts(fresh=not own_process)  # the entry holds since its import
    try:
        _main()
    except SystemExit as done:
        imported_torch = not torch_before and "torch" in sys.modules
        if not (own_process or imported_torch) or not isinstance(done.code, int | None):
            raise
        _leave(done.code or 0)


def _leave(code: int) -> None:
    """Exit without the interpreter's teardown: every run of the console entry, and a
    command that imported torch (`profile`, `tune`) in a caller's process.

    The teardown runs after Python has put SIGINT back to the default action: a
    Ctrl-C then killed the process with no message, after the command had printed
    "wrote out.json" (`explain -o`, exit -2 instead of 130: run 103, at 82947eb).
    Tearing torch down (module finalisation, its C++ static destructors) takes about
    a second after the artifacts are complete. Here what the interpreter would do
    first still runs, with a handler that says what was kept and exits 130: the
    threads that must end are joined (`threading._shutdown`, as `Py_FinalizeEx` does:
    an executor's workers, any non-daemon thread), then the atexit callbacks; then
    the process ends at once with its own code (120 where standard output cannot be
    flushed, as Python's own exit says)."""
    import atexit
    import threading

    signal.signal(signal.SIGINT, lambda _signum, _frame: _interrupted(now=True))
    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is not None:
        shutdown()
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
    except (OSError, ValueError):  # a reader gone (`| head`), or stdout closed
        code = code or 120
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.flush()
    os._exit(code)


def hoisted(args: list[str]) -> list[str]:
    """`args` with the global options moved in front of the subcommand, where the
    parser reads them; what follows `--` is a script's own and stays."""
    cut = args.index("--") if "--" in args else len(args)
    found = [a for a in args[:cut] if a in GLOBAL_OPTIONS]
    return found + [a for a in args[:cut] if a not in GLOBAL_OPTIONS] + args[cut:]


def _main() -> None:
    args = hoisted(sys.argv[1:])
    _DEBUG["on"] = args[:1] == ["--debug"]  # before the callback runs: a usage error too
    _SAID["terminated"] = False
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:  # never replace a caller's handler
        signal.signal(signal.SIGTERM, _terminated)
    try:
        raise_interrupts()  # one held until this guard ends the run here
        code = app(args=args, standalone_mode=False)
    except KinetoscopeError as exc:
        _unwound(exc)
        if _DEBUG["on"]:
            raise
        print(f"kinetoscope: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except SystemExit:
        raise
    except KeyboardInterrupt:
        _interrupted()
    except Exception as exc:  # noqa: BLE001 - the one place where any bug becomes one line
        if isinstance(exc, MemoryError) and (line := backstop_line()) is not None:
            print(f"kinetoscope: error: {line}", file=sys.stderr)  # our limit, not a bug
            sys.exit(2)
        _unwound(exc)
        # typer (>= 0.26) vendors click: its usage errors are typer exceptions, and a
        # Ctrl-C inside a command reaches us as typer.Abort caused by KeyboardInterrupt
        if isinstance(exc, typer.Abort):
            if isinstance(exc.__context__, KeyboardInterrupt):
                _interrupted()
            sys.exit(1)
        if isinstance(exc, typer.TyperException):
            show = getattr(exc, "show", None)
            if show is not None:
                show()
            else:
                print(f"kinetoscope: error: {exc.format_message()}", file=sys.stderr)
            sys.exit(exc.exit_code)
        if _DEBUG["on"]:
            raise
        print(
            inert(f"kinetoscope: internal error: {type(exc).__name__}: {exc} (rerun with --debug)"),
            file=sys.stderr,
        )
        sys.exit(1)
    # typer turns a Ctrl-C inside a command into exit code 130; a library may have
    # swallowed or lost one (errors.raise_interrupts)
    if code == 130 or interrupt_seen():
        _interrupted()
    sys.exit(code if isinstance(code, int) else 0)


def _unwound(exc: Exception) -> None:
    """An error raised while a Ctrl-C or a SIGTERM unwound (torch's profiler exit raises
    AssertionError then) is the signal's doing: its exit, not an error of its own."""
    if raised_by_interrupt(exc):
        _interrupted()
    terminated = raised_by_termination(exc)
    if terminated is not None:
        raise Terminated(terminated.code) from None  # its one line is already out


def _interrupted(now: bool = False) -> None:
    """Ctrl-C: one line saying what this run kept (outputs are published whole or not at
    all, so nothing partial is left), exit 130 as shells expect after SIGINT (`now`:
    at once, from `_leave`, with no further teardown)."""
    from .files.outputs import published

    kept = published()
    what = "kept " + ", ".join(map(str, kept)) if kept else "nothing written"
    print(inert(f"kinetoscope: interrupted; {what}"), file=sys.stderr, flush=True)
    if now:
        sys.stdout.flush()
        os._exit(130)
    sys.exit(130)


def _terminated(signum: int, _frame) -> None:
    """SIGTERM (`kill`, a scheduler's time limit) ends the command as an error would, so
    `finally` blocks run: an unpublished output's temporary file and an out-of-core load's
    spill directory are removed. The default action stops the process where it stands
    and leaves them behind. Exit 143 (128 + SIGTERM), as shells expect."""
    from .files.outputs import published

    if not _SAID["terminated"]:  # said once: a dropped SIGTERM comes again
        _SAID["terminated"] = True
        kept = published()
        what = "kept " + ", ".join(map(str, kept)) if kept else "nothing written"
        print(inert(f"kinetoscope: terminated; {what}"), file=sys.stderr)
    raise Terminated(128 + signum)
