"""The step clock of one trial: warm up, time blocks of steps, then profile a few.

It is driven by step boundaries only (a workload's loop or a script's
`optimizer.step()`), so the same clock serves both. Phases:

1. warm-up: the first `warmup` steps run untimed (allocator, caches, DataLoader
   workers filling their queues, compilation);
2. timing: `blocks` blocks of `block_steps` steps each, with the device
   synchronised at each block boundary only. Queued device work is then counted
   in the block that queued it, while the host stays free to run ahead inside a
   block as it does in the real program (a sync per step would remove the
   overlap an overhead-bound program depends on). Each block's mean step time is
   one sample; the spread between blocks is the noise the decision uses;
3. profiling: `profile_steps` more steps under torch.profiler (a separate phase,
   so the profiler's own overhead never enters the timings), for the regime and
   the `diff`.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class TrialDone(BaseException):
    """Raised out of a script's step once everything is measured: the rest of its run
    would cost time and tell nothing. A BaseException, so `except Exception` in the
    script does not swallow it."""


class StepClock:
    def __init__(
        self,
        warmup: int,
        blocks: int,
        block_steps: int,
        sync: Callable[[], None],
        profiler: Callable[[], object] | None = None,
        profile_steps: int = 0,
    ) -> None:
        self.warmup = warmup
        self.blocks = blocks
        self.block_steps = block_steps
        self.sync = sync
        self.make_profiler = profiler
        self.profile_steps = profile_steps if profiler is not None else 0
        self.steps = 0  # step boundaries seen
        self.marks: list[float] = []  # perf_counter at each block boundary
        self.profiler = None
        self.profiled = 0
        self.on_timing_start: Callable[[], None] = lambda: None

    @property
    def timed_steps(self) -> int:
        return self.blocks * self.block_steps

    @property
    def done(self) -> bool:
        return self.steps >= self.warmup + self.timed_steps and self.profiled >= self.profile_steps

    def block_seconds(self) -> list[float]:
        """Mean seconds per step of each completed block."""
        return [
            (b - a) / self.block_steps for a, b in zip(self.marks, self.marks[1:], strict=False)
        ]

    def on_step(self) -> None:
        """Called after each step; advances the phases."""
        self.steps += 1
        timing_end = self.warmup + self.timed_steps
        in_timing = self.warmup <= self.steps <= timing_end
        if in_timing and (self.steps - self.warmup) % self.block_steps == 0:
            self.sync()
            self.marks.append(time.perf_counter())
            if self.steps == self.warmup:
                self.on_timing_start()
        if self.steps == timing_end and self.profile_steps:
            self.profiler = self.make_profiler()
            self.profiler.__enter__()
        elif self.steps > timing_end and self.profiler is not None:
            self.profiler.step()
            self.profiled += 1
            if self.profiled >= self.profile_steps:
                self.close()

    def close(self, failed: bool = False) -> None:
        """Stop the profiler if it runs (a cut-short cycle is not written when `failed`)."""
        profiler, self.profiler = self.profiler, None
        if profiler is not None:
            error = (RuntimeError, RuntimeError("trial stopped"), None) if failed else (None,) * 3
            profiler.__exit__(*error)
