"""Helpers for the capture and command tests: run the real CLI in a subprocess or in this
process, read what it wrote."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import kinetoscope

SRC = Path(__file__).resolve().parents[1] / "src"


def run_cli(*args: str, cwd: Path | None = None, code: str | None = None):
    """`python -m kinetoscope ARGS` (or `python -c code`) with this worktree's sources first."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
    }
    command = [sys.executable, "-c", code] if code else [sys.executable, "-m", "kinetoscope"]
    return subprocess.run(
        [*command, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300
    )


def error_lines(stderr: str) -> list[str]:
    """stderr without the progress lines (`[kinetoscope] importing torch`, ...)."""
    return [
        line
        for line in stderr.splitlines()
        if line.strip() and not line.startswith("[kinetoscope] ")
    ]


def step_numbers(trace: kinetoscope.Trace) -> list[int]:
    return [step.number for step in trace.steps]


def cli(*args, capsys) -> tuple[int, str, str]:
    """Run the CLI in-process: (exit code, stdout, stderr)."""
    from kinetoscope.cli import main

    argv = sys.argv
    sys.argv = ["kinetoscope", *map(str, args)]
    try:
        with pytest.raises(SystemExit) as done:
            main()
    finally:
        sys.argv = argv
    captured = capsys.readouterr()
    return done.value.code, captured.out, captured.err
