"""The same device work, step after step: its durations and what ran beside the slow one.

A kernel name alone is not "the same work": one elementwise kernel serves every
`add` of a model, on tensors of every size. Two launches do the same work when
they have the same kernel name, grid and block, come from the same calling op,
and are the k-th such launch of their step. Compared across steps, such a group
should take the same time each step; when one run is slower the trace can
often say why: it was the first run (cold caches, lazy loading), a collective
(NCCL/RCCL) kernel was running on another stream and sharing the SMs and
memory bandwidth, or every kernel of that step was slower (clocks, power,
another tenant of the device).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from ..trace import Trace
from ..trace.steps import STEP_RE
from .intervals import clip, union_length
from .kernel_names import decoded
from .stepmap import device_steps
from .steps import device_anchor


@dataclass(frozen=True)
class SameWork:
    """One piece of work repeated once per step: its kernel in each step, in step order."""

    name_id: int
    grid: tuple[int, ...] | None
    block: tuple[int, ...] | None
    caller: str  # name of the op that launched it ("" when unknown)
    position: int  # k-th launch of this (kernel, grid, block, caller) in its step
    indices: np.ndarray
    steps: np.ndarray

    def durations(self, trace: Trace) -> np.ndarray:
        return trace.dur[self.indices]


def _shape(row: np.ndarray) -> tuple[int, ...] | None:
    """A grid or block as recorded, None where absent (-1)."""
    return tuple(int(v) for v in row) if row[0] >= 0 else None


def _launch_shapes(trace: Trace, events: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(grid, block) rows of `events`; every row of an absent shape is all -1."""
    args = trace.kernel_args
    where = np.full(len(trace), -1, dtype=np.int64)
    where[args.index] = np.arange(len(args.index))
    pos = where[events]
    known = pos >= 0
    shapes = []
    for column in (args.grid, args.block):
        rows = np.full((len(events), 3), -1, dtype=np.int64)
        rows[known] = column[pos[known]]
        rows[rows[:, 0] < 0] = -1  # one absent value, however the rest reads
        shapes.append(rows)
    return shapes[0], shapes[1]


def _caller_codes(trace: Trace, events: np.ndarray) -> np.ndarray:
    """Name id of each event's launching op: -1 unknown, -2 a `ProfilerStep#N` (the same
    caller in every step)."""
    ops = trace.op_of[events]
    codes = np.where(ops >= 0, trace.name_id[np.maximum(ops, 0)], -1).astype(np.int64)
    step_names = trace.name_ids_matching(lambda n: bool(STEP_RE.match(n)))
    codes[np.isin(codes, step_names) & (ops >= 0)] = -2
    return codes


def _caller(trace: Trace, code: int) -> str:
    if code < 0:
        return "" if code == -1 else "ProfilerStep#N"
    return trace.names[code]


def _unique_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`np.unique(rows, axis=0, return_inverse=True)`: the distinct rows in
    lexicographic order and each row's place among them; one `lexsort` on the
    columns instead of a sort of the rows as structured values (3-4x slower)."""
    order = np.lexsort(rows.T[::-1])
    ordered = rows[order]
    new = np.ones(len(rows), dtype=bool)
    new[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    inverse = np.empty(len(rows), dtype=np.int64)
    inverse[order] = np.cumsum(new) - 1
    return ordered[new], inverse


def same_work_groups(trace: Trace, min_occurrences: int = 3) -> list[SameWork]:
    """Each piece of work seen in at least `min_occurrences` steps (kernels outside steps
    are not compared: their position cannot be matched).

    Whole-array grouping: a work key per kernel (name, grid, block, caller), its
    rank among the same key's launches in its step (launch order), and groups of
    equal (key, rank) listed in order of first launch."""
    kernels = trace.kernels
    if not len(kernels) or not trace.steps:
        return []
    steps = device_steps(trace, kernels)
    order = np.lexsort((trace.ts[kernels], device_anchor(trace)[kernels]))  # launch order
    order = order[steps[order] >= 0]
    if not len(order):
        return []
    events = kernels[order]
    grid, block = _launch_shapes(trace, events)
    callers = _caller_codes(trace, events)
    columns = np.column_stack((trace.name_id[events].astype(np.int64), grid, block, callers))
    uniq, key = _unique_rows(columns)
    # rank of each launch among its step's launches of the same key
    launch = np.arange(len(order))
    by_step_key = np.lexsort((launch, key, steps[order]))
    sorted_pairs = np.column_stack((steps[order][by_step_key], key[by_step_key]))
    new_run = np.ones(len(order), dtype=bool)
    new_run[1:] = (sorted_pairs[1:] != sorted_pairs[:-1]).any(axis=1)
    run_start = np.maximum.accumulate(np.where(new_run, launch, 0))
    nth = np.empty(len(order), dtype=np.int64)
    nth[by_step_key] = launch - run_start
    # groups of equal (key, nth), first launched first; members in launch order
    # one int64 per (key, nth), ordered as the pairs are: a 1-D unique, not one on rows
    span = int(nth.max()) + 1
    pair_keys, first, group = np.unique(key * span + nth, return_index=True, return_inverse=True)
    group_keys = np.column_stack(divmod(pair_keys, span))
    group = group.reshape(-1)
    members = np.argsort(group, kind="stable")
    bounds = np.searchsorted(group[members], np.arange(len(group_keys) + 1))
    out = []
    for g in np.argsort(first, kind="stable").tolist():
        pos = members[bounds[g] : bounds[g + 1]]
        if len(pos) < min_occurrences:
            continue
        row = uniq[group_keys[g, 0]]
        k = order[pos]
        out.append(
            SameWork(
                int(row[0]),
                _shape(row[1:4]),
                _shape(row[4:7]),
                _caller(trace, int(row[7])),
                int(group_keys[g, 1]),
                kernels[k],
                steps[k],
            )
        )
    return out


def outside_compilation(
    trace: Trace, groups: list[SameWork], compiling: np.ndarray
) -> list[SameWork]:
    """The groups without their runs that overlap a compilation event (from
    `compile_events`) by the kernel's own span or its launch call's span."""
    if not len(compiling):
        return groups
    starts, ends = trace.ts[compiling], trace.end[compiling]

    def inside(index: np.ndarray) -> np.ndarray:
        return ((trace.ts[index][:, None] < ends) & (trace.end[index][:, None] > starts)).any(1)

    out = []
    for g in groups:
        launch = trace.launch_of[g.indices]
        hit = inside(g.indices)
        linked = launch >= 0
        hit[linked] |= inside(launch[linked])
        keep = ~hit
        out.append(SameWork(g.name_id, g.grid, g.block, g.caller, g.position,
                            g.indices[keep], g.steps[keep]))  # fmt: skip
    return out


def collective_overlap(trace: Trace, index: int) -> float:
    """Share of kernel `index`'s run during which a collective kernel runs on another
    stream of the same device (the two share SMs and memory bandwidth)."""
    start, end = float(trace.ts[index]), float(trace.end[index])
    if end <= start:
        return 0.0
    kernels = trace.kernels
    near = kernels[(trace.ts[kernels] < end) & (trace.end[kernels] > start)]
    near = near[trace.lane[near] != trace.lane[index]]
    coll = [
        int(i) for i in near.tolist() if decoded(trace, trace.name(int(i))).kind == "collective"
    ]
    if not coll:
        return 0.0
    idx = np.array(coll, dtype=np.int64)
    return union_length(*clip(trace.ts[idx], trace.end[idx], start, end)) / (end - start)


def step_slowdown(trace: Trace, groups: list[SameWork]) -> dict[int, float]:
    """Per step, the median over all repeated work of (its duration that step / its median
    across steps): about 1 normally, well above 1 when the whole step ran slower."""
    ratios: dict[int, list[float]] = defaultdict(list)
    for g in groups:
        d = g.durations(trace)
        median = float(np.median(d))
        if median <= 0:
            continue
        for step, value in zip(g.steps.tolist(), d.tolist(), strict=True):
            ratios[int(step)].append(value / median)
    return {step: float(np.median(r)) for step, r in ratios.items()}
