"""The `kinetoscope` command: thin on purpose.

Each verb lives in `kinetoscope.commands.<verb>` and registers itself on `app`;
this module only wires them up and maps errors to exit codes (2 for bad input,
1 for our bugs), printing one line instead of a traceback unless `--debug`.
"""

from __future__ import annotations

import importlib
import sys

import typer

from .errors import KinetoscopeError

app = typer.Typer(
    name="kinetoscope",
    help="Profile PyTorch programs and read their Kineto traces the way an expert would.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

#: Command modules, each defines `register(app)`.
COMMANDS: list[str] = [
    "summary",
    "table",
    "profile",
    "explain",
    "chain",
    "memory",
    "diff",
    "check",
    "sweep",
    "view",
    "plot",
]

_DEBUG = {"on": False}


@app.callback()
def _root(
    debug: bool = typer.Option(False, "--debug", help="Show Python tracebacks on errors."),
) -> None:
    _DEBUG["on"] = debug


for _name in COMMANDS:
    importlib.import_module(f"kinetoscope.commands.{_name}").register(app)


def main() -> None:
    """Console entry point: run the app, turning library errors into one line."""
    _DEBUG["on"] = "--debug" in sys.argv
    try:
        code = app(standalone_mode=False)
    except KinetoscopeError as exc:
        if _DEBUG["on"]:
            raise
        print(f"kinetoscope: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except SystemExit:
        raise
    except KeyboardInterrupt:
        print("kinetoscope: interrupted", file=sys.stderr)
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 - the one place where any bug becomes one line
        import click

        # typer >= 0.24 raises its own vendored click exceptions, not click's
        if isinstance(exc, (click.exceptions.Abort, typer.Abort)):
            sys.exit(1)
        if isinstance(exc, (click.exceptions.ClickException, typer.TyperException)):
            exc.show()
            sys.exit(exc.exit_code)
        if _DEBUG["on"]:
            raise
        print(
            f"kinetoscope: internal error: {type(exc).__name__}: {exc} (rerun with --debug)",
            file=sys.stderr,
        )
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)
