"""host-sync and kernel-variance leave out evidence that lies inside compilation.

No corpus trace records torch.compile compiling on a device, so the mechanism is checked
on a real multi-step GPU trace with one step's span standing for a compilation event:
every run of repeated work inside it must leave the comparison, no other run.
"""

from __future__ import annotations

import numpy as np

from kinetoscope.analysis.kernel_variance import outside_compilation, same_work_groups
from kinetoscope.trace import load

from ..conftest import corpus


def test_runs_inside_compilation_leave_the_groups():
    trace = load(corpus("gpu/tiny_transformer_block_h100.pt.trace.json.gz"))
    groups = same_work_groups(trace, 3)
    assert groups, "tiny_transformer_block_h100 repeats its kernels in each of its 3 steps"
    first = trace.steps[0]
    span = np.array([first.index], dtype=np.int64)
    kept = outside_compilation(trace, groups, span)
    for before, after in zip(groups, kept, strict=True):
        launches = trace.launch_of[before.indices]
        inside = (trace.ts[launches] < first.end) & (trace.end[launches] > first.start)
        assert len(after.indices) == len(before.indices) - int(inside.sum())
        assert not set(after.indices.tolist()) & set(before.indices[inside].tolist())


def test_no_compilation_keeps_every_run():
    trace = load(corpus("gpu/tiny_transformer_block_h100.pt.trace.json.gz"))
    groups = same_work_groups(trace, 3)
    assert outside_compilation(trace, groups, np.zeros(0, dtype=np.int64)) is groups
