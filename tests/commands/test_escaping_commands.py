"""`summary`, `table` and `chain` print names from the trace as text: an ESC, BEL or CR
in a kernel or op name is shown as `\\xNN`, never sent to the terminal."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tests.capture_helpers import run_here
from tests.conftest import corpus

NASTY = "\x1b[31m\x1b]0;owned\x07[bold]x\r"


@pytest.fixture(scope="module")
def nasty_trace(tmp_path_factory) -> Path:
    """A real GPU trace whose kernel, runtime and op names end in NASTY."""
    data = json.loads(gzip.decompress(corpus("gpu/triton_example.json.gz").read_bytes()))
    for event in data["traceEvents"]:
        if event.get("cat") in ("kernel", "cpu_op", "cuda_runtime"):
            event["name"] += NASTY
    path = tmp_path_factory.mktemp("nasty") / "trace.json"
    path.write_text(json.dumps(data))
    return path


@pytest.fixture(autouse=True)
def _dumb_terminal(monkeypatch):
    """A wide dumb terminal's environment (rich reads it), with nothing that makes rich
    colour a pipe: any ESC in the output is one the trace sent."""
    monkeypatch.setenv("COLUMNS", "300")
    monkeypatch.setenv("TERM", "dumb")
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)


def _run(*args):
    """`kinetoscope ARGS` in this process: what reaches stdout and stderr."""
    return run_here(*args)


@pytest.mark.parametrize(
    "command",
    [
        ["summary"],
        ["table"],
        ["chain", "--full-names", "--limit", "3"],
        ["chain", "--op", "NOTHING_MATCHES"],
    ],
)
def test_control_characters_from_the_trace_are_escaped(nasty_trace, command):
    done = _run(command[0], nasty_trace, *command[1:])
    out = done.stdout + done.stderr
    assert "Traceback" not in out
    assert "\x1b" not in out and "\x07" not in out and "\r" not in out
    if done.returncode == 0:
        assert "\\x1b[31m" in out  # the name is shown, inert
    else:
        assert done.returncode == 2 and out.count("\n") == 1
