"""A CPU recording with module ranges, for the modules view's tests.

An nn.Sequential holding a custom module (`Head`) whose Linear does 64 times the
multiply-adds of every other layer (1024x1024 weights against 16x1024 and 1024x8, on
the same 512 rows): on a CPU the host time of a layer is its arithmetic, so that
Linear and the modules around it are the heaviest path, forward and backward, by a
margin no scheduling noise closes. Recorded with with_stack=True and with_modules=True,
one thread for torch (two cores shared by the suite: more threads only contend).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .capture_helpers import record_here
from .conftest import recorded_once

#: steps the profiler keeps (schedule active=)
STEPS = 2

SCRIPT = r"""
import sys
import torch
from torch.profiler import ProfilerActivity, profile, schedule

out = sys.argv[1]
torch.manual_seed(0)
torch.set_num_threads(1)


class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.big = torch.nn.Linear(1024, 1024)
        self.act = torch.nn.ReLU()

    def forward(self, x):
        return self.act(self.big(x))


model = torch.nn.Sequential(torch.nn.Linear(16, 1024), Head(), torch.nn.Linear(1024, 8))
x = torch.randn(512, 16)
with profile(
    activities=[ProfilerActivity.CPU],
    with_stack=True,
    with_modules=True,
    schedule=schedule(wait=0, warmup=1, active=STEPS),
    on_trace_ready=lambda p: p.export_chrome_trace(f"{out}/modules.json"),
) as prof:
    for _ in range(1 + STEPS):
        model(x).sum().backward()
        prof.step()
""".replace("STEPS", str(STEPS))


@pytest.fixture(scope="session")
def module_trace(tmp_path_factory) -> Path:
    pytest.importorskip("torch")

    def record(out: Path) -> None:
        record_here(SCRIPT, out)

    return recorded_once(tmp_path_factory, "module_traces", record) / "modules.json"
