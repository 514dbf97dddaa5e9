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
from .kernel_names import decode
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


def _shape(args, pos: int, column: str) -> tuple[int, ...] | None:
    value = tuple(int(v) for v in getattr(args, column)[pos])
    return value if value[0] >= 0 else None


def _caller(trace: Trace, op: int) -> str:
    """The launching op's name; a step itself is `ProfilerStep#N` in every step."""
    if op < 0:
        return ""
    name = trace.name(op)
    return "ProfilerStep#N" if STEP_RE.match(name) else name


def same_work_groups(trace: Trace, min_occurrences: int = 3) -> list[SameWork]:
    """Each piece of work seen in at least `min_occurrences` steps (kernels outside steps
    are not compared: their position cannot be matched)."""
    kernels = trace.kernels
    if not len(kernels) or not trace.steps:
        return []
    args = trace.kernel_args
    arg_pos = {int(e): p for p, e in enumerate(args.index.tolist())}
    steps = device_steps(trace, kernels)
    order = np.lexsort((trace.ts[kernels], device_anchor(trace)[kernels]))  # launch order
    op_of = trace.op_of
    seen: dict[tuple, int] = defaultdict(int)  # (step, work key) -> launches so far
    groups: dict[tuple, list[int]] = defaultdict(list)
    for k in order.tolist():
        step = int(steps[k])
        if step < 0:
            continue
        event = int(kernels[k])
        pos = arg_pos.get(event)
        grid = _shape(args, pos, "grid") if pos is not None else None
        block = _shape(args, pos, "block") if pos is not None else None
        caller = _caller(trace, int(op_of[event]))
        key = (int(trace.name_id[event]), grid, block, caller)
        nth = seen[(step, key)]
        seen[(step, key)] = nth + 1
        groups[(*key, nth)].append(k)
    out = []
    for (nid, grid, block, caller, nth), members in groups.items():
        if len(members) < min_occurrences:
            continue
        pos = np.array(members, dtype=np.int64)
        out.append(SameWork(nid, grid, block, caller, nth, kernels[pos], steps[pos]))
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
    coll = [int(i) for i in near.tolist() if decode(trace.name(int(i))).kind == "collective"]
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
