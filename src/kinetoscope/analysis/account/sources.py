"""The time each class of the window account can claim, read from the trace's events.

Each function returns a set (`sets.Set`) of the instants at which one thing was
happening, whatever else was: the account (`account.py`) then gives each instant to
the first class, in precedence order, whose set holds it. The mechanism behind each
set is in its docstring and in docs/accuracy.md ("The window account").
"""

from __future__ import annotations

import re

import numpy as np

from ...trace import Cat, Trace
from ...trace.categories import LAUNCH_NAMES
from ...trace.steps import STEP_RE
from ..blocking import WAKE_US, blocking_calls, named_blocking
from ..cold_start import (
    CAUSES,
    FIRST_RUN_FACTOR,
    iterations_before_window,
    slow_first_launches,
    step_walls,
)
from ..compile import compile_events
from ..cpu_compute import compute_intervals, math_ops
from ..dataloader import next_events
from ..gpu_lane import buffer_requests
from ..steps import host_activity_mask
from ..syncs import DEVICE_SYNC_NAMES
from . import sets
from .sets import Set

#: A first call of a runtime function this long (us) while the device idles is start-up:
#: the first CUDA/HIP call of a process creates the context (hundreds of ms to seconds,
#: whatever the call is named: cudaFree(0), cudaGetDevice, cudaDeviceGetStreamPriorityRange),
#: and a first launch of a kernel loads its module (CUDA 11.7+ lazy loading). A steady
#: runtime call that is not a wait returns in microseconds; 1 ms is the same bound the
#: cold-start rule uses for a slow first launch (`cold_start.FIRST_LAUNCH_US`).
FIRST_CALL_US = 1000.0
#: A gap with nothing recorded on any host thread and an idle device, shorter than this
#: (us), is the interpreter between two ops (Python the profiler does not record without
#: with_stack); longer, nothing says what ran: untraced. Python's own cost between two
#: eager ops is microseconds to a few hundred; a millisecond of it is a loop body.
UNTRACED_MIN_US = 1000.0
#: The profiler's own Python frames (with_stack): stopping and starting the trace flushes
#: the device (cudaDeviceSynchronize) and the activity buffers.
_PROFILER_FRAME = re.compile(r"torch/profiler/profiler\.py\(\d+\): (stop_trace|start_trace)$")


def events_set(trace: Trace, idx: np.ndarray) -> Set:
    idx = np.asarray(idx, dtype=np.int64)
    return sets.of(trace.ts[idx], trace.end[idx])


def device(trace: Trace) -> Set:
    """A device stream runs kernels, copies or memsets; on a trace without device work,
    some thread runs the arithmetic inside a math op (`cpu_compute`): the CPU's device."""
    work = np.flatnonzero(trace.device_work)
    if len(work):
        return events_set(trace, work)
    return compute_intervals(trace)


def _host(trace: Trace, mask: np.ndarray) -> np.ndarray:
    return np.flatnonzero(mask & (trace.lane_kind == 1) & ~trace.is_instant)


def profiler(trace: Trace, window: Set) -> dict[str, Set]:
    """The profiler's own time, by cause: its buffer refills (Activity Buffer Request), its
    start/stop frames (with_stack shows `stop_trace`, whose cudaDeviceSynchronize drains
    the device), the pipeline's refill after its start drained it (`_pipeline_fill`), the
    device finishing work launched before the capture (`_before_capture`), the final
    flush (a device synchronize after the last op of its thread, on a trace without
    steps), and the head and tail of a window without steps where
    nothing of the program is recorded (from the profiler's start to the first event,
    from the last event to `Record Window End`)."""
    out = {"buffer flush": events_set(trace, buffer_requests(trace))}
    frames = trace.name_ids_matching(lambda n: bool(_PROFILER_FRAME.search(n)))
    out["start/stop"] = events_set(trace, _host(trace, np.isin(trace.name_id, frames)))
    out["work from before the capture"] = _before_capture(trace, window)
    if trace.steps:
        out["pipeline fill"] = _pipeline_fill(trace)
        return out
    out["final flush"] = events_set(trace, _final_flush(trace))
    recorded = recorded_program(trace, out)
    if len(recorded[0]) and len(window[0]):
        lo, hi = float(window[0][0]), float(window[1][-1])
        first, last = float(recorded[0][0]), float(recorded[1][-1])
        out["outside the program"] = sets.of(np.array([lo, last]), np.array([first, hi]))
    return out


def _before_capture(trace: Trace, window: Set) -> Set:
    """From the window's start to the first record of each stream whose first record has
    no launch in the trace (where others have one): it was launched before the profiler
    recorded, so the stream was busy before it with work launched earlier still, which
    CUPTI did not record (it records what it saw launched). The device's time, not the
    host's, and not this window's work."""
    work = np.flatnonzero(trace.device_work)
    if not len(work) or not len(window[0]) or not (trace.launch_of[work] >= 0).any():
        return sets.EMPTY
    work = work[np.lexsort((trace.ts[work], trace.lane[work]))]
    lanes = trace.lane[work]
    first = work[np.concatenate(([True], lanes[1:] != lanes[:-1]))]
    start = float(window[0][0])
    unlinked = first[(trace.launch_of[first] < 0) & (trace.ts[first] > start)]
    if not len(unlinked):
        return sets.EMPTY
    return sets.of(np.full(len(unlinked), start), trace.ts[unlinked])


def _pipeline_fill(trace: Trace) -> Set:
    """The part of the first step's head that a steady run would have overlapped with the
    device. When the device is idle at the window's start and still busy when the second
    step starts, the loop runs ahead of the device (a step boundary does not drain the
    queue): the queue is empty at the start only because the profiler's start (its
    warm-up to record transition) drained it. In a steady run the device would be
    working into the first step for as long as it works into the second (its carry-over:
    the run of device work from the second step's start, gaps under the wake-up bound
    bridged), so that much of the head, up to the first device work, is the profiler's."""
    steps = sorted(trace.steps, key=lambda s: s.start)
    if len(steps) < 2:
        return sets.EMPTY
    busy = device(trace)
    first, second = steps[0].start, steps[1].start
    hit = sets.inside(busy, np.array([first, second]))
    if hit[0] or not hit[1]:
        return sets.EMPTY
    k = int(np.searchsorted(busy[0], first, side="left"))
    if k >= len(busy[0]) or busy[0][k] >= second:
        return sets.EMPTY
    head = float(busy[0][k]) - first
    # the device's carry-over into the second step: its busy run from that instant
    j = int(np.searchsorted(busy[0], second, side="right")) - 1
    end = float(busy[1][j])
    while j + 1 < len(busy[0]) and busy[0][j + 1] - end <= WAKE_US:
        j += 1
        end = float(busy[1][j])
    carry = end - second
    return sets.of(np.array([first]), np.array([first + min(head, carry)]))


def _final_flush(trace: Trace) -> np.ndarray:
    """Device synchronize calls that start after the last op of their thread."""
    ids = [trace.name_index[n] for n in DEVICE_SYNC_NAMES if n in trace.name_index]
    syncs = _host(trace, np.isin(trace.name_id, np.array(ids, dtype=np.int32)))
    if not len(syncs):
        return syncs
    ops = _host(trace, trace.mask(Cat.CPU_OP))
    last = {}
    for lane in np.unique(trace.lane[syncs]).tolist():
        mine = ops[trace.lane[ops] == lane]
        last[lane] = float(np.nanmax(trace.ts[mine])) if len(mine) else -np.inf
    return syncs[[float(trace.ts[s]) >= last[int(trace.lane[s])] for s in syncs.tolist()]]


def recorded_program(trace: Trace, profiler_sets: dict[str, Set]) -> Set:
    """Everything the program recorded: host events of the call tree and device work,
    without the profiler's own."""
    host = events_set(trace, np.flatnonzero(trace.host_tree_mask))
    own = sets.union(*profiler_sets.values()) if profiler_sets else sets.EMPTY
    return sets.union(sets.minus(host, own), events_set(trace, np.flatnonzero(trace.device_work)))


#: The causes of one-time work held by calls, in the order an instant two share is given.
ONE_TIME_CAUSES = (
    "compilation",
    "module-load",
    "library-setup",
    "first launch",
    "context start-up",
)


def one_time(trace: Trace) -> dict[str, Set]:
    """Work a steady loop does not repeat, by cause (`one_time_events`), and a cold first
    step (`cold_first_step`)."""
    out = {c: events_set(trace, one_time_events(trace, c)) for c in ONE_TIME_CAUSES}
    out["cold first step"] = cold_first_step(trace)
    return out


def cold_first_step(trace: Trace) -> Set:
    """The first step of a loop recorded from its first iteration, when it is slower than
    every later step and at least `FIRST_RUN_FACTOR` times their median (three steps at
    least): the first iteration pays first calls (allocations, library and kernel
    selection, lazy initialisation) that no later one repeats; a later step as slow says
    the cost recurs. Step times are `cold_start.step_walls` (host window or the run of its
    device work, the longer)."""
    if len(trace.steps) < 3 or iterations_before_window(trace) > 0:
        return sets.EMPTY
    walls = [w.wall_us for w in step_walls(trace)]
    first, later = walls[0], walls[1:]
    if first <= max(later) or first < FIRST_RUN_FACTOR * float(np.median(later)):
        return sets.EMPTY
    step = trace.steps[0]
    return sets.of(np.array([step.start]), np.array([step.end]))


def one_time_events(trace: Trace, cause: str) -> np.ndarray:
    """The events of one cause of one-time work (`_one_time_events`), once per trace."""
    return trace.memo(_one_time_events, cause)


def _one_time_events(trace: Trace, cause: str) -> np.ndarray:
    """The events of one cause of one-time work: compilation (Dynamo/Inductor), library
    set-up and module loading (`cold_start.CAUSES`), a first launch of a kernel that took
    >= 1 ms (lazy module loading), and the first call of any other runtime function that
    took >= `FIRST_CALL_US` (context creation) in a window no iteration ran before,
    synchronizes and blocking copies excepted (a first wait can be a real one)."""
    if cause == "compilation":
        return compile_events(trace)
    if cause == "first launch":
        return slow_first_launches(trace)
    if cause == "context start-up":
        # a context is created once per process: after recorded iterations it exists
        if iterations_before_window(trace) > 0:
            return np.zeros(0, dtype=np.int64)
        return _first_long_calls(trace)
    ids = trace.name_ids_matching(lambda n: bool(CAUSES[cause].match(n)))
    return _host(trace, np.isin(trace.name_id, ids))


def _first_long_calls(trace: Trace) -> np.ndarray:
    """First calls of a runtime function that took >= `FIRST_CALL_US` and at least twice
    the median of its later calls (a first call as slow as the later ones is the
    function's own cost, a pageable copy say, not start-up); no launches, graph
    launches or waits."""
    calls = _host(trace, trace.mask(Cat.RUNTIME, Cat.DRIVER))
    if not len(calls):
        return calls
    calls = calls[np.lexsort((trace.ts[calls], trace.name_id[calls]))]
    names = trace.name_id[calls]
    first = np.flatnonzero(np.concatenate(([True], names[1:] != names[:-1])))
    stop = np.append(first[1:], len(calls))
    out = []
    for a, b in zip(first.tolist(), stop.tolist(), strict=True):
        call, dur = int(calls[a]), float(trace.dur[calls[a]])
        name = trace.name(call)
        if dur < FIRST_CALL_US or name in LAUNCH_NAMES or "Graph" in name or named_blocking(name):
            continue
        later = trace.dur[calls[a + 1 : b]]
        if len(later) and dur < FIRST_RUN_FACTOR * float(np.median(later)):
            continue
        out.append(call)
    return np.sort(np.array(out, dtype=np.int64))


def data_events(trace: Trace) -> np.ndarray:
    """The DataLoader `__next__` ranges: the host waits for the next batch."""
    return next_events(trace)


def wait_events(trace: Trace) -> np.ndarray:
    """Runtime calls that wait for the device (`analysis.blocking`), launch calls left
    out: a launch that outlasts its peers loads a module or waits for a slot in a full
    queue while the device runs (the device's time or one-time work, not a sync)."""
    calls = blocking_calls(trace)
    if not len(calls):
        return calls
    names = [trace.name(int(c)) for c in calls]
    return calls[np.array([n not in LAUNCH_NAMES or named_blocking(n) for n in names], bool)]


def math_events(trace: Trace) -> np.ndarray:
    """The ops doing arithmetic on a trace without device work (`cpu_compute`)."""
    return np.zeros(0, dtype=np.int64) if trace.device_work.any() else math_ops(trace)


def dispatch(trace: Trace) -> Set:
    """The host runs an op (the dispatcher, a composite op, its launch calls) or a runtime
    or driver call."""
    return events_set(trace, op_events(trace))


def op_events(trace: Trace) -> np.ndarray:
    """Ops and runtime/driver calls on host threads (the steps' markers left out)."""
    return trace.memo(_op_events)


def _op_events(trace: Trace) -> np.ndarray:
    busy = host_activity_mask(trace) & trace.mask(Cat.CPU_OP, Cat.RUNTIME, Cat.DRIVER)
    return _host(trace, busy)


def frame_events(trace: Trace) -> np.ndarray:
    """Python frames and annotations on host threads, the step markers left out (time
    inside a step and outside every op is the loop's Python, not the step's)."""
    return trace.memo(_frame_events)


def _frame_events(trace: Trace) -> np.ndarray:
    steps = trace.name_ids_matching(lambda n: bool(STEP_RE.match(n)))
    mask = trace.mask(Cat.PYTHON, Cat.USER_ANNOTATION) & (trace.lane_kind == 1)
    return np.flatnonzero(mask & ~np.isin(trace.name_id, steps))


def python(trace: Trace, window: Set, profiler_sets: dict[str, Set]) -> Set:
    """The host is in Python or framework code: inside a `python_function` or a user
    annotation, inside a `ProfilerStep` (the loop body runs between the ops it records),
    or in a gap shorter than `UNTRACED_MIN_US` between two recorded events."""
    ranges = _host(trace, trace.mask(Cat.PYTHON, Cat.USER_ANNOTATION))
    out = events_set(trace, ranges)
    if trace.steps:
        out = sets.union(out, window)
    recorded = recorded_program(trace, profiler_sets)
    if len(recorded[0]) > 1:
        gap_s, gap_e = recorded[1][:-1], recorded[0][1:]
        short = (gap_e - gap_s) < UNTRACED_MIN_US
        out = sets.union(out, sets.of(gap_s[short], gap_e[short]))
    return out
