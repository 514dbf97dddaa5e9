"""`on_trace_ready=kinetoscope.trace_handler("traces/run")`: the plain loop's handler.

It writes the artifacts as `capture.session.TraceHandler` does and then, with
`explain=True` (the default), reads each cycle's trace back and prints one verdict
line; `expect=["kernels_per_step <= 50"]` checks `check` expressions on every cycle
and warns (`on_fail="warn"`) or raises `ExpectationFailed` from the loop's next
`prof.step()` (`on_fail="raise"`) when one fails, a guard for a long run.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

from ..capture.session import Artifacts, TraceHandler
from .cycle import CycleReader, ExpectationFailed


def trace_handler(
    dir_name: str | os.PathLike,
    worker_name: str | None = None,
    gzip: bool = False,
    meta: dict | None = None,
    *,
    explain: bool = True,
    expect: Iterable[str] | str | None = None,
    on_fail: str = "warn",
    echo: Callable[[str], None] | None = None,
    allow_unmeasured: bool = False,
) -> TraceHandler:
    """A `torch.profiler` `on_trace_ready` that writes kinetoscope's artifacts and, per
    cycle, prints the verdict (`explain`) and checks `expect` (which implies reading)."""
    reader = CycleReader(expect, on_fail, echo, allow_unmeasured) if (explain or expect) else None
    return TraceHandler(
        dir_name,
        worker_name=worker_name,
        gzip=gzip,
        meta=meta,
        after_cycle=None if reader is None else _reading(reader),
    )


def _reading(reader: CycleReader) -> Callable[[Artifacts, object], None]:
    def after(artifacts: Artifacts, prof) -> None:
        try:
            reader(artifacts.trace)
        except ExpectationFailed as failure:
            _raise_at_next_step(prof, failure)

    return after


def _raise_at_next_step(prof, failure: ExpectationFailed) -> None:
    """Raise `failure` from the loop's next `prof.step()`, not from here.

    An exception out of `on_trace_ready` leaves torch.profiler between two states
    (the trace stopped, the next one not prepared), and leaving the `with` block
    then stops it twice: torch 2.13 dies with a segmentation fault. `step()` asks
    the schedule for the next action before it changes any state, so a schedule
    that raises is the safe place: the loop stops one step later, cleanly.
    """
    schedule = prof.schedule

    def raising(step: int):
        prof.schedule = schedule
        raise failure

    prof.schedule = raising
