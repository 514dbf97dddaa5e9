"""Where each complete (`X`) slice goes so that Perfetto imports it whole.

Perfetto's JSON importer keeps one stack of open slices per thread track (pid, tid):
a slice must nest inside the one open below it or start after it ends. A slice that
overlaps another partially is counted in `slice_drop_overlapping_complete_event` and
dropped, or nested wrongly (Perfetto FAQ "Why are overlapping events in JSON traces not
displayed correctly?", google/perfetto#4280, #6277). Kineto writes such slices: a
`gpu_user_annotation` crossing a kernel's edge on a stream, kernels of a stream whose
clock skews, `ProfilerStep` and `record_function` spans against Python frames under
`with_stack`.

So each track is laid out like Perfetto reads it: slices in start order, longer first at
a tie; each goes on the first lane (the track itself, then sub-tracks) where it nests
or follows, else on a new lane. Times are compared in integer nanoseconds rounded the way
Perfetto converts them (`to_ns`, after json_utils.h `CoerceToTs`), so a slice
that ends a rounding step past its parent here does there too. One pass over the sorted
slices; each lane is a stack, and a track rarely needs more than a few lanes.
"""

from __future__ import annotations

import numpy as np


def to_ns(us: np.ndarray, exact: np.ndarray | None = None) -> np.ndarray:
    """Microseconds to integer nanoseconds as Perfetto converts them: a JSON integer
    exactly (`value * 1000`, int64), a number with a fraction or exponent through a
    double, rounded half away from zero (`std::llround(value * 1000.0)`). Epoch
    microseconds (1.7e15) times 1000 pass 2^53, so the double path is off by up to 128 ns,
    and Perfetto nests by those values: this reads them the same way. `exact`: which values
    were JSON integers (None: none were)."""
    us = np.asarray(us, np.float64)
    whole = np.zeros(us.shape, bool) if exact is None else np.asarray(exact, bool)
    whole = whole & np.isfinite(us)
    scaled = np.where(whole, 0.0, us) * 1000.0
    rounded = (np.sign(scaled) * np.floor(np.abs(scaled) + 0.5)).astype(np.int64)
    return np.where(whole, np.where(whole, us, 0.0).astype(np.int64) * 1000, rounded)


def order(start: np.ndarray, dur: np.ndarray, later: np.ndarray | None = None) -> np.ndarray:
    """Indices in the order Perfetto opens slices: by start, the longer first at a tie
    (an enclosing slice before what it encloses), then by `later` (0 before 1), then file
    order."""
    tie = later if later is not None else np.zeros(len(start), np.int8)
    return np.lexsort((np.arange(len(start)), tie, -dur, start))  # the last key sorts first


def lanes(start: np.ndarray, dur: np.ndarray) -> np.ndarray:
    """The lane (0: the track itself) of each slice of one track, so that on every lane
    any two slices either nest or do not overlap. `start`, `dur` in integer ns."""
    n = len(start)
    lane = np.zeros(n, np.int64)
    if n < 2:
        return lane
    end = start + np.maximum(dur, 0)
    stacks: list[list[int]] = []  # per lane, the ends of the slices open on it
    for i in order(start, end - start).tolist():
        s, e = int(start[i]), int(end[i])
        for k, stack in enumerate(stacks):
            while stack and stack[-1] <= s:
                stack.pop()
            if not stack or e <= stack[-1]:
                stack.append(e)
                lane[i] = k
                break
        else:
            stacks.append([e])
            lane[i] = len(stacks) - 1
    return lane


def partial_overlaps(start: np.ndarray, dur: np.ndarray) -> int:
    """How many slices of one track overlap an open one partially (0: Perfetto keeps
    them all): the check the tests make on every track of the output."""
    end = start + np.maximum(dur, 0)
    stack: list[int] = []
    bad = 0
    for i in order(start, end - start).tolist():
        s, e = int(start[i]), int(end[i])
        while stack and stack[-1] <= s:
            stack.pop()
        if stack and e > stack[-1]:
            bad += 1
            continue  # dropped, as Perfetto drops it
        stack.append(e)
    return bad
