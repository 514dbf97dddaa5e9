"""The tune loop: baseline, diagnosis, single knobs, the combination, knobs on top.

1. The baseline runs as given and is diagnosed (its trace's verdict).
2. Each chosen knob value runs alone against the baseline (`single`).
3. Per knob the best value that beats the noise is a winner; two or more
   winners run together (`combination`), since gains need not add up (two
   knobs may relieve the same bottleneck, or compete for the same cores).
4. Knobs that only exist on top of others (`prefetch_factor` needs workers) run
   on top of the winners and are judged against them (`on top`).
5. If the budget allows, the baseline runs again: how far the machine drifted
   during the session, which the per-trial intervals cannot see.

The best configuration is the accepted trial with the largest speed-up over the
baseline. A failed trial is recorded and the loop goes on; the budget
(`trials`, `seconds`) stops it early; Ctrl-C ends it with what has finished.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UsageError
from ..knob import env_name
from .decide import speed_up
from .knobs import Facts, Plan, choose, literal, workload_value
from .trials import Target, Timing, Trial, run_trial


@dataclass(frozen=True)
class Budget:
    trials: int | None = None  # trials after the baseline
    seconds: float | None = None  # wall-clock for the whole session


@dataclass
class Session:
    target: Target
    timing: Timing
    folder: Path
    plans: list[Plan] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (knob, why not tried)
    trials: list[Trial] = field(default_factory=list)
    not_run: list[tuple[str, str]] = field(default_factory=list)  # (label, why)
    best: str | None = None
    notes: list[str] = field(default_factory=list)
    interrupted: bool = False
    seconds: float = 0.0

    @property
    def baseline(self) -> Trial | None:
        return self.trials[0] if self.trials else None

    def trial(self, label: str) -> Trial | None:
        return next((t for t in self.trials if t.label == label), None)


#: progress callback: (label of the trial starting or None when one finished, trials planned)
Progress = Callable[[str | None, int], None]


class _Runner:
    def __init__(self, session: Session, budget: Budget, timeout: float, force: bool,
                 progress: Progress) -> None:  # fmt: skip
        self.session = session
        self.budget = budget
        self.timeout = timeout
        self.force = force
        self.progress = progress
        self.started = time.monotonic()
        self.planned = 1

    def allowed(self, label: str) -> bool:
        s, b = self.session, self.budget
        run = len(s.trials) - 1
        if b.trials is not None and run >= b.trials:
            s.not_run.append((label, f"--trials {b.trials} reached"))
            return False
        longest = max((t.wall_s for t in s.trials), default=0.0)
        if b.seconds is not None and time.monotonic() - self.started + longest > b.seconds:
            s.not_run.append((label, f"--time {b.seconds:g} s would be exceeded"))
            return False
        return True

    def run(self, label: str, setting: dict, stage: str, reference: Trial | None) -> Trial | None:
        s = self.session
        if s.trials and not self.allowed(label):
            return None
        trial = Trial(len(s.trials), label, setting, stage, reference and reference.label)
        self.progress(label, self.planned)
        run_trial(s.target, trial, s.timing, s.folder, self.timeout, self.force)
        s.trials.append(trial)
        self.progress(None, self.planned)
        base = s.baseline
        if trial.ok and base is not None and base.ok and trial is not base:
            trial.speed_vs_baseline = speed_up(base.throughput(), trial.throughput())
            ref = reference or base
            trial.speed = speed_up(ref.throughput(), trial.throughput())
            trial.accepted = trial.speed.beats_noise if stage != "baseline again" else None
        return trial


def label_of(setting: dict) -> str:
    return ", ".join(f"{k}={_show(v)}" for k, v in setting.items()) or "baseline"


def _show(value) -> str:
    if value is None:
        return "off"
    return str(value).lower() if isinstance(value, bool) else str(value)


def run_session(
    session: Session,
    user_knobs: list[tuple[str, list[str]]],
    budget: Budget,
    timeout: float,
    force: bool = False,
    progress: Progress = lambda _label, _planned: None,
    memory_limit: float = 0.9,
) -> Session:
    """Run the whole loop into `session`; on Ctrl-C mark it interrupted and return what
    finished (re-raised when not even the baseline finished)."""
    runner = _Runner(session, budget, timeout, force, progress)
    try:
        _loop(session, runner, user_knobs, memory_limit)
    except KeyboardInterrupt:
        if not session.trials:
            raise
        session.interrupted = True
    session.best = _best(session)
    session.seconds = time.monotonic() - runner.started
    return session


def _loop(session: Session, runner: _Runner, user_knobs: list, memory_limit: float) -> None:
    base = runner.run("baseline", {}, "baseline", None)
    if not base.ok:
        raise UsageError(f"the baseline run failed: {base.error}")
    if user_knobs:
        session.plans = _user_plans(session, base, user_knobs)
    elif session.target.kind == "workload":
        session.plans, session.skipped = choose(_facts(base, memory_limit), _base(session, base))
    if not session.plans:
        session.notes.append("no knob to try for this verdict")
    singles = [p for p in session.plans if not p.on_top]
    runner.planned = 1 + sum(len(p.values) for p in session.plans) + 2
    for plan in singles:
        for value in plan.values:
            runner.run(label_of({plan.name: value}), {plan.name: value}, "single", base)
    winners = _winners(session, singles)
    reference = base
    if len(winners) >= 2:
        setting = {k: v for w in winners for k, v in w.setting.items()}
        combo = runner.run(label_of(setting), setting, "combination", base)
        reference = (
            combo
            if combo is not None and combo.ok and combo.accepted
            else max(winners, key=lambda t: t.speed.ratio)
        )
    elif winners:
        reference = winners[0]
        session.notes.append(f"one winner ({winners[0].label}): nothing to combine")
    for plan in [p for p in session.plans if p.on_top]:
        config = {**_base(session, base), **reference.setting}
        if config.get("num_workers", 1) == 0:
            session.plans.remove(plan)
            session.skipped.append((plan.name, "needs num_workers > 0 and no worker setting won"))
            continue
        for value in plan.values:
            setting = {**reference.setting, plan.name: value}
            runner.run(label_of(setting), setting, "on top", reference)
    again = runner.run("baseline again", {}, "baseline again", base)
    if again is not None and again.ok:
        drift = again.speed_vs_baseline
        session.notes.append(
            f"the baseline, run again at the end, ran at {drift.ratio:.3f}x its first "
            f"throughput (95% interval {drift.low:.3f}-{drift.high:.3f}): "
            + ("the machine drifted during the session; treat small gains with caution"
               if drift.beats_noise or drift.worse else "no drift beyond the noise")
        )  # fmt: skip


def _user_plans(session: Session, base: Trial, knobs: list[tuple[str, list[str]]]) -> list[Plan]:
    """`--knob` values, typed as the workload's option (or as written, for a script)."""
    plans = []
    for name, texts in knobs:
        if session.target.kind == "workload":
            values = tuple(workload_value(name, v, _base(session, base)) for v in texts)
        else:
            values = tuple(literal(v) for v in texts)
        plans.append(Plan(name, values, "given with --knob"))
    if session.target.kind == "script" and not session.target.pass_as_arg:
        read = {env_name(n) for n in base.knobs_read}
        unread = [p.name for p in plans if env_name(p.name) not in read]
        if unread:
            session.notes.append(
                f"the script never called kinetoscope.knob() for {', '.join(unread)}: "
                "those trials run the baseline's code (use --pass-as-arg for arguments)"
            )
    return plans


def _facts(base: Trial, memory_limit: float) -> Facts:
    return Facts(
        regime=base.regime or "unknown",
        shares=base.shares,
        device_ratio=base.device_ratio or 0.0,
        gpu=base.device.get("type") == "cuda",
        backend=base.device.get("backend", "cpu"),
        cpus=len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        peak_memory=base.peak_memory,
        device_memory=base.device_memory,
        memory_limit=memory_limit,
    )


def _base(session: Session, base: Trial) -> dict:
    """The baseline's effective workload settings (the knobs' current values)."""
    run = {"compile": None, "dtype": "fp32", "tf32": False}
    return {**run, **session.target.base, **base.params}


def _winners(session: Session, singles: list[Plan]) -> list[Trial]:
    out = []
    for plan in singles:
        won = [
            t for t in session.trials
            if t.stage == "single" and set(t.setting) == {plan.name} and t.accepted
        ]  # fmt: skip
        if won:
            out.append(max(won, key=lambda t: t.speed.ratio))
    return out


def _best(session: Session) -> str | None:
    good = [
        t for t in session.trials
        if t.accepted and t.stage != "baseline again" and t.speed_vs_baseline.beats_noise
    ]  # fmt: skip
    return max(good, key=lambda t: t.speed_vs_baseline.ratio).label if good else None
