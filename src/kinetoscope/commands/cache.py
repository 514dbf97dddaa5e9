"""`kinetoscope cache`: what the trace cache holds (`trace/cache.py`), and clearing it."""

from __future__ import annotations

import time

import typer

from ..errors import UsageError
from ..formatting.escaping import inert
from ..trace import cache
from ..trace.budget import parse_size


def register(app: typer.Typer) -> None:
    app.command("cache")(cache_command)


def cache_command(
    clear: bool = typer.Option(False, "--clear", help="Remove every entry."),
    max_size: str | None = typer.Option(
        None,
        "--max-size",
        help="Keep the cache under SIZE (e.g. 8GB; saved for later runs, "
        f"${cache.SIZE_ENV} wins over it); least recently used entries go first.",
    ),
) -> None:
    """The parsed traces kept for the next command: each entry's size, last use and trace."""
    root = cache.folder()
    if max_size is not None:
        try:
            size = parse_size(max_size)
        except UsageError:
            raise UsageError(f"--max-size {max_size!r}: give a size such as 8GB or 500MB") from None
        if size is None:
            raise UsageError("--max-size auto: give a size such as 8GB or 500MB")
        try:
            cache.save_max_bytes(size, root)
        except OSError as exc:
            raise UsageError(f"--max-size: cannot write to {root} ({exc.strerror})") from None
        for entry in cache.evict(root, size):
            typer.echo(inert(f"evicted {_mb(entry.bytes)}  {entry.trace}"))
    if clear:
        gone = cache.clear(root)
        typer.echo(
            inert(f"removed {len(gone)} entries, {_mb(sum(e.bytes for e in gone))} from {root}")
        )
        return
    listed = cache.entries(root)
    state = "" if cache.enabled() else f" (off: {cache.NO_CACHE_ENV} is set)"
    typer.echo(inert(f"cache {root}{state}"))
    for entry in reversed(listed):  # most recently used first
        used = time.strftime("%Y-%m-%d %H:%M", time.localtime(entry.used)) if entry.used else "?"
        typer.echo(inert(f"  {_mb(entry.bytes):>10}  {used}  {entry.trace}"))
    total = sum(e.bytes for e in listed)
    typer.echo(
        f"{len(listed)} entries, {_mb(total)} of {_mb(cache.max_bytes(root))} "
        f"(traces under {_mb(cache.MIN_BYTES)} of text are not cached)"
    )


def _mb(size: int) -> str:
    return f"{size / (1 << 20):,.1f} MB"
