"""`summary`, `table` and `chain` print names from the trace as text: an ESC, BEL or CR
in a kernel or op name is shown as `\\xNN`, never sent to the terminal."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import corpus

NASTY = "\x1b[31m\x1b]0;owned\x07[bold]x\r"
ENTRY = "import sys; from kinetoscope.cli import main; sys.argv[0] = 'kinetoscope'; main()"


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


def _run(*args) -> subprocess.CompletedProcess:
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {"COLUMNS": "300", "PATH": "/usr/bin:/bin", "PYTHONPATH": src, "TERM": "dumb"}
    env.update({k: v for k, v in os.environ.items() if k.startswith("VIRTUAL_ENV")})
    return subprocess.run(
        [sys.executable, "-c", ENTRY, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


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
