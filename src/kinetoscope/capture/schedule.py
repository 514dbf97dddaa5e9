"""The profiler schedule kinetoscope uses everywhere: wait, warm-up, active, repeat.

Default 1/1/3/1 as in the series: step 0 runs unprofiled, step 1 warms the
profiler up, steps 2-4 are recorded (`ProfilerStep#2..#4`). The first step
after the profiler starts pays its own set-up costs, which is why it is skipped.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ..errors import UsageError


@dataclass(frozen=True)
class Schedule:
    wait: int = 1
    warmup: int = 1
    active: int = 3
    repeat: int = 1

    def __post_init__(self) -> None:
        if min(self.wait, self.warmup, self.repeat) < 0 or self.active < 1:
            raise UsageError(
                f"invalid schedule {self.describe()}: wait/warmup/repeat must be >= 0 "
                "and active >= 1"
            )

    @classmethod
    def of(cls, steps: int | tuple | Schedule | None) -> Schedule:
        """From an active-step count, a (wait, warmup, active[, repeat]) tuple, or a Schedule."""
        if steps is None:
            return cls()
        if isinstance(steps, Schedule):
            return steps
        if isinstance(steps, int):
            return cls(active=steps)
        if isinstance(steps, tuple) and len(steps) in (3, 4):
            return cls(*steps)
        raise UsageError(
            f"steps={steps!r}: give the active step count or (wait, warmup, active[, repeat])"
        )

    @property
    def cycle(self) -> int:
        return self.wait + self.warmup + self.active

    @property
    def total_steps(self) -> int:
        """Steps a loop must run so every cycle completes (repeat=0 means forever: one cycle)."""
        return self.cycle * max(self.repeat, 1)

    def active_steps(self) -> list[int]:
        """Step numbers recorded in the traces (the N of ProfilerStep#N)."""
        return [
            c * self.cycle + self.wait + self.warmup + i
            for c in range(max(self.repeat, 1))
            for i in range(self.active)
        ]

    def describe(self) -> str:
        return f"wait={self.wait} warmup={self.warmup} active={self.active} repeat={self.repeat}"

    def to_torch(self, torch):
        return torch.profiler.schedule(
            wait=self.wait, warmup=self.warmup, active=self.active, repeat=self.repeat
        )

    def as_meta(self) -> dict:
        return asdict(self)
