"""Source lines: which line of the user's program the host was in at each instant.

A trace recorded with `with_stack=True` holds one `python_function` event per Python
call the profiler saw, named `file(line): function` (`train.py(42): step`), or
`<built-in method item of Tensor object at 0x...>` for a C function. The profiler
strips the interpreter's search path from file names (`torch/nn/modules/module.py`,
`typing.py`, `train.py`), and the line is the code object's first line for a call made
while it records (a function is one line: its `def`), the line then running for the
frames already on the stack when it started (`<module>`, the loop's function).

A *user* frame is one with a file and line that is not torch's, the standard
library's, kinetoscope's own profiling harness's or an installed package's
(`site-packages`/`dist-packages` left in a path the profiler did not strip): the line
a user can edit. At each instant on a thread,
the line is the innermost user frame open there (`all_frames` takes every frame,
built-ins too). The threads' timelines are joined into one, the thread that runs most
of the program's ops first (not the one with the most Python time: a background
thread blocked in a wait keeps its frame open all along): another thread's line
shows only where the first has none.

An event is attributed to the line open at its start on its own thread, else on the
joined timeline: the autograd engine's thread runs the backward pass with no Python
frame while the main thread waits in `loss.backward()`, the line that asked for it.
A device event is attributed to the line of the call that launched it.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass

import numpy as np

from ..trace import Cat, Trace

#: `file(line): function`, as the profiler's Python tracer names a frame.
_FRAME = re.compile(r"^(?P<file>.+)\((?P<line>\d+)\): (?P<function>.*)$")
#: A C function's frame: the object's address says nothing across runs.
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
#: Top-level packages of the framework itself (the profiler keeps their relative paths).
FRAMEWORK_PACKAGES = frozenset({"torch", "torchgen", "functorch"})
#: `kinetoscope profile`'s built-in workloads: the program it profiles; the rest of
#: kinetoscope (its profiling harness) is tooling.
_WORKLOADS = "kinetoscope/capture/workloads/"
#: Parts of a path that mark an installed package the profiler did not strip.
_INSTALLED = ("site-packages/", "dist-packages/")
#: How to record stacks, said where a trace has none.
#: short enough that "Source lines: " + it + "." fits the text report's 100 columns
RECORD_HINT = "no Python stacks: record with with_stack=True (`kinetoscope profile --with-stack`)"


@dataclass(frozen=True)
class Line:
    """One source line: a user frame's file, line and function."""

    file: str
    line: int | None  # None for a built-in (all frames only)
    function: str

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}" if self.line is not None else self.file

    @property
    def label(self) -> str:
        """`train.py:42 (step)`: how evidence and views name the line."""
        return f"{self.location} ({self.function})" if self.function else self.location


@dataclass(frozen=True)
class LineTimeline:
    """The innermost kept frame at each instant: disjoint pieces sorted by start."""

    lines: list[Line]
    #: per piece: start, end (us) and the line's position in `lines`
    start: np.ndarray
    end: np.ndarray
    line: np.ndarray
    #: the same, per host thread (lane id -> (start, end, line)) before joining
    per_lane: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]
    #: per line: how many frames (calls) the trace holds of it
    calls: np.ndarray
    #: whether the trace has python_function events at all
    has_stacks: bool


def parse_frame(name: str) -> Line | None:
    """The line a `python_function` name names; None for a name that is not a frame
    (`nn.Module: Linear_0`, a built-in)."""
    m = _FRAME.match(name)
    if m is None:
        return None
    return Line(m["file"], int(m["line"]), m["function"])


def is_user_file(file: str) -> bool:
    """Not torch's, the standard library's, an installed package's, nor frozen/generated
    code (`<frozen os>`, `<string>`)."""
    if file.startswith("<") or any(part in file for part in _INSTALLED):
        return False
    path = file.replace("\\", "/")
    if path.startswith("/"):  # not stripped: judge by the directories it lies in
        parts = path.split("/")
        if any(p in FRAMEWORK_PACKAGES for p in parts[:-1]):
            return False
        return not any(re.fullmatch(r"python\d+(\.\d+)?", p) for p in parts[:-1])
    if path.startswith("kinetoscope/"):  # the harness of `kinetoscope profile`, not its workloads
        return path.startswith(_WORKLOADS)
    top = path.split("/", 1)[0]
    top = top[:-3] if top.endswith(".py") else top
    return top not in FRAMEWORK_PACKAGES and top not in sys.stdlib_module_names


def _kept_line(name: str, all_frames: bool) -> Line | None:
    line = parse_frame(name)
    if line is not None:
        return line if all_frames or is_user_file(line.file) else None
    if all_frames and name.startswith("<built-in"):
        return Line(_ADDRESS.sub("", name), None, "")
    return None


def line_timeline(trace: Trace, all_frames: bool = False) -> LineTimeline:
    return trace.memo(_line_timeline, all_frames)


def _line_timeline(trace: Trace, all_frames: bool) -> LineTimeline:
    frames = np.flatnonzero(
        trace.mask(Cat.PYTHON)
        & (trace.lane_kind == 1)
        & ~trace.is_instant
        & ~np.isnan(trace.ts)
        & ~np.isnan(trace.end)
    )
    lines: list[Line] = []
    position: dict[Line, int] = {}
    line_of_name: dict[int, int] = {}  # name id -> line position, -1 when not kept
    for name_id in np.unique(trace.name_id[frames]).tolist():
        line = _kept_line(trace.names[name_id], all_frames)
        if line is not None and line not in position:
            position[line] = len(lines)
            lines.append(line)
        line_of_name[name_id] = position[line] if line is not None else -1
    table = np.full(len(trace.names) + 1, -1, dtype=np.int64)
    for name_id, pos in line_of_name.items():
        table[name_id] = pos
    ids = table[trace.name_id[frames]]
    kept = frames[ids >= 0]
    ids = ids[ids >= 0]
    calls = np.bincount(ids, minlength=len(lines)) if len(lines) else np.zeros(0, np.int64)
    per_lane = {}
    for lane in np.unique(trace.lane[kept]).tolist():
        mine = trace.lane[kept] == lane
        per_lane[lane] = _innermost(trace.ts[kept[mine]], trace.end[kept[mine]], ids[mine])
    order = list(per_lane)
    if len(order) > 1:  # the call tree's self times, only where threads compete
        work = _op_time_per_lane(trace)
        order.sort(key=lambda lane: -work.get(lane, 0.0))
    start, end, line = _join([per_lane[lane] for lane in order])
    return LineTimeline(lines, start, end, line, per_lane, calls, bool(len(frames)))


def _op_time_per_lane(trace: Trace) -> dict[int, float]:
    """Self time of the ops and runtime calls on each host thread: how much of the
    program's work the thread runs. A thread that only waits (a progress bar's or a
    logger's, blocked in `Event.wait` with its frame open all along) runs none."""
    busy = np.flatnonzero(trace.mask(Cat.CPU_OP, Cat.RUNTIME, Cat.DRIVER) & (trace.lane_kind == 1))
    totals = np.bincount(
        trace.lane[busy], weights=np.nan_to_num(trace.self_time[busy]), minlength=len(trace.lanes)
    )
    return {lane: float(t) for lane, t in enumerate(totals)}


def _innermost(
    starts: np.ndarray, ends: np.ndarray, ids: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One thread's frames (nested, as a stack is) as disjoint pieces, each given to the
    innermost frame open there. A child that outlives its parent (clock rounding) is cut
    at the parent's end."""
    order = np.lexsort((-ends, starts))
    out_s: list[float] = []
    out_e: list[float] = []
    out_i: list[int] = []

    def emit(a: float, b: float, i: int) -> None:
        if b > a:
            out_s.append(a)
            out_e.append(b)
            out_i.append(i)

    stack: list[tuple[float, int]] = []  # (end, line) of the open frames
    cursor = 0.0
    rows = zip(starts[order].tolist(), ends[order].tolist(), ids[order].tolist(), strict=True)
    for s, e, i in rows:
        while stack and stack[-1][0] <= s:
            end, line = stack.pop()
            emit(cursor, end, line)
            cursor = max(cursor, end)
        if stack:
            emit(cursor, s, stack[-1][1])
            e = min(e, stack[-1][0])
        stack.append((e, i))
        cursor = s
    while stack:
        end, line = stack.pop()
        emit(cursor, end, line)
        cursor = max(cursor, end)
    return np.array(out_s), np.array(out_e), np.array(out_i, dtype=np.int64)


def _join(
    lanes: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The threads' pieces as one timeline: at each instant the first thread (in `lanes`
    order) that has a line there."""
    if not lanes:
        return np.zeros(0), np.zeros(0), np.zeros(0, dtype=np.int64)
    points = np.unique(np.concatenate([np.concatenate((s, e)) for s, e, _ in lanes]))
    if len(points) < 2:
        return np.zeros(0), np.zeros(0), np.zeros(0, dtype=np.int64)
    lo, hi = points[:-1], points[1:]
    owner = np.full(len(lo), -1, dtype=np.int64)
    for s, e, ids in reversed(lanes):  # the first thread is written last and wins
        found = line_at(s, e, ids, lo)
        owner[found >= 0] = found[found >= 0]
    keep = owner >= 0
    return lo[keep], hi[keep], owner[keep]


def line_at(start: np.ndarray, end: np.ndarray, ids: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The line of the piece holding each instant of `t` (-1 where none does)."""
    if not len(start):
        return np.full(len(t), -1, dtype=np.int64)
    slot = np.searchsorted(start, t, side="right") - 1
    hit = slot >= 0
    hit[hit] = t[hit] < end[slot[hit]]
    return np.where(hit, ids[np.maximum(slot, 0)], -1)


def lines_of(trace: Trace, events: np.ndarray, all_frames: bool = False) -> np.ndarray:
    """The line (position in `line_timeline(...).lines`, -1 for none) of each event: a
    device event's launching call's; a host event's at its start on its own thread,
    else on the joined timeline."""
    timeline = line_timeline(trace, all_frames)
    events = np.asarray(events, dtype=np.int64)
    out = np.full(len(events), -1, dtype=np.int64)
    if not len(timeline.lines) or not len(events):
        return out
    launch = trace.launch_of[events]
    host = np.where((trace.lane_kind[events] == 2) & (launch >= 0), launch, events)
    t = trace.ts[host]
    lanes = trace.lane[host]
    for lane, (s, e, ids) in timeline.per_lane.items():
        mine = lanes == lane
        out[mine] = line_at(s, e, ids, t[mine])
    missing = out < 0
    out[missing] = line_at(timeline.start, timeline.end, timeline.line, t[missing])
    return out


def line_label(trace: Trace, index: int, all_frames: bool = False) -> str:
    """`train.py:42 (step)` for the event at `index`, "" where no line holds it."""
    pos = int(lines_of(trace, np.array([index]), all_frames)[0])
    return line_timeline(trace, all_frames).lines[pos].label if pos >= 0 else ""
