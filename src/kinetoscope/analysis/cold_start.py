"""One-time costs visible in a window, by cause, and whether the window followed a warmup.

Each cause leaves its own host calls: lazy module loading (CUDA 11.7+ loads a
kernel's module on its first launch: `cuModuleLoad*`, `cuLibraryLoad*`,
`hipModuleLoad*`, or a first launch call that takes milliseconds), library
handle creation and algorithm search (`cublasCreate`, `cudnnCreate`,
`cudnnFind*`, `miopenFind*`: cuDNN benchmark mode times every algorithm on the
first call of each shape), and allocator growth (the caching allocator calls
`cudaMalloc`/`hipMalloc` only when its pool must grow; in a steady state it
reuses blocks and calls none). Inside one step nothing can be compared across
steps, but the same kernel (name, grid, block) repeated in the window can: its
first run far slower than its later runs (`first_runs`) is a cold first
iteration (cold instruction cache and TLBs, module loading, clocks ramping up).

A step costs wall time on both sides: the host's step window, and the run of the
device work it launched (`step_walls`). When the device runs behind the host, a
slow host step is hidden: it only shortens the time the host later waits.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..trace import Trace
from .kernel_names import decoded
from .steps import step_stats

CAUSES: dict[str, re.Pattern] = {
    "module-load": re.compile(r"^(cu|hip)(Module|Library)Load"),
    "library-setup": re.compile(
        r"^(cublas|cublasLt|cudnn|miopen|hipblas|hipblasLt|rocblas)_?(Create|Find)"
    ),
    "allocator-growth": re.compile(r"^(cuda|hip)Malloc(?!Host)"),
}
#: a launch call this long (us) on the first launch of its kernel is lazy loading at work
FIRST_LAUNCH_US = 1000.0
#: a first run (kernel or its launch call) this many times the median of its later runs...
FIRST_RUN_FACTOR = 2.0
#: ...and at least this much (us) longer than it is cold, not jitter
FIRST_RUN_EXCESS_US = 50.0


@dataclass(frozen=True)
class ColdCause:
    kind: str  # a key of CAUSES, or "first-launch"
    events: np.ndarray  # host calls, in time order

    def total_us(self, trace: Trace) -> float:
        return float(trace.dur[self.events].sum())


def cold_causes(trace: Trace) -> list[ColdCause]:
    """The one-time host calls of each cause present in the trace."""
    host = (trace.lane_kind == 1) & ~trace.is_instant
    out = []
    for kind, pattern in CAUSES.items():
        ids = trace.name_ids_matching(lambda n, p=pattern: bool(p.match(n)))
        idx = np.flatnonzero(np.isin(trace.name_id, ids) & host) if len(ids) else []
        if len(idx):
            out.append(ColdCause(kind, idx[np.argsort(trace.ts[idx], kind="stable")]))
    slow = slow_first_launches(trace)
    if len(slow):
        out.append(ColdCause("first-launch", slow))
    return out


def slow_first_launches(trace: Trace) -> np.ndarray:
    """Launch calls >= FIRST_LAUNCH_US that are the first launch of their kernel's name."""
    launch = trace.launch_of
    kernels = trace.kernels
    linked = kernels[launch[kernels] >= 0]
    if not len(linked):
        return np.zeros(0, dtype=np.int64)
    linked = linked[np.argsort(trace.ts[launch[linked]], kind="stable")]
    _, first = np.unique(trace.name_id[linked], return_index=True)
    calls = launch[linked[first]]
    # a graph launch enqueues a whole captured graph: its cost is not one kernel's loading
    single = np.array(["Graph" not in trace.name(int(c)) for c in calls], dtype=bool)
    calls = calls[single]
    return np.sort(calls[trace.dur[calls] >= FIRST_LAUNCH_US])


def _same_work(trace: Trace) -> list[np.ndarray]:
    """Kernels grouped by name, grid and block, each group in time order (collectives
    left out: their first run also waits for the slowest rank to arrive)."""
    kernels = trace.kernels
    args = trace.kernel_args
    arg_pos = {int(e): p for p, e in enumerate(args.index.tolist())}
    groups: dict[tuple, list[int]] = defaultdict(list)
    for e in kernels[np.argsort(trace.ts[kernels], kind="stable")].tolist():
        p = arg_pos.get(e)
        shape = (tuple(args.grid[p]), tuple(args.block[p])) if p is not None else None
        groups[(int(trace.name_id[e]), shape)].append(e)
    return [
        np.array(members, dtype=np.int64)
        for (nid, _), members in groups.items()
        if decoded(trace, trace.names[nid]).kind != "collective"
    ]


@dataclass(frozen=True)
class FirstRun:
    """One piece of work whose first occurrence in the window was cold."""

    index: int  # the first kernel run, or the first launch call of that kernel
    later_median_us: float  # median duration of its later occurrences
    runs: int

    def excess_us(self, trace: Trace) -> float:
        return float(trace.dur[self.index]) - self.later_median_us


def cold_first_later_median(durations: np.ndarray) -> float | None:
    """The median of the later runs when the first of these runs of the same work (in time
    order) is a cold first run, `FIRST_RUN_FACTOR` times that median and
    `FIRST_RUN_EXCESS_US` beyond it; None when it is not."""
    later = float(np.median(durations[1:]))
    first = float(durations[0])
    if first >= FIRST_RUN_FACTOR * later and first - later >= FIRST_RUN_EXCESS_US:
        return later
    return None


def _cold_first(trace: Trace, seq: np.ndarray) -> FirstRun | None:
    later = cold_first_later_median(trace.dur[seq])
    return None if later is None else FirstRun(int(seq[0]), later, len(seq))


def first_runs(trace: Trace, min_runs: int = 3) -> list[FirstRun]:
    """Kernels and launch calls whose first occurrence in the window is far slower than the
    later occurrences of the same work (>= `min_runs` runs), slowest excess first."""
    launch = trace.launch_of
    out = []
    for runs in _same_work(trace):
        if len(runs) < min_runs:
            continue
        calls = launch[runs]
        for seq in (runs, calls) if (calls >= 0).all() else (runs,):
            cold = _cold_first(trace, seq)
            if cold is not None:
                out.append(cold)
    return sorted(out, key=lambda r: -r.excess_us(trace))


def iterations_before_window(trace: Trace) -> int:
    """How many loop iterations ran before the first recorded step, as far as the trace says:
    the first `ProfilerStep#N` number (torch counts every iteration from 0), or what
    kinetoscope recorded in its metadata (warmup iterations + schedule wait and warmup)."""
    before = min((s.number for s in trace.steps), default=0)
    meta = trace.meta.kinetoscope or {}
    schedule = meta.get("schedule") if isinstance(meta.get("schedule"), dict) else {}
    try:
        recorded = int(meta.get("warmup_iters") or 0) + sum(
            int(schedule.get(k) or 0) for k in ("wait", "warmup")
        )
    except (TypeError, ValueError):
        recorded = 0
    return max(before, recorded)


@dataclass(frozen=True)
class StepWall:
    """What one step cost in wall time: its host window, or the run of its device work
    (first start to last end of the work it launched) when that is longer."""

    number: int | None
    host_us: float
    device_us: float

    @property
    def wall_us(self) -> float:
        return max(self.host_us, self.device_us)


def step_walls(trace: Trace) -> list[StepWall]:
    """Per recorded step, its host duration and the span of the device work it launched
    (`step_stats` attributes the work once for every analysis)."""
    return [StepWall(s.number, s.dur, s.device_span_us) for s in step_stats(trace)]


#: the run tag kinetoscope profile puts in its file names: ..._<dtype>_cold_<eager|compile>...
COLD_TAG_RE = re.compile(r"_cold_(?:eager|compile)(?:_|\.|$)")


def recorded_cold(trace: Trace) -> bool:
    """Whether kinetoscope recorded the run without warm-up iterations (`--warmup 0`): its
    metadata says how many iterations the program ran before profiling; without metadata,
    the run tag in the file name (`..._fp32_cold_eager...`) says the same."""
    meta = trace.meta.kinetoscope or {}
    if "warmup_iters" not in meta:
        return bool(COLD_TAG_RE.search(Path(trace.path or "").name))
    try:
        return int(meta["warmup_iters"]) == 0
    except (TypeError, ValueError):
        return False
