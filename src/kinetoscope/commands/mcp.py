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
        serve(root)
