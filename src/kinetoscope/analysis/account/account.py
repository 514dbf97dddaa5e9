"""The window account: every instant of the window, given to what held it.

An expert reads a trace by asking, at each instant, what the program was waiting
for. The account answers that once, for the whole window, and every verdict, share
and saving reads it. Each instant goes to the first class, in this precedence order,
whose events cover it (`sources.py` says which events each class reads):

1. `device`: a device stream runs the program's work. The host is ahead of it or
   waiting on it; either way the device sets the pace. (On a trace without device
   work: the arithmetic inside the math ops, the CPU's device.)
2. `profiler`: the profiler's own work while the device idles: buffer flushes, its
   start/stop frames and final synchronize, the head and tail of the window where
   nothing of the program is recorded.
3. `one_time`: work a steady loop does not repeat, while the device idles:
   compilation, context start-up, lazy module loading, library set-up, and a first
   step recorded cold that is slower than every later one.
4. `data`: the host waits for the next batch (DataLoader), device idle.
5. `sync_stall` / `external`: the host blocks in a runtime wait while every device
   stream idles. A wait on this trace's own device work ends a few microseconds after
   that work does (a woken thread returns within `blocking.WAKE_US`; a launch onto an
   idle device starts within tens of microseconds), so idle stretches inside a wait up
   to `EXTERNAL_MIN_US` are the wait's own cost: `sync_stall`. A longer stretch with
   every stream idle waits for something this trace does not hold (an event recorded by
   another process, a peer rank, I/O): `external`.
6. `dispatch`: the host runs an op or a runtime call (dispatch, launches), device idle.
7. `python`: the host is in Python or framework code with no op running, device idle.
8. `untraced`: nothing recorded on either side for at least `UNTRACED_MIN_US`.

The window is the profiled steps (the whole trace without them), until the last device
work the steps launched ends: a lagging device's tail is the window's time too. The
classes are disjoint and cover it, so their shares add up to 1. The steady part is
the window less `one_time`, `profiler` and `untraced`: what a loop would repeat, and
what the verdict judges.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...trace import Trace
from ..blocking import WAKE_US
from ..steps import windows
from ..window import window_device_work
from . import sets, sources
from .sets import Set

#: The classes in the order reports list them (the issue's words, JSON keys).
CLASSES = (
    "device",
    "python",
    "dispatch",
    "data",
    "sync_stall",
    "external",
    "one_time",
    "untraced",
    "profiler",
)
#: Time a loop would not repeat: set apart from the steady part the verdict judges.
SET_APART = ("one_time", "untraced", "profiler")
STEADY = tuple(c for c in CLASSES if c not in SET_APART)
#: What each class means, in the words every renderer uses.
WORDS = {
    "device": "device busy",
    "python": "Python",
    "dispatch": "dispatch + launch",
    "data": "data wait",
    "sync_stall": "sync stall",
    "external": "waiting outside the trace",
    "one_time": "one-time work",
    "untraced": "untraced",
    "profiler": "profiler",
}
#: Longest idle stretch inside a wait that the trace's own device work explains (us):
#: five times the wake-up bound, above any launch-to-start delay on an idle device the
#: corpus shows (docs/accuracy.md, "The window account").
EXTERNAL_MIN_US = 5 * WAKE_US
CPU_WORDS = {**WORDS, "device": "CPU compute", "dispatch": "dispatch"}


@dataclass(frozen=True)
class StepAccount:
    number: int | None
    start: float
    end: float
    us: dict[str, float]


@dataclass(frozen=True)
class WindowAccount:
    window_us: float
    #: each class's time: sorted disjoint intervals, the classes disjoint, covering the window
    parts: dict[str, Set]
    #: one-time and profiler time by cause (us)
    causes: dict[str, dict[str, float]]
    #: the time each cause could claim (`sources.one_time`, `sources.profiler`), by class
    cause_sets: dict[str, dict[str, Set]]
    #: the CPU's math plays the device (no device work was recorded)
    on_cpu: bool
    steps: list[StepAccount]

    def us(self, cls: str) -> float:
        return sets.length(self.parts[cls])

    def shares(self) -> dict[str, float]:
        """Each class's share of the window (they add up to 1)."""
        w = self.window_us
        return {c: (self.us(c) / w if w > 0 else 0.0) for c in CLASSES}

    @property
    def steady_us(self) -> float:
        return sum(self.us(c) for c in STEADY)

    def steady_shares(self) -> dict[str, float]:
        """Each steady class's share of the steady part (they add up to 1)."""
        s = self.steady_us
        return {c: (self.us(c) / s if s > 0 else 0.0) for c in STEADY}

    def words(self) -> dict[str, str]:
        return CPU_WORDS if self.on_cpu else WORDS

    def to_dict(self) -> dict:
        """`verdict.account` in JSON: each class's share of the window, and its time."""
        return {
            "shares": {c: round(v, 6) for c, v in self.shares().items()},
            "us": {c: round(self.us(c), 3) for c in CLASSES},
            "steady_us": round(self.steady_us, 3),
            "steady_shares": {c: round(v, 6) for c, v in self.steady_shares().items()},
            "causes": {
                k: {c: round(v, 3) for c, v in d.items() if v > 0} for k, d in self.causes.items()
            },
            "device_is_cpu": self.on_cpu,
        }


def window_account(trace: Trace) -> WindowAccount:
    return trace.memo(_account)


def window_set(trace: Trace) -> Set:
    """The active window: the profiled steps and, when the device runs behind, the tail
    until the last device work they launched ends (the window lasts until its work is
    done); the whole trace without steps."""
    bounds = np.array([(s, e) for _, _, s, e in windows(trace)], dtype=float).reshape(-1, 2)
    window = sets.of(bounds[:, 0], bounds[:, 1])
    if trace.steps and len(window[0]):
        work = window_device_work(trace)
        last = float(np.nanmax(trace.end[work])) if len(work) else -np.inf
        if last > window[1][-1]:
            window = sets.union(window, (np.array([window[1][-1]]), np.array([last])))
    return window


def _account(trace: Trace) -> WindowAccount:
    window = window_set(trace)
    device = sources.device(trace)
    on_cpu = not bool(trace.device_work.any()) and bool(len(device[0]))
    own = sources.profiler(trace, window)
    once = sources.one_time(trace)
    # the precedence order of the classes; the waits are one layer, split below
    order = ("device", "profiler", "one_time", "data", "waits", "dispatch", "python")
    layers = [
        device,
        sets.union(*own.values()),
        sets.union(*once.values()),
        sources.events_set(trace, sources.data_events(trace)),
        sources.events_set(trace, sources.wait_events(trace)),
        sources.dispatch(trace),
        sources.python(trace, window, own),
    ]
    painted = sets.paint(window, layers)
    parts: dict[str, Set] = dict(zip(order, painted, strict=False))
    parts["untraced"] = painted[-1]
    # a wait's stretches with every stream idle: its own cost up to EXTERNAL_MIN_US, longer
    # ones wait on something outside the trace
    blocked = parts.pop("waits")
    long = (blocked[1] - blocked[0]) > EXTERNAL_MIN_US
    parts["external"] = (blocked[0][long], blocked[1][long])
    parts["sync_stall"] = (blocked[0][~long], blocked[1][~long])
    parts = {cls: parts[cls] for cls in CLASSES}
    causes = {
        "profiler": _by_cause(parts["profiler"], own),
        "one_time": _by_cause(parts["one_time"], once),
    }
    steps = [
        StepAccount(n, s, e, {c: sets.length_within(parts[c], s, e) for c in CLASSES})
        for n, _, s, e in windows(trace)
    ]
    return WindowAccount(
        sets.length(window), parts, causes, {"profiler": own, "one_time": once}, on_cpu, steps
    )


def _by_cause(got: Set, by_cause: dict[str, Set]) -> dict[str, float]:
    """How the claimed time splits over its causes (the first cause listed wins an
    instant two causes share)."""
    out, left = {}, got
    for cause, time in by_cause.items():
        mine = sets.meet(left, time)
        out[cause] = sets.length(mine)
        left = sets.minus(left, mine)
    return out
