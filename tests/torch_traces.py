"""Real CPU traces recorded with the installed torch, for the rule and explain tests.

`torch_traces` records in a fresh interpreter so the first profiled step really
is cold (no earlier test has warmed up the matmul libraries in this process);
`profile_steps` records a test's own workload in this process.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import recorded_once

SCRIPT = r"""
import sys
import torch
from torch.profiler import ProfilerActivity, profile, record_function, schedule

out = sys.argv[1]
a, b, bias = torch.randn(64, 64), torch.randn(64, 64), torch.randn(64)
lin = torch.nn.Linear(64, 64)

def loop(prof, steps):
    for _ in range(steps):
        with record_function("matmul_add"):
            c = torch.matmul(a, b) + bias
            lin(c)
        if prof is not None:
            prof.step()

def record(name, warmup):
    with profile(
        activities=[ProfilerActivity.CPU],
        schedule=schedule(wait=1, warmup=warmup, active=3),
        on_trace_ready=lambda p: p.export_chrome_trace(f"{out}/{name}.json"),
    ) as prof:
        loop(prof, 1 + warmup + 3)

record("cold", warmup=0)  # no warmup: step 1 pays the one-time costs (measured 7-100x here)
loop(None, 20)
record("warm", warmup=1)

# a Python loop of tiny ops: 150 aten::add calls per step against 1 of everything else
x, one = torch.zeros(8), torch.ones(8)
with profile(
    activities=[ProfilerActivity.CPU],
    schedule=schedule(wait=1, warmup=1, active=3),
    on_trace_ready=lambda p: p.export_chrome_trace(f"{out}/loop.json"),
) as prof:
    for _ in range(5):
        y = torch.matmul(a, b)
        for _ in range(150):
            x = x + one
        prof.step()
"""


def profile_steps(path: Path, fn, steps: int, warmup: int = 0):
    """Profile `fn(i)` on the CPU for `warmup + steps` iterations, one ProfilerStep each
    (schedule wait=0, warmup, active=steps), write the trace to `path` and load it."""
    from torch.profiler import ProfilerActivity, profile, schedule

    from kinetoscope.trace import load

    with profile(
        activities=[ProfilerActivity.CPU],
        schedule=schedule(wait=0, warmup=warmup, active=steps, repeat=1),
        on_trace_ready=lambda p: p.export_chrome_trace(str(path)),
    ) as prof:
        for i in range(warmup + steps):
            fn(i)
            prof.step()
    return load(path)


@pytest.fixture(scope="session")
def torch_traces(tmp_path_factory) -> dict[str, Path]:
    """ "cold": no warmup; "warm": after 20 iterations; "loop": 150 tiny adds per step."""
    pytest.importorskip("torch")

    def record(out: Path) -> None:
        subprocess.run(
            [sys.executable, "-c", SCRIPT, str(out)], check=True, capture_output=True, timeout=300
        )

    # each test module imports this fixture, which makes it one per module: share the files
    out = recorded_once(tmp_path_factory, "torch_traces", record)
    return {name: out / f"{name}.json" for name in ("cold", "warm", "loop")}
