"""Array forms that replaced per-event Python loops (issue 24) give what the loops gave.

Each reference below is the loop the array form replaced, run on real corpus traces;
the comparison is exact (`==` on floats), because the report must stay byte-identical.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from kinetoscope.analysis.attention_kernels import has_kernel_family, kernel_family
from kinetoscope.analysis.gpu_lane import kernel_gaps
from kinetoscope.analysis.kernel_variance import _unique_rows
from kinetoscope.analysis.stepmap import device_steps
from kinetoscope.analysis.steps import windows
from kinetoscope.analysis.window import in_window
from kinetoscope.rules.profiler_table import _heaviest_children
from kinetoscope.trace import load

from ..conftest import corpus

TRACES = [
    "gpu/resnet_train_ns.pt.trace.json.gz",  # 5 steps, NCCL on its own stream
    "gpu/tiny_transformer_block_h100.pt.trace.json.gz",  # flash attention kernels
    "cpu/cpu_only_rank34.pt.trace.json.gz",  # no device at all
]


@pytest.fixture(scope="module", params=TRACES)
def trace(request):
    return load(corpus(request.param))


def _gaps_by_loop(trace):
    """The per-gap loop `kernel_gaps` used to run: (step, start, end, before, after) rows."""
    work = np.flatnonzero(trace.device_work)
    out = {number: [] for number, *_ in windows(trace)}
    if len(work) < 2:
        return out
    work = work[np.argsort(trace.ts[work], kind="stable")]
    steps = device_steps(trace, work)
    starts, ends = trace.ts[work], trace.end[work]
    run_end = np.maximum.accumulate(ends)
    holder = np.maximum.accumulate(np.where(ends >= run_end, np.arange(len(work)), 0))
    for i in range(len(work) - 1):
        if starts[i + 1] - run_end[i] <= 0.01:
            continue
        step = int(steps[i + 1])
        if step != steps[holder[i]] or (trace.steps and step < 0):
            continue
        number = None if step < 0 else step
        row = (number, float(run_end[i]), float(starts[i + 1]), int(work[holder[i]]))
        out.setdefault(number, []).append((*row, int(work[i + 1])))
    return out


def test_kernel_gaps_are_the_gaps_the_loop_found(trace):
    per_step = kernel_gaps(trace)
    expected = _gaps_by_loop(trace)
    assert list(per_step) == list(expected)
    for number, gaps in per_step.items():
        rows = [tuple(vars(gaps.gap(k)).values()) for k in range(len(gaps))]
        assert rows == expected[number]
        assert gaps.dur.tolist() == [end - start for _, start, end, _, _ in rows]


def test_unique_rows_is_numpy_unique_on_rows():
    rng = np.random.default_rng(7)
    for n in (0, 1, 2, 50, 5000):
        rows = rng.integers(-3, 4, size=(n, 8)).astype(np.int64)
        rows[:, 0] = rng.integers(0, 40, n)
        uniq, inverse = np.unique(rows, axis=0, return_inverse=True)
        got_uniq, got_inverse = _unique_rows(rows)
        assert np.array_equal(got_uniq, uniq)
        assert got_inverse.tolist() == inverse.reshape(-1).tolist()


def test_kernel_family_mask_asks_each_name(trace):
    kernels = trace.kernels
    expected = [kernel_family(trace.name(k)) is not None for k in kernels.tolist()]
    assert has_kernel_family(trace, kernels).tolist() == expected


def _children_by_loop(trace, names):
    parent = trace.parent
    child = np.flatnonzero(parent >= 0)
    child = child[in_window(trace, trace.ts[parent[child]])]
    sums: dict[str, Counter] = {}
    for c in child.tolist():
        owner = trace.name(int(parent[c]))
        if owner in names:
            sums.setdefault(owner, Counter())[trace.name(c)] += float(trace.dur[c])
    return {owner: (*counter.most_common(1)[0], len(counter)) for owner, counter in sums.items()}


def test_heaviest_children_sum_and_tie_break_as_the_loop(trace):
    names = set(trace.names)
    assert _heaviest_children(trace, names) == _children_by_loop(trace, names)


def test_values_at_reads_what_lookups_read(trace):
    from kinetoscope.trace.sparse import values_at

    rng = np.random.default_rng(3)
    events = rng.integers(0, len(trace), size=5000).tolist() + trace.copy_bytes.index.tolist()
    for table in (trace.copy_bytes, trace.flops):
        expected = [table[i] for i in events if table.get(i) is not None]
        assert values_at(table, events) == expected
        assert values_at(dict(table.items()), events) == expected
    assert values_at(trace.copy_bytes, []) == []
