"""The tune loop: baseline, diagnosis, single knobs, the combination, knobs on top.

1. The baseline runs as given and is diagnosed (its trace's verdict).
2. Each chosen knob value runs alone against the baseline (`single`).
3. Per knob the best value that beats the noise is a winner; two or more
   winners run together (`combination`), since gains need not add up (two
   knobs may relieve the same bottleneck, or compete for the same cores).
4. Knobs that only exist on top of others (`prefetch_factor` needs workers) run
   on top of the winners and are judged against them (`on top`).

Every judged trial runs between two runs of its reference (the baseline, or
the winners it is tried on top of): baseline, trial, baseline, trial,
baseline ... A run of the reference right before serves as the next trial's
"before" too, so n single trials cost n + 1 baseline runs. `decide.judge`
accepts a trial only against both neighbours and calls a disagreement that
the reference's own drift explains a measurement fault. The repeat runs are
timed only (not profiled), and count against `--time`, not `--trials`.

The best configuration is the accepted trial with the largest speed-up over the
baseline. A failed trial is recorded and the loop goes on; the budget
(`trials`, `seconds`) stops it early; Ctrl-C ends it with what has finished.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..errors import UsageError
from .decide import RULE, Waited, judge, load_fault, speed_up, spread
from .knob import env_name
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

    @property
    def rule(self) -> str:
        """The rule every judged trial is accepted by (`decide.RULE`), in words."""
        return RULE


#: stages of the trials that are judged against a reference (the rest are reference runs)
JUDGED = ("single", "combination", "on top")
#: run-queue wait per timed second above which a run is said to have shared a busy machine
#: (one waiting thread-second in ten: the measurement is the machine's load as much as the
#: program's)
BUSY_SHARE = 0.1
#: stages of the repeat runs of a reference
REPEATS = ("baseline again", "reference again")

#: progress callback: (label of the trial starting or None when one finished, runs planned:
#: None until the baseline's verdict has chosen what to try)
Progress = Callable[[str | None, int | None], None]
#: the session's clock (`--time`, the count of runs that still fit); a test turns it by hand
_now = time.monotonic


class _Runner:
    def __init__(self, session: Session, budget: Budget, timeout: float, force: bool,
                 progress: Progress) -> None:  # fmt: skip
        self.session = session
        self.budget = budget
        self.timeout = timeout
        self.force = force
        self.progress = progress
        self.started = _now()
        #: runs the plan makes (None until the baseline's verdict chose the knobs)
        self.planned: int | None = None

    def allowed(self, label: str, runs: int) -> bool:
        """Whether a judged trial may start: `--trials` counts judged trials; `--time` must
        leave room for its `runs` runs (the trial and its reference's runs around it)."""
        s, b = self.session, self.budget
        done = sum(1 for t in s.trials if t.stage in JUDGED)
        if b.trials is not None and done >= b.trials:
            s.not_run.append((label, f"--trials {b.trials} reached"))
            return False
        longest = max((t.wall_s for t in s.trials), default=0.0)
        if b.seconds is not None and _now() - self.started + runs * longest > b.seconds:
            s.not_run.append((label, f"--time {b.seconds:g} s would be exceeded"))
            return False
        return True

    def planned_now(self, starting: bool = False) -> int | None:
        """The runs this session will make, as far as it can tell now: the plan, cut to
        what `--trials` leaves (a judged trial and its reference's run after it) and to
        what fits in what `--time` leaves at the pace so far; at least the runs done and
        the one `starting`. None before the plan exists."""
        if self.planned is None:
            return None
        s, b = self.session, self.budget
        done = len(s.trials)
        left = max(self.planned - done, 0)
        if b.trials is not None:
            judged = sum(1 for t in s.trials if t.stage in JUDGED)
            after = int(bool(s.trials) and s.trials[-1].stage in JUDGED)  # its reference's run
            left = min(left, 2 * max(b.trials - judged, 0) + after)
        if b.seconds is not None and done:
            elapsed = _now() - self.started
            left = min(left, max(int((b.seconds - elapsed) / (elapsed / done)), 0))
        return done + max(left, int(starting))

    def run(self, label: str, setting: dict, stage: str, reference: Trial | None) -> Trial:
        s = self.session
        trial = Trial(len(s.trials), label, setting, stage, reference and reference.label)
        self.progress(label, self.planned_now(starting=True))
        run_trial(s.target, trial, s.timing, s.folder, self.timeout, self.force,
                  profile=stage not in REPEATS)  # fmt: skip
        s.trials.append(trial)
        self.progress(None, self.planned_now())
        return trial

    def _repeat(self, reference: Trial) -> Trial:
        if reference.stage == "baseline" or not reference.setting:
            return self.run("baseline again", {}, "baseline again", reference)
        return self.run(f"{reference.label} again", reference.setting, "reference again",
                        reference)  # fmt: skip

    def _latest(self, setting: dict) -> Trial | None:
        """The last finished run, when it ran `setting` (a reference run right before)."""
        ok = [t for t in self.session.trials if t.ok]
        return ok[-1] if ok and ok[-1].setting == setting else None

    def judged(self, label: str, setting: dict, stage: str, reference: Trial) -> Trial | None:
        """Run a trial between two runs of `reference` and judge it against both."""
        before = self._latest(reference.setting)
        if not self.allowed(label, 2 if before is not None else 3):
            return None
        before = before or self._repeat(reference)
        if not before.ok:
            self.session.not_run.append((label, f"its reference failed: {before.error}"))
            return None
        trial = self.run(label, setting, stage, reference)
        if not trial.ok:
            return trial
        self._judge(trial, before, None)  # stands if the run after never finishes
        after = self._repeat(reference)
        self._judge(trial, before, after if after.ok else None)
        return trial

    def _judge(self, trial: Trial, before: Trial, after: Trial | None) -> None:
        j = judge(before.throughput(), trial.throughput(), after and after.throughput())
        if j.accepted:
            refs = [_waited(t) for t in (before, after) if t is not None]
            fault = load_fault(refs, _waited(trial))
            if fault:
                j = replace(j, accepted=False, fault=fault)
        trial.bracket = (before.index,) + ((after.index,) if after else ())
        trial.judgement, trial.speed, trial.accepted = j, j.speed, j.accepted
        if not before.setting:  # the reference is the baseline
            trial.speed_vs_baseline = j.speed
        else:  # tried on top of others: against every baseline run
            base = [x for t in self.session.trials if t.ok and not t.setting
                    for x in t.throughput()]  # fmt: skip
            trial.speed_vs_baseline = speed_up(base, trial.throughput())


def _waited(t: Trial) -> Waited:
    step = spread(t.block_seconds).median
    return Waited(f"{t.label} (#{t.index})", step, t.run_queue_share)


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
    session.seconds = _now() - runner.started
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
    values = sum(len(p.values) for p in session.plans)
    runner.planned = 1 + 2 * values + 2
    for plan in singles:
        for value in plan.values:
            runner.judged(label_of({plan.name: value}), {plan.name: value}, "single", base)
    winners = _winners(session, singles)
    reference = base
    if len(winners) >= 2:
        setting = {k: v for w in winners for k, v in w.setting.items()}
        combo = runner.judged(label_of(setting), setting, "combination", base)
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
            runner.judged(label_of(setting), setting, "on top", reference)
    _say_drift_and_faults(session)


def _say_drift_and_faults(session: Session) -> None:
    """One note on how far the baseline's runs moved, one per measurement fault."""
    runs = [t for t in session.trials if t.ok and not t.setting]
    if len(runs) >= 2:
        first = runs[0].throughput()
        ratios = [speed_up(first, t.throughput()).ratio for t in runs[1:]]
        span = f"{min(ratios):.3f}x" + (
            f"-{max(ratios):.3f}x" if max(ratios) != min(ratios) else ""
        )
        session.notes.append(
            f"the baseline ran {len(runs)} times, between the trials: at {span} its "
            "first throughput"
        )
    for t in session.trials:
        if t.judgement is not None and t.judgement.fault:
            session.notes.append(f"{t.label}: {t.judgement.fault}")
    busy = [t for t in session.trials if (t.run_queue_share or 0) >= BUSY_SHARE]
    if busy:
        worst = max(busy, key=lambda t: t.run_queue_share)
        session.notes.append(
            f"the machine was busy: in {len(busy)} of {len(session.trials)} runs the trial's "
            f"threads waited for a CPU for more than {BUSY_SHARE:.0%} of the timed time (up "
            f"to {worst.run_queue_share:.0%}, {worst.label}; Linux schedstat): more threads "
            "were runnable than there were cores, from other programs or from the run's own "
            "DataLoader workers and their threads, so timings carry that load; decisions "
            "hold only against the reference runs around each trial"
        )


def _user_plans(session: Session, base: Trial, knobs: list[tuple[str, list[str]]]) -> list[Plan]:
    """`--knob` values, typed as the workload's option (or as written, for a script)."""
    plans = []
    for name, texts in knobs:
        if session.target.kind == "workload":
            values = tuple(workload_value(name, v, _base(session, base)) for v in texts)
            values = _values_that_change_something(session, name, values, _base(session, base))
        else:
            values = tuple(literal(v) for v in texts)
        if values:
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


def _values_that_change_something(session: Session, name: str, values: tuple, now: dict):
    """The `--knob` values whose trial would not rerun the baseline. A value the baseline
    already runs with (dtype=bf16 where the workload's GPU default is bf16), and TF32 on a
    baseline not in fp32 (TF32 changes only fp32 matmuls), are skipped and said: their
    trial's "speed-up" would measure noise alone."""
    kept = []
    for value in values:
        label = label_of({name: value})
        if value == now.get(name):
            session.skipped.append((label, f"the baseline already runs {label}"))
        elif name == "tf32" and value and now.get("dtype") != "fp32":
            why = f"the baseline runs {now.get('dtype')}: TF32 changes only fp32 matmuls"
            session.skipped.append((label, why))
        else:
            kept.append(value)
    return tuple(kept)


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
        if t.accepted and t.stage in JUDGED and t.speed_vs_baseline.beats_noise
    ]  # fmt: skip
    return max(good, key=lambda t: t.speed_vs_baseline.ratio).label if good else None
