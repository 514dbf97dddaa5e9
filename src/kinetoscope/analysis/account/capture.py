"""Can this capture be judged at all? The checks that withhold or qualify a verdict.

`analysis.quality` grades how far each number can be trusted; these checks ask a
prior question, from what the window account and the trace say about the capture
itself. Each is `poor` (the verdict is withheld or qualified, in every format) and
each names its mechanism:

- device activity lost: the host launched kernels and the trace holds no device
  record at all. Every launch leaves a record unless the tracer lost it (CUPTI or
  roctracer not collecting, buffers dropped), so nothing can be said of the device;
- a mostly empty window: most of the window is the profiler's own time or holds no
  recorded event, so the account has little to judge;
- too few events: a window without a ProfilerStep holding a handful of events is not a
  loop's step; it says what ran, not where a loop's time goes (a recorded step, however
  short, is one iteration of the loop, and is judged);
- a dead window: one stretch of over half the window with no op, no Python frame or
  annotation, and an idle device. The trace cannot say what ran there (Python the
  profiler does not record, a JIT's first call, a wait outside every recorded call);
- a contended CPU: kinetoscope's capture stores how long the process's threads were
  runnable but waiting for a CPU (`capture.machine`); waiting half the wall time or
  more makes every op's duration the other processes' share, not the program's;
- a step that wraps several iterations: a training iteration fetches a batch and steps
  the optimizer once; a ProfilerStep holding two or more of both (every step)
  repeats the loop inside one `prof.step()`, and per-step figures are per N
  iterations.
"""

from __future__ import annotations

import numpy as np

from ...formatting.units import fmt_pct, fmt_us
from ...trace import Trace
from ..dataloader import next_events
from ..optimizer import optimizer_steps
from ..quality_issue import QualityIssue
from ..steps import windows
from . import sets, sources
from .account import window_account

#: Fewer program events than this in the window (host ops and device work) and no
#: verdict is given: a loop's worth of ops is at least a few dozen.
MIN_EVENTS = 20
#: At least this share of the window empty (profiler, untraced) or in one dead stretch.
EMPTY_SHARE = 0.5
#: Waiting for a CPU this share of the wall time: contended (poor); `CONTENDED_NOTE`: caution
#: (tune's warning level, `tune.session.BUSY_SHARE`).
CONTENDED_SHARE = 0.5
CONTENDED_NOTE = 0.1

#: The checks whose failure withholds the verdict; the others qualify it (a contended
#: CPU slows every op alike, so the split of the window still reads; its durations are
#: the machine's, and the verdict says so beside the regime).
WITHHOLD = frozenset({"device-lost", "empty-window", "too-few-events", "dead-window"})


def capture_issues(trace: Trace) -> list[QualityIssue]:
    return trace.memo(_issues)


def _issues(trace: Trace) -> list[QualityIssue]:
    return [
        *_device_lost(trace),
        *_empty(trace),
        *_too_few(trace),
        *_dead(trace),
        *_contended(trace),
        *_wrapped_steps(trace),
    ]


def _device_lost(trace: Trace) -> list[QualityIssue]:
    launches = len(trace.launches)
    if not launches or trace.device_work.any():
        return []
    return [
        QualityIssue(
            "device-lost",
            "poor",
            f"{launches} kernel launches and not one device record: the device activity was "
            "lost (the tracer did not collect or dropped it), so nothing about the device "
            "can be judged; record again with ProfilerActivity.CUDA and check the "
            "profiler's warnings",
            launches,
        )
    ]


def _empty(trace: Trace) -> list[QualityIssue]:
    acc = window_account(trace)
    empty = acc.us("profiler") + acc.us("untraced")
    if acc.window_us <= 0 or empty < EMPTY_SHARE * acc.window_us:
        return []
    return [
        QualityIssue(
            "empty-window",
            "poor",
            f"{fmt_pct(empty / acc.window_us)} of the {fmt_us(acc.window_us)} window is the "
            f"profiler's own time ({fmt_us(acc.us('profiler'))}) or holds no recorded event "
            f"({fmt_us(acc.us('untraced'))}): too little of the program was captured to "
            "judge; profile a window that covers the loop (a schedule with active steps)",
            value_us=empty,
        )
    ]


def program_events(trace: Trace) -> int:
    """Host ops, runtime calls and device work inside the window."""
    program = trace.host_tree_mask | trace.device_work
    return sum(len(trace.events_in(s, e, program)) for _, _, s, e in windows(trace) if e > s)


def _too_few(trace: Trace) -> list[QualityIssue]:
    if trace.steps:
        return []
    n = program_events(trace)
    if n >= MIN_EVENTS:
        return []
    return [
        QualityIssue(
            "too-few-events",
            "poor",
            f"the window holds {n} events of the program (fewer than {MIN_EVENTS}) and no "
            "ProfilerStep: enough to say what ran, not where a loop's time goes",
            n,
        )
    ]


def _dead(trace: Trace) -> list[QualityIssue]:
    acc = window_account(trace)
    # Python inside a recorded frame or annotation says what ran: only the rest is dead
    said = sources.events_set(trace, sources.frame_events(trace))
    quiet = sets.union(sets.minus(acc.parts["python"], said), acc.parts["untraced"])
    if not len(quiet[0]) or acc.window_us <= 0:
        return []
    k = int(np.argmax(quiet[1] - quiet[0]))
    longest = float(quiet[1][k] - quiet[0][k])
    if longest < EMPTY_SHARE * acc.window_us:
        return []
    return [
        QualityIssue(
            "dead-window",
            "poor",
            f"{fmt_us(longest)} ({fmt_pct(longest / acc.window_us)} of the window) from "
            f"{fmt_us(trace.rel(quiet[0][k]))} with no op and an idle device: the trace "
            "cannot say what ran (Python it does not record, a first call's JIT warm-up, a "
            "wait outside every recorded call); profile after warm-up, with with_stack=True",
            value_us=longest,
        )
    ]


def _contended(trace: Trace) -> list[QualityIssue]:
    load = (trace.meta.kinetoscope or {}).get("machine_load")
    try:
        waited, wall = float(load["run_queue_s"]), float(load["wall_s"])
    except (TypeError, KeyError, ValueError):
        return []
    if not wall > 0 or waited / wall < CONTENDED_NOTE:
        return []
    share = waited / wall
    level = "poor" if share >= CONTENDED_SHARE else "caution"
    return [
        QualityIssue(
            "cpu-contended" if level == "poor" else "cpu-busy",
            level,
            f"the process's threads waited for a CPU {fmt_pct(share)} of the profiled wall "
            f"time ({waited:.3g} s of {wall:.3g} s, Linux schedstat): other processes or "
            "too many threads (OMP_NUM_THREADS above the free cores) took the CPUs, so op "
            "durations measure the machine's load, not the program",
            value_us=waited * 1e6,
        )
    ]


def _wrapped_steps(trace: Trace) -> list[QualityIssue]:
    if not trace.steps:
        return []
    fetch = np.sort(trace.ts[next_events(trace)])
    update = np.sort(np.array([trace.ts[o.index] for o in optimizer_steps(trace)], float))
    per_step = [
        min(
            np.diff(np.searchsorted(fetch, [s.start, s.end]))[0],
            np.diff(np.searchsorted(update, [s.start, s.end]))[0],
        )
        for s in trace.steps
    ]
    if min(per_step) < 2:
        return []
    return [
        QualityIssue(
            "step-wraps-iterations",
            "poor",
            f"every ProfilerStep holds {min(per_step)} or more batch fetches and optimizer "
            "steps: prof.step() is called once per several iterations, so per-step figures "
            "are per several iterations (call prof.step() once per iteration)",
            int(min(per_step)),
        )
    ]
