"""A CPU recording with Python stacks (`with_stack=True`) whose lines the tests know.

The script is written to a file and run in a fresh interpreter, so the profiler names
its frames `train_lines.py(N): function` (it strips the script's folder, which is on
`sys.path`). For a call made while the profiler records, N is the function's first
line (its `def`): `LINES` finds each function's line in the script text, so a test
knows the line without reading the trace.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import recorded_once

SCRIPT = r"""import sys

import torch
from torch.profiler import ProfilerActivity, profile, schedule


def read_loss(loss):
    return loss.item()  # a scalar read: aten::item -> aten::_local_scalar_dense


def tiny_ops(x, one):
    for _ in range(200):  # a Python loop of small ops: 200 aten::add per call
        x = x + one
    return x


def forward(a, b):
    return torch.matmul(a, b).sum()


def main(out):
    a, b = torch.randn(128, 128), torch.randn(128, 128)
    x, one = torch.zeros(8), torch.ones(8)
    with profile(
        activities=[ProfilerActivity.CPU],
        schedule=schedule(wait=1, warmup=1, active=3),
        with_stack=True,
        on_trace_ready=lambda p: p.export_chrome_trace(out),
    ) as prof:
        for _ in range(5):
            loss = forward(a, b)
            read_loss(loss)
            x = tiny_ops(x, one)
            prof.step()


main(sys.argv[1])
"""

FILE = "train_lines.py"


def _def_line(function: str) -> int:
    lines = SCRIPT.splitlines()
    return next(k for k, text in enumerate(lines, 1) if text.startswith(f"def {function}("))


#: each function's `def` line: the line the profiler records for its calls
LINES = {name: _def_line(name) for name in ("read_loss", "tiny_ops", "forward")}


def label(function: str) -> str:
    """How the lines view and evidence name the function's line."""
    return f"{FILE}:{LINES[function]} ({function})"


@pytest.fixture(scope="session")
def stack_trace(tmp_path_factory) -> Path:
    """The trace of `SCRIPT`: 3 active steps, each calling forward, read_loss, tiny_ops."""
    pytest.importorskip("torch")

    def record(out: Path) -> None:
        script = out / FILE
        script.write_text(SCRIPT)
        subprocess.run(
            [sys.executable, str(script), str(out / "stack.json")],
            check=True,
            capture_output=True,
            timeout=300,
            cwd=out,
        )

    return recorded_once(tmp_path_factory, "stack_traces", record) / "stack.json"
