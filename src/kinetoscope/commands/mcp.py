"""`kinetoscope mcp [--root DIR]`: serve the reader to coding agents over MCP (stdio)."""

from __future__ import annotations

from pathlib import Path

import typer

from ..errors import UsageError


def register(app: typer.Typer) -> None:
    @app.command("mcp")
    def mcp(
        root: Path = typer.Option(
            Path("."), "--root", metavar="DIR", help="Serve only files under DIR (default: here)."
        ),
        call_timeout: float = typer.Option(
            300.0,
            "--call-timeout",
            metavar="SECONDS",
            help="Stop a tool call that runs longer (each runs in a process of its own).",
        ),
    ) -> None:
        """Model Context Protocol server on stdin/stdout: explain, summary, diff, chain, table,
        slice, check and memory as tools, reading only files under --root."""
        try:
            from ..agent.server import serve
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.split(".")[0] == "mcp":
                raise UsageError(
                    "the MCP server needs the mcp SDK: pip install 'kinetoscope[mcp]'"
                ) from None
            raise
        if not 0 < call_timeout < 86400:
            raise UsageError(f"--call-timeout {call_timeout:g}: give seconds between 0 and 86400")
        serve(root, call_timeout)
