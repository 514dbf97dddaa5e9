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


def test_events_in_finds_what_a_scan_finds(trace):
    """The coarse index over the time order (`Trace._first_at_or_after`) against a scan of
    every start, for each step window and ranges around them."""
    ranges = [(start, end) for _, _, start, end in windows(trace)]
    lo, hi = float(np.nanmin(trace.ts)), float(np.nanmax(trace.end))
    ranges += [(lo, hi), (lo - 1, lo), (hi, hi + 1), (lo + (hi - lo) / 3, lo + (hi - lo) / 2)]
    for start, end in ranges:
        scan = np.flatnonzero((trace.ts >= start) & (trace.ts < end))
        assert np.array_equal(trace.events_in(start, end), scan), (start, end)


def _walls_by_mask(trace):
    """The per-step mask `step_walls` used: (number, host, device span) rows."""
    from kinetoscope.analysis.steps import device_anchor

    work = np.flatnonzero(trace.device_work)
    anchor = device_anchor(trace)[work]
    out = []
    for number, _index, start, end in windows(trace):
        mine = work[(anchor >= start) & (anchor < end)]
        span = float(trace.end[mine].max() - trace.ts[mine].min()) if len(mine) else 0.0
        out.append((number, end - start, span))
    return out


def test_step_walls_are_what_the_mask_gave(trace):
    from kinetoscope.analysis.cold_start import step_walls

    walls = [(w.number, w.host_us, w.device_us) for w in step_walls(trace)]
    assert walls == _walls_by_mask(trace)


@pytest.mark.parametrize(
    "name",
    [
        *TRACES,
        "gpu/sampled_rank0.json.gz",  # NCCL kernels in every step, under compute in part
        # all-to-all and all-reduce
        "multirank/dlrm_8ranks/worker0_step_12.1694128201545.pt.trace.json.gz",
    ],
)
def test_per_step_overlap_is_what_the_window_wide_form_gave(name):
    """Each step's communication and hidden time, from the step's slice and the device's
    compute cut to it, against the masks over the whole window the loop built per step."""
    from kinetoscope.analysis.kernel_types import KERNEL_TYPES, type_codes
    from kinetoscope.analysis.streams import COMMUNICATION_TYPES, stream_report
    from kinetoscope.analysis.window import window_device_work

    trace = load(corpus(name))

    work = window_device_work(trace)
    codes = [KERNEL_TYPES.index(t) for t in sorted(COMMUNICATION_TYPES)]
    is_comm = np.isin(type_codes(trace, work), codes)
    starts, ends = trace.ts[work], trace.end[work]
    lane_device = np.array([-1 if la.device is None else la.device for la in trace.lanes] or [-1])
    device = lane_device[trace.lane[work]]
    numbers = device_steps(trace, work) if trace.steps else np.full(len(work), -1)
    hidden = 0.0
    report = stream_report(trace)
    for row in report.steps:
        launched = np.ones(len(work), bool) if row.step is None else numbers == row.step
        mine = is_comm & launched
        assert row.hidden_us == _hidden_by_mask(starts, ends, is_comm, device, mine)
        hidden += row.hidden_us
    assert report.hidden_us == _hidden_by_mask(starts, ends, is_comm, device, is_comm)
    if "sampled" in name or "dlrm" in name:
        assert hidden > 0  # the case the cut compute matters for


def _hidden_by_mask(starts, ends, is_comm, device, selected) -> float:
    """The form `streams._hidden_in` replaced: communication in `selected` overlapped
    with the device's compute over the whole window, by masks."""
    from kinetoscope.analysis.streams import _overlap_us

    total = 0.0
    for dev in np.unique(device[selected]).tolist():
        comm = selected & (device == dev)
        comp = ~is_comm & (device == dev)
        total += _overlap_us(starts[comm], ends[comm], starts[comp], ends[comp])
    return total
