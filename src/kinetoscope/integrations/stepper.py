"""The profiler a training-framework callback drives.

A callback only knows "training began", "an optimizer step ended", "training
ended" and which rank it runs on. `ProfiledSteps` turns those into a
`kinetoscope.profile` session with the series' schedule on the chosen ranks
(others are untouched: no profiler, no files), and hands back the readings of
the cycles each step finished, for the callback to log in its framework's way.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

from ..capture.session import Artifacts, Profile
from .cycle import CycleReader, CycleResult, ExpectationFailed


class ProfiledSteps:
    def __init__(
        self,
        out: str | os.PathLike,
        schedule: tuple[int, int, int, int],
        *,
        explain: bool = True,
        expect: Iterable[str] | str | None = None,
        on_fail: str = "warn",
        ranks: Iterable[int] = (0,),
        echo: Callable[[str], None] | None = None,
        allow_unmeasured: bool = False,
        **options,
    ) -> None:
        self.out = out
        self.schedule = schedule
        self.ranks = frozenset(ranks)
        self.options = options
        # made now: a bad expression or on_fail fails before training starts
        reading = explain or expect
        self.reader = CycleReader(expect, on_fail, echo, allow_unmeasured) if reading else None
        self.profile: Profile | None = None
        self._finished: list[CycleResult] = []
        self._failure: ExpectationFailed | None = None

    @property
    def active(self) -> bool:
        return self.profile is not None

    def start(self, rank: int) -> bool:
        """Begin profiling if `rank` is one of ours; False (nothing done) otherwise."""
        if rank not in self.ranks or self.profile is not None:
            return False
        self.profile = Profile(self.out, self.schedule, after_cycle=self._read, **self.options)
        self.profile.__enter__()
        return True

    def step(self) -> list[CycleResult]:
        """One optimizer step ended: the readings of the cycles it finished (often none)."""
        if self.profile is None:
            return []
        self.profile.step()  # the cycle's reading runs in here, inside torch's transition
        if self._failure is not None:  # raised now that the profiler is in a steady state
            failure, self._failure = self._failure, None
            raise failure
        return self._take()

    def stop(self, failed: bool = False) -> list[CycleResult]:
        """Training ended: close the profiler (a cycle cut short by a failure is dropped)."""
        if self.profile is None:
            return []
        profile, self.profile = self.profile, None
        error = RuntimeError("training failed") if failed else None
        profile.__exit__(type(error) if error else None, error, None)
        return self._take()

    def _read(self, artifacts: Artifacts, _prof) -> None:
        if self.reader is None:
            return
        try:
            self._finished.append(self.reader(artifacts.trace))
        except ExpectationFailed as failure:  # never out of on_trace_ready: see handler.py
            self._failure = failure

    def _take(self) -> list[CycleResult]:
        done, self._finished = self._finished, []
        return done


class ProfilingCallback:
    """The part both framework callbacks share: the series' schedule, the ranks, what to
    read after each cycle, and the readings so far. A framework's callback class derives
    from this and its framework's base class, and says how a verdict line is shown
    (`echo`) and when steps begin, end and training stops."""

    def __init__(
        self,
        out: str | os.PathLike = "traces/run",
        wait: int = 1,
        warmup: int = 1,
        active: int = 3,
        repeat: int = 1,
        explain: bool = True,
        expect: Iterable[str] | str | None = None,
        on_fail: str = "warn",
        ranks: Iterable[int] = (0,),
        allow_unmeasured: bool = False,
        **profile_options,
    ) -> None:
        """`profile_options` go to `kinetoscope.profile` (`record_shapes`,
        `profile_memory`, `with_stack`, `gzip`, `device`, ...)."""
        self.steps = ProfiledSteps(
            out,
            (wait, warmup, active, repeat),
            explain=explain,
            expect=expect,
            on_fail=on_fail,
            ranks=ranks,
            echo=self.echo,
            allow_unmeasured=allow_unmeasured,
            **profile_options,
        )
        self.results: list[CycleResult] = []

    def echo(self, line: str) -> None:
        print(line, flush=True)
