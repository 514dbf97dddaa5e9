"""The step clock of one trial: warm up, time blocks of steps, then profile a few.

It is driven by step boundaries only (a workload's loop or a script's
`optimizer.step()`), so the same clock serves both. Phases:

1. warm-up: the first `warmup` steps (at least one) run untimed (allocator,
   caches, DataLoader workers filling their queues, compilation: torch.compile
   compiles on its first call, so that call, seconds long, is never timed);
2. timing: `blocks` blocks, with the device synchronised at each block
   boundary only. Queued device work is then counted in the block that queued
   it, while the host stays free to run ahead inside a block as it does in the
   real program (a sync per step would remove the overlap an overhead-bound
   program depends on). Each block's mean step time is one sample; the spread
   between blocks is the noise the decision uses. A block ends at the first
   step boundary once it holds at least `block_steps` steps and has lasted at
   least `min_block_s`: a block of a few microsecond steps is shorter than one
   scheduler time slice (Linux CFS slices run from a few ms up to 24 ms), so on
   a busy machine it either runs untouched or loses a whole slice to another
   process (or waits for a descheduled OpenMP thread), and its time is bimodal:
   a 64x64 matmul block of 90 us reads as 90 us or as several ms, and the
   median of ten such blocks can land on either mode ("150x", "0.00x"). A
   block many slices long shares the machine's load in proportion, the same
   way for every block, so block medians compare. Ending a block by time needs
   no estimate of the step time, which the warm-up steps (first calls,
   thread-pool start) would get wrong. How long the process's threads were
   runnable but waiting for a CPU during the timed blocks (Linux
   `/proc/self/task/*/schedstat`, second field) is kept too: it measures
   the other processes' share of the machine directly;
3. profiling: `profile_steps` more steps under torch.profiler (a separate phase,
   so the profiler's own overhead never enters the timings), for the regime and
   the `diff`.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ..capture.machine import run_queue_seconds

#: the shortest timed block: about four of the longest CFS time slices (24 ms), so a
#: block shares the machine's load in proportion instead of all or nothing
MIN_BLOCK_S = 0.1


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
        min_block_s: float = MIN_BLOCK_S,
    ) -> None:
        self.warmup = max(warmup, 1)  # the first step is never timed
        self.blocks = blocks
        self.block_steps = block_steps  # fewest steps in a block
        self.min_block_s = min_block_s  # shortest block
        self.sync = sync
        self.make_profiler = profiler
        self.profile_steps = profile_steps if profiler is not None else 0
        self.steps = 0  # step boundaries seen
        self.marks: list[float] = []  # perf_counter at each block boundary
        self.sizes: list[int] = []  # steps in each completed block
        self.queued: list[float | None] = []  # run-queue seconds at each block boundary
        self.profiler = None
        self.profiled = 0
        self.on_timing_start: Callable[[], None] = lambda: None

    @property
    def timing_done(self) -> bool:
        return len(self.sizes) >= self.blocks

    @property
    def done(self) -> bool:
        return self.timing_done and self.profiled >= self.profile_steps

    def block_seconds(self) -> list[float]:
        """Mean seconds per step of each completed block."""
        return [
            (b - a) / n for a, b, n in zip(self.marks, self.marks[1:], self.sizes, strict=False)
        ]

    def run_queue_share(self) -> float | None:
        """Share of the timed wall time the threads spent waiting for a CPU (None where
        unknown), summed over threads, so it can exceed 1 with several waiting at once."""
        if len(self.queued) < 2 or None in (self.queued[0], self.queued[-1]):
            return None
        wall = self.marks[len(self.queued) - 1] - self.marks[0]
        return (self.queued[-1] - self.queued[0]) / wall if wall > 0 else None

    def _mark(self) -> None:
        self.sync()
        self.marks.append(time.perf_counter())
        self.queued.append(run_queue_seconds())

    def on_step(self) -> None:
        """Called after each step; advances the phases."""
        self.steps += 1
        if self.steps == self.warmup:
            self._mark()
            self.on_timing_start()
            return
        if self.steps < self.warmup:
            return
        if not self.timing_done:
            held = self.steps - self.warmup - sum(self.sizes)
            if held >= self.block_steps and time.perf_counter() - self.marks[-1] >= (
                self.min_block_s
            ):
                self._mark()
                self.sizes.append(held)
                if self.timing_done and self.profile_steps:
                    self.profiler = self.make_profiler()
                    self.profiler.__enter__()
            return
        if self.profiler is not None:
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
