"""What a slice keeps, decided in a first pass that holds no event text.

The first pass reads every event's few deciding fields (`columns.py`) and keeps
only: the step windows, the trace start, and per launch, device event and flow
event a few numbers (correlation id, times, flow key), about 20 bytes each.
From those it fixes the time window, the launches inside it (whose device
events are kept even when they run later, as a GPU runs behind its host), and
the flows whose both ends survive. The second pass (`write.py`) then decides
each event from `Plan.keep` alone.

Rules, from what the runtime and the profiler record:
- metadata events (`ph: M`: process and thread names, sort order) are kept;
- a device event (kernel, memcpy, memset, sync) that carries a correlation id
  of a launch in the trace is kept exactly when that launch is;
- a `ProfilerStep#N` event is kept when N is asked for (`--steps`), so the
  slice holds exactly those steps;
- any other event is kept when its span overlaps the window (an enclosing
  annotation that starts earlier stays, whole, so the call tree is intact);
- a flow (`ph` s/t/f, grouped by category and id) is kept when it has a start
  and an end and every endpoint survives: for launch flows (`ac2g`, `async`,
  whose id is the correlation id) that is its launch and device event being
  kept, for others (`fwdbwd`) each endpoint lying in the window;
- categories in `--drop` are removed, and flows whose launch or device end was
  dropped go with them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from ..errors import UsageError
from .columns import DEVICE, DROPPED, FLOW, LAUNCH, METADATA, OTHER, Classifier, Columns
from .scan import Batch

_STEPS = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")
#: digits in a step number: the loader reads `ProfilerStep#N` as a step up to 18
#: digits (always int64), so a longer number can name no step in any trace
MAX_STEP_DIGITS = 18
#: missing step ranges a message names before it counts the rest
MAX_LISTED = 8
_TIME = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?\d+)?)\s*(us|ms|s)?\s*$")
_UNIT_US = {None: 1.0, "us": 1.0, "ms": 1e3, "s": 1e6}


@dataclass(frozen=True)
class Selection:
    """What to keep: steps first..last (inclusive), or a window in us from the trace
    start (either end None: open), minus the categories in `drop`."""

    steps: tuple[int, int] | None = None
    window: tuple[float | None, float | None] | None = None
    drop: frozenset[str] = frozenset()

    def describe(self) -> str:
        if self.steps is not None:
            first, last = self.steps
            return f"steps {first}-{last}" if last != first else f"step {first}"
        lo, hi = self.window or (None, None)
        start = _us(lo) if lo is not None else "start"
        return f"window {start}:{_us(hi) if hi is not None else 'end'}"


def parse_steps(text: str) -> tuple[int, int]:
    """'3-5' -> (3, 5); '4' -> (4, 4)."""
    m = _STEPS.match(text)
    if not m:
        raise UsageError(f"--steps {_short(text)}: expected N or FIRST-LAST, e.g. 3-5")
    numbers = [g.lstrip("0") for g in m.groups() if g is not None]
    if any(len(n) > MAX_STEP_DIGITS for n in numbers):
        raise UsageError(
            f"--steps {_short(text)}: a step number has at most {MAX_STEP_DIGITS} digits"
        )
    first, last = int(m.group(1)), int(m.group(2) or m.group(1))
    if last < first:
        raise UsageError(f"--steps {_short(text)}: the last step comes before the first")
    return first, last


def _short(text: str, keep: int = 40) -> str:
    """`text` as a message quotes it: repr, cut to `keep` characters."""
    return repr(text if len(text) <= keep else text[:keep] + "...")


def parse_window(text: str) -> tuple[float | None, float | None]:
    """'START:END' from the trace start, in us unless suffixed ms or s; an empty side
    is open ('2ms:' is from 2 ms to the end)."""
    if text.count(":") != 1:
        raise UsageError(f"--window {text!r}: expected START:END, e.g. 1500:4200 or 1.5ms:4.2ms")
    bounds: list[float | None] = []
    for part in text.split(":"):
        if not part.strip():
            bounds.append(None)
            continue
        m = _TIME.match(part)
        if not m:
            raise UsageError(f"--window {text!r}: {part.strip()!r} is not a time (us, ms or s)")
        bounds.append(float(m.group(1)) * _UNIT_US[m.group(2)])
    lo, hi = bounds
    if lo is not None and hi is not None and hi <= lo:
        raise UsageError(f"--window {text!r}: the end is not after the start")
    return lo, hi


@dataclass
class Plan:
    """The first pass's result: enough to decide every event in the second."""

    selection: Selection
    start: float  # trace start (min ts of timed events), what Perfetto shows as 0
    window: tuple[float, float]  # absolute us
    steps: list[int]  # the ProfilerStep numbers the slice holds
    kept_launches: np.ndarray  # sorted correlation ids
    all_launches: np.ndarray  # sorted correlation ids
    kept_flows: np.ndarray  # sorted flow keys
    events: int  # events in the input
    top: bytes  # the document outside traceEvents

    def keep(self, cols: Columns) -> np.ndarray:
        """Which events of a batch go into the slice."""
        lo, hi = self.window
        ts, end = cols.ts, cols.end
        overlaps = ((ts < hi) & (end > lo)) | ((end == ts) & (ts >= lo) & (ts <= hi)) | np.isnan(ts)
        keep = overlaps & ((cols.kind == OTHER) | (cols.kind == LAUNCH) | (cols.kind == DEVICE))
        linked = (cols.kind == DEVICE) & (cols.corr >= 0) & _member(cols.corr, self.all_launches)
        keep[linked] = _member(cols.corr[linked], self.kept_launches)
        keep |= cols.kind == METADATA
        flows = cols.kind == FLOW
        keep[flows] = _member(cols.flow_key[flows], self.kept_flows)
        if self.selection.steps is not None:
            stepped = cols.step >= 0
            first, last = self.selection.steps
            keep[stepped] = (cols.step[stepped] >= first) & (cols.step[stepped] <= last)
        return keep & (cols.kind != DROPPED)


@dataclass
class _Survey:
    """Accumulated over the first pass."""

    start: float = np.inf
    end: float = -np.inf
    events: int = 0
    steps: dict[int, tuple[float, float]] = field(default_factory=dict)
    launches: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=list)
    device_corr: list[np.ndarray] = field(default_factory=list)
    flows: list[tuple[np.ndarray, ...]] = field(default_factory=list)

    def add(self, cols: Columns) -> None:
        self.events += len(cols.kind)
        if cols.timed.any():
            self.start = min(self.start, float(cols.ts[cols.timed].min()))
            self.end = max(self.end, float(np.nanmax(cols.end[cols.timed])))
        for i in np.flatnonzero(cols.host_step).tolist():
            span = (float(cols.ts[i]), float(cols.end[i]))
            number = int(cols.step[i])
            if number not in self.steps or span[0] < self.steps[number][0]:
                self.steps[number] = span
        launch = (cols.kind == LAUNCH) & (cols.corr >= 0)
        if launch.any():
            self.launches.append((cols.corr[launch], cols.ts[launch], cols.end[launch]))
        device = (cols.kind == DEVICE) & (cols.corr >= 0)
        if device.any():
            self.device_corr.append(cols.corr[device])
        flow = cols.kind == FLOW
        if flow.any():
            self.flows.append(
                tuple(
                    column[flow]
                    for column in (
                        cols.flow_key,
                        cols.flow_phase,
                        cols.ts,
                        cols.launch_flow,
                        cols.corr,
                    )
                )
            )


def survey(batches: Iterable[Batch], classifier: Classifier, selection: Selection, top) -> Plan:
    """First pass: read every batch, then decide the window, launches and flows.
    `top` is called after the batches are exhausted and returns the top-level text."""
    acc = _Survey()
    for batch in batches:
        acc.add(classifier.columns(batch))
    if not np.isfinite(acc.start):
        raise UsageError("the trace has no timed events to slice")
    window, steps = _window(acc, selection)
    corr, ts, end = _joined(acc.launches, 3)
    in_window = ((ts < window[1]) & (end > window[0])) | (
        (end == ts) & (ts >= window[0]) & (ts <= window[1])
    )
    kept_launches = np.unique(corr[in_window])
    device = np.unique(np.concatenate(acc.device_corr)) if acc.device_corr else np.zeros(0, int)
    kept_flows = _kept_flows(acc.flows, window, np.intersect1d(kept_launches, device))
    return Plan(
        selection=selection,
        start=acc.start,
        window=window,
        steps=steps,
        kept_launches=kept_launches,
        all_launches=np.unique(corr),
        kept_flows=kept_flows,
        events=acc.events,
        top=top(),
    )


def _window(acc: _Survey, selection: Selection) -> tuple[tuple[float, float], list[int]]:
    if selection.steps is not None:
        first, last = selection.steps
        if not acc.steps:
            raise UsageError("the trace has no ProfilerStep#N events; use --window instead")
        have = sorted(acc.steps)
        asked = [n for n in have if first <= n <= last]
        if len(asked) < last - first + 1:  # counted, never listed: the range may be huge
            gaps = _gaps(first, last, asked)
            many = len(gaps) > 1 or gaps[0][0] != gaps[0][1]
            raise UsageError(
                f"step{'s' if many else ''} {_listed(gaps)} "
                f"not in the trace (it has steps {_listed(_runs(have))})"
            )
        lo = min(acc.steps[n][0] for n in asked)
        hi = max(acc.steps[n][1] for n in asked)
        return (lo, hi), asked
    rel_lo, rel_hi = selection.window or (None, None)
    lo = acc.start + rel_lo if rel_lo is not None else -np.inf
    hi = acc.start + rel_hi if rel_hi is not None else np.inf
    if lo > acc.end:
        raise UsageError(
            f"the window starts after the trace ends ({_us(acc.end - acc.start)} from its start)"
        )
    steps = sorted(n for n, (s, e) in acc.steps.items() if s < hi and e > lo)
    return (lo, hi), steps


def _kept_flows(flows, window, kept_ends: np.ndarray) -> np.ndarray:
    """Keys of the flows with a start, an end, and every endpoint kept."""
    if not flows:
        return np.zeros(0, np.int64)
    key, phase, ts, launch_flow, corr = _joined(flows, 5)
    lo, hi = window
    endpoint_ok = np.where(launch_flow, _member(corr, kept_ends), (ts >= lo) & (ts <= hi))
    keys, group = np.unique(key, return_inverse=True)
    has_start = np.bincount(group, weights=phase == 1, minlength=len(keys)) > 0
    has_end = np.bincount(group, weights=phase == 2, minlength=len(keys)) > 0
    all_ok = np.bincount(group, weights=~endpoint_ok, minlength=len(keys)) == 0
    return keys[has_start & has_end & all_ok]


def _joined(parts: list[tuple[np.ndarray, ...]], width: int) -> tuple[np.ndarray, ...]:
    if not parts:
        return tuple(np.zeros(0) for _ in range(width))
    return tuple(np.concatenate(column) for column in zip(*parts, strict=True))


def _member(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """`np.isin` for a sorted unique `sorted_set` (binary search, no temporary sort)."""
    if not len(sorted_set):
        return np.zeros(len(values), bool)
    at = np.searchsorted(sorted_set, values).clip(0, len(sorted_set) - 1)
    return sorted_set[at] == values


def _runs(numbers: list[int]) -> list[tuple[int, int]]:
    """Sorted distinct numbers as (first, last) runs of consecutive ones."""
    runs: list[tuple[int, int]] = []
    for n in numbers:
        if runs and n == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], n)
        else:
            runs.append((n, n))
    return runs


def _gaps(first: int, last: int, present: list[int]) -> list[tuple[int, int]]:
    """The runs of first..last missing from sorted `present` (all inside it): at most
    one more than `present` holds, however long the range."""
    gaps, at = [], first
    for n in present:
        if n > at:
            gaps.append((at, n - 1))
        at = n + 1
    if at <= last:
        gaps.append((at, last))
    return gaps


def _listed(runs: list[tuple[int, int]]) -> str:
    """`3-4, 11-12`: the first `MAX_LISTED` runs, then how many more."""
    shown = [f"{a}-{b}" if b > a else str(a) for a, b in runs[:MAX_LISTED]]
    if len(runs) > MAX_LISTED:
        shown.append(f"and {len(runs) - MAX_LISTED} more ranges")
    return ", ".join(shown)


def _us(value: float) -> str:
    return f"{value / 1e3:.3f} ms" if abs(value) >= 1e3 else f"{value:.3f} us"
