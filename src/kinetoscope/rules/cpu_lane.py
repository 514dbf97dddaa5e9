"""CPU-lane rules: one-time costs in the window, adaptive launches, the final sync, hidden copies.

All read the host call tree (`trace.parent`) and the launch links; none needs a
device lane except `heavyweight-launch`, `sync-flush` and `hidden-memcpy`.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter, defaultdict

import numpy as np

from ..analysis.intervals import clip, union_length
from ..analysis.kernel_names import display_name
from ..analysis.resolution import timestamp_resolution
from ..analysis.stepmap import step_count
from ..analysis.window import in_window
from ..formatting.units import count, fmt_pct, fmt_us
from ..trace import Cat, Trace
from ..trace.tree import children_of
from .advice import cuda_graphs_fit
from .base import Evidence, Finding, NotChecked, rule
from .cold_start import warmup_advice
from .impact import host_saving_per_step
from .quality import above_resolution
from .requires import need_device

_NO_STEPS = (
    "no ProfilerStep#N windows in the trace",
    "profile with schedule=torch.profiler.schedule(wait=1, warmup=1, active=3) and call "
    "prof.step() once per iteration",
)
OCCUPANCY_RE = re.compile(r"^(cuda|hip)OccupancyMaxActiveBlocksPerMultiprocessor")
DEVICE_SYNC_NAMES = frozenset({"cudaDeviceSynchronize", "hipDeviceSynchronize"})


def _first_child_start(trace: Trace, events: np.ndarray) -> dict[int, float]:
    """For each of `events` (ascending host events), the start of its earliest child
    in the call tree (inf if none). Only their children are gathered: a per-event
    array of first starts was 8 bytes for every event of the trace."""
    is_event = np.zeros(len(trace), dtype=bool)
    is_event[events] = True
    parent = trace.parent
    child = children_of(parent, is_event)
    child = child[trace.cat[child] != int(Cat.PYTHON)]
    first = np.full(len(events), np.inf)
    np.minimum.at(first, np.searchsorted(events, parent[child]), trace.ts[child])
    return dict(zip(events.tolist(), first.tolist(), strict=True))


@rule(
    "dispatch-dead-window",
    "cpu-lane",
    "an annotation waits long before its first op, far longer than in later steps",
    min_gap_us=20.0,
    factor=5.0,
)
def dispatch_dead_window(ctx) -> list[Finding]:
    trace = ctx.trace
    if len(trace.steps) < 2:
        raise NotChecked(
            "needs at least 2 profiled steps to compare the same annotation across steps",
            _NO_STEPS[1],
        )
    # gaps[name][step number] = (annotation index, gap) for the first occurrence per step
    gaps: dict[str, dict[int, tuple[int, float]]] = defaultdict(dict)
    annotations = np.flatnonzero(
        (trace.cat == int(Cat.USER_ANNOTATION)) & (trace.lane_kind == 1) & ~trace.is_instant
    )
    step_of = {s.index: s.number for s in trace.steps}
    first_child = _first_child_start(trace, np.union1d(annotations, list(step_of)).astype(np.int64))
    for s in trace.steps:
        inside = annotations[(trace.ts[annotations] >= s.start) & (trace.ts[annotations] < s.end)]
        candidates = [s.index] + [int(i) for i in inside if int(i) not in step_of]
        for i in sorted(candidates, key=lambda i: trace.ts[i]):
            name = "ProfilerStep#N" if i in step_of else trace.name(i)
            if s.number not in gaps[name] and np.isfinite(first_child[i]):
                gaps[name][s.number] = (i, float(first_child[i] - trace.ts[i]))
    min_gap, factor = ctx.threshold("min_gap_us"), ctx.threshold("factor")
    resolution = timestamp_resolution(trace).host_us or 0.0
    findings = []
    for name, per_step in gaps.items():
        numbers = sorted(per_step)
        for k, number in enumerate(numbers[:-1]):
            index, gap = per_step[number]
            later = [per_step[n][1] for n in numbers[k + 1 :]]
            # below one timestamp step a typical gap reads as 0 and any ratio to it is noise
            typical = max(statistics.median(later), resolution)
            if gap <= min_gap or gap <= factor * typical or not above_resolution(ctx, gap, "host"):
                continue
            findings.append(_dead_window(trace, name, number, per_step, typical, min_gap, factor))
            break  # one finding per annotation: its first dead window
    return findings


def _dead_window(trace, name, number, per_step, typical, min_gap, factor) -> Finding:
    index, gap = per_step[number]
    evidence = [
        Evidence(
            f"first op at +{fmt_us(trace.rel(trace.ts[i] + g))}, gap",
            name=trace.name(i),
            ts_us=trace.rel(trace.ts[i]),
            step=n,
            value=g,
            unit="us",
        )
        for n, (i, g) in sorted(per_step.items())
    ]
    shown = f"step #{number}" if name == "ProfilerStep#N" else f"{name} in step #{number}"
    return Finding(
        id="dispatch-dead-window",
        severity="info",
        title=(
            f"Dead window: {shown} waits {fmt_us(gap)} before its first op, "
            f"{gap / typical if typical > 0 else float('inf'):.0f}x the {fmt_us(typical)} of "
            f"later steps (threshold {fmt_us(min_gap, 0)} and {factor:g}x)"
        ),
        explanation=(
            "Between the annotation opening and the first operator inside it, the host did "
            "nothing the profiler can name: one-time setup (lazy initialisation, first-call "
            "dispatch, allocator or library warm-up). It is the cold-start tax, zoomed in."
        ),
        suggestion=warmup_advice(trace),
        impact_us=(gap - typical) / step_count(trace),
        evidence=evidence,
        measured={
            "annotation": name,
            "gap_us": round(gap, 3),
            "later_median_gap_us": round(typical, 3),
            "min_gap_us": min_gap,
            "factor": factor,
        },
    )


def _launch_to_device(trace: Trace) -> dict[int, int]:
    launch = trace.launch_of
    dev = np.flatnonzero(launch >= 0)
    return {int(launch[i]): int(i) for i in dev}


@rule(
    "heavyweight-launch",
    "cpu-lane",
    "kernel launches preceded in the same op by an occupancy query",
)
def heavyweight_launch(ctx) -> list[Finding]:
    trace = ctx.trace
    occ_ids = trace.name_ids_matching(lambda n: bool(OCCUPANCY_RE.match(n)))
    occupancy = np.flatnonzero(np.isin(trace.name_id, occ_ids))
    occupancy = occupancy[in_window(trace, trace.ts[occupancy])]
    if not len(occupancy) or not len(trace.launches):
        return []
    parent = trace.parent
    launches = trace.launches[in_window(trace, trace.ts[trace.launches])]
    by_parent: dict[int, list[int]] = defaultdict(list)
    for i in launches:
        by_parent[int(parent[i])].append(int(i))
    kernel_of = _launch_to_device(trace)
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)  # (op, kernel) -> queries
    adaptive: set[int] = set()
    for q in occupancy:
        op = int(parent[q])
        after = [i for i in by_parent.get(op, []) if trace.ts[i] >= trace.ts[q]]
        if op < 0 or not after:
            continue
        target = after[0]
        adaptive.add(target)
        groups[(trace.name(op), _launched(trace, target, kernel_of))].append(int(q))
    if not groups:
        return []
    query_time = float(trace.dur[occupancy].sum())
    evidence = []
    for (op, kernel), queries in sorted(groups.items(), key=lambda kv: -len(kv[1]))[:6]:
        first = queries[0]
        evidence.append(
            Evidence(
                f"{count(len(queries), 'occupancy query')} before launching {kernel}",
                name=op,
                ts_us=trace.rel(trace.ts[first]),
                dur_us=float(trace.dur[first]),
                value=len(queries),
                unit="queries",
            )
        )
    mechanical = len(launches) - len(adaptive)
    # counted by name first: a signature is decoded once per kernel name, not per launch
    # (8,556 launches of a few kernels took 1.4 s of a 2.9 s explain under cProfile)
    by_name = Counter(
        int(trace.name_id[kernel_of[int(i)]])
        for i in launches
        if int(i) not in adaptive and int(i) in kernel_of
    )
    direct: Counter[str] = Counter()
    for name_id, launched in by_name.items():
        direct[_short_kernel(trace.names[name_id])] += launched
    examples = ", ".join(name for name, _ in direct.most_common(3))
    evidence.append(
        Evidence(
            f"{len(adaptive)} adaptive launches (occupancy query first) vs {mechanical} "
            f"mechanical ones (launched directly{': ' + examples if examples else ''})",
            value=len(adaptive),
            unit="launches",
        )
    )
    return [
        Finding(
            id="heavyweight-launch",
            severity="info",
            title=(
                f"Heavyweight launches: {len(adaptive)} launches query occupancy first "
                f"({fmt_us(query_time)} of queries in the window)"
            ),
            explanation=(
                "Some kernels (GEMMs, convolutions, some reductions) size their grid to the "
                "device: before launching, the library asks the runtime how many blocks fit "
                "per multiprocessor. That query is an extra runtime call on the CPU lane; "
                "elementwise kernels are launched mechanically without it."
            ),
            suggestion=(
                "Nothing to fix on its own: it explains the extra runtime calls next to these "
                "launches."
                + (
                    " If launches dominate, CUDA graphs remove the per-launch host cost."
                    if cuda_graphs_fit(ctx)
                    else ""
                )
            ),
            impact_us=host_saving_per_step(ctx, query_time),
            evidence=evidence,
            measured={
                "occupancy_queries": len(occupancy),
                "adaptive_launches": len(adaptive),
                "mechanical_launches": mechanical,
                "query_time_us": round(query_time, 3),
            },
        )
    ]


@rule(
    "sync-flush",
    "cpu-lane",
    "a long device synchronize at the end of the window covers little device work",
    min_sync_us=100.0,
    min_idle_share=0.9,
)
def sync_flush(ctx) -> list[Finding]:
    trace = ctx.trace
    need_device(trace)
    sync_ids = trace.name_ids_matching(lambda n: n in DEVICE_SYNC_NAMES)
    syncs = np.flatnonzero(np.isin(trace.name_id, sync_ids) & (trace.lane_kind == 1))
    if not len(syncs):
        return []
    last = int(syncs[np.argmax(trace.ts[syncs])])
    start, end = float(trace.ts[last]), float(trace.end[last])
    if len(trace.launches) and float(trace.ts[trace.launches].max()) > start:
        return []  # work was launched after it: not the final flush
    dur = end - start
    work = np.flatnonzero(trace.device_work)
    busy = union_length(*clip(trace.ts[work], trace.end[work], start, end))
    idle = 1.0 - busy / dur if dur > 0 else 0.0
    min_sync, min_idle = ctx.threshold("min_sync_us"), ctx.threshold("min_idle_share")
    if dur < min_sync or idle < min_idle:
        return []
    return [
        Finding(
            id="sync-flush",
            severity="info",
            title=(
                f"Final sync: {trace.name(last)} lasts {fmt_us(dur)} but covers only "
                f"{fmt_us(busy)} of device work ({fmt_pct(idle)} idle; threshold "
                f"{fmt_pct(min_idle, 0)})"
            ),
            explanation=(
                "The long synchronize at the end of the window is the profiler flushing "
                "(or the program waiting for the last kernels), not work: the device is idle "
                "for almost all of it. A long wait over tiny work is a symptom of the host "
                "being the bottleneck, not a cost of its own."
            ),
            suggestion=(
                "Leave it out of per-step costs. If it matters, the fix is the overhead "
                "itself (bigger kernels, fusion"
                + (", CUDA graphs" if cuda_graphs_fit(ctx) else "")
                + ")."
            ),
            impact_us=0.0,
            evidence=[
                Evidence(
                    "the final device synchronize",
                    name=trace.name(last),
                    ts_us=trace.rel(start),
                    dur_us=dur,
                ),
                Evidence("device work inside it", value=busy, unit="us"),
                Evidence(f"idle share {fmt_pct(idle)}", value=idle),
            ],
            measured={
                "sync_us": round(dur, 3),
                "device_work_us": round(busy, 3),
                "idle_share": round(idle, 5),
                "min_sync_us": min_sync,
                "min_idle_share": min_idle,
            },
        )
    ]


def _short_kernel(name: str) -> str:
    """`void at::native::foo<...>(...)` -> `at::native::foo`: enough to tell kernels apart
    (from `display_name`, so `std::enable_if<...>::type ns::k<...>(...)` gives `ns::k`)."""
    name = display_name(name, limit=len(name) + 1).replace("(anonymous namespace)::", "")
    return name[: name.index("<", 1)] if "<" in name[1:] else name


#: Said for a launch whose kernel has no device record (`analysis.quality`: dropped events).
NOT_RECORDED = "a kernel not recorded (dropped by the profiler)"


def _launched(trace: Trace, launch: int, kernel_of: dict[int, int]) -> str:
    """The kernel `launch` started, by its display name; in words where the trace has
    none: a launch with a correlation id and no device event is a record the profiler lost
    (the trace-quality section counts them, as `analysis.quality` does: only where other
    launches did link, else a drop cannot be told from ids the trace never wrote)."""
    kernel = kernel_of.get(launch)
    if kernel is not None:
        return display_name(trace.name(kernel))
    if trace.correlation[launch] >= 0 and kernel_of:
        return NOT_RECORDED
    return "a kernel the trace does not link to its launch"
