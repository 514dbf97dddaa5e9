"""Run one tune trial in a subprocess and read what it measured.

The parent never imports torch: it writes a spec, runs
`python -m kinetoscope.tune.trial_run SPEC` with a timeout, reads the result
file and the trial's trace (for the regime). A script's knob values reach it
through the environment (`kinetoscope.knob`) or, with `pass_as_arg`, as
`--name value` appended to its arguments (argparse keeps the last occurrence,
so a value the user's arguments already set is overridden, not duplicated in
meaning). A crash, an out-of-memory or a timeout is the trial's error, never
the session's.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import KinetoscopeError
from .clock import MIN_BLOCK_S
from .decide import Judgement, SpeedUp, Spread, spread
from .knob import env_name

#: knob names whose value is the number of samples in one step (throughput = it / step time)
BATCH_NAMES = ("batch_size", "batch")


@dataclass(frozen=True)
class Timing:
    warmup: int = 5
    blocks: int = 10
    block_steps: int = 5  # at least this many steps per block ...
    min_block_s: float = MIN_BLOCK_S  # ... and lasting at least this long (`clock`)


@dataclass
class Target:
    """What is tuned: a built-in workload or a script, and its fixed settings."""

    kind: str  # "workload" or "script"
    name: str  # workload name or script path
    base: dict[str, Any] = field(default_factory=dict)  # workload settings / script: {}
    device: str = "auto"
    args: list[str] = field(default_factory=list)  # a script's own arguments
    step_on: str | None = None
    pass_as_arg: bool = False
    samples_per_step: float | None = None  # given by the user


@dataclass
class Trial:
    index: int
    label: str
    setting: dict[str, Any]  # knob -> value, what differs from the baseline
    stage: str  # baseline, single, combination, on top, baseline again, reference again
    reference: str | None = None  # label of the trial it is compared with
    block_seconds: list[float] = field(default_factory=list)
    block_sizes: list[int] = field(default_factory=list)  # steps in each timed block
    #: seconds the trial's threads waited for a CPU per second timed (`clock`; None: unknown)
    run_queue_share: float | None = None
    #: runs of the reference measured right before and right after this one (indices)
    bracket: tuple[int, ...] = ()
    samples_per_step: float | None = None
    error: str | None = None
    oom: bool = False
    trace: str | None = None
    table: str | None = None
    regime: str | None = None
    shares: dict[str, float] = field(default_factory=dict)
    device_ratio: float | None = None
    peak_memory: int | None = None
    device_memory: int | None = None
    knobs_read: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)  # a workload's effective settings
    device: dict[str, str] = field(default_factory=dict)
    wall_s: float = 0.0
    speed: SpeedUp | None = None  # over the reference's runs around it, pooled
    speed_vs_baseline: SpeedUp | None = None
    #: the decision over the runs before and after, with any measurement fault
    judgement: Judgement | None = None
    accepted: bool | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and len(self.block_seconds) > 0

    def throughput(self) -> list[float]:
        """Samples (or steps, when the batch is unknown) per second of each timed block."""
        per_step = self.samples_per_step or 1.0
        return [per_step / s for s in self.block_seconds if s > 0]

    def step_spread(self) -> Spread:
        """Median and quartiles of the step time (us) over the timed blocks."""
        return spread([b * 1e6 for b in self.block_seconds])

    def throughput_spread(self) -> Spread:
        """Median and quartiles of `throughput` over the timed blocks."""
        return spread(self.throughput())


def slug(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", label).strip("_")[:60] or "trial"


def workload_spec(target: Target, setting: dict) -> dict:
    config = {**target.base, **setting}
    run = {k: config.pop(k) for k in ("compile", "dtype", "tf32") if k in config}
    return {
        "kind": "workload",
        "workload": target.name,
        "params": config,
        "dtype": run.get("dtype"),
        "compile_mode": run.get("compile"),
        "tf32": bool(run.get("tf32")),
    }


def script_command(target: Target, setting: dict) -> tuple[dict, dict[str, str]]:
    """(spec part, environment additions) of a script trial."""
    args = list(target.args)
    env = {}
    for name, value in setting.items():
        if target.pass_as_arg:
            args += _as_args(name, value)
        else:
            env[env_name(name)] = _text(value)
    spec = {"kind": "script", "script": str(target.name), "args": args, "step_on": target.step_on}
    return spec, env


def _text(value) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _as_args(name: str, value) -> list[str]:
    """`--name value`; a boolean is a flag: present for true, absent for false."""
    if isinstance(value, bool):
        return [f"--{name}"] if value else []
    return [f"--{name}", _text(value)]


def run_trial(
    target: Target,
    trial: Trial,
    timing: Timing,
    folder: Path,
    timeout: float,
    force: bool = False,
    profile: bool = True,
) -> Trial:
    """Run `trial` (its `setting` over the target's base) in a subprocess; fill in what it
    measured, or its error. Without `profile` no steps are profiled (a repeat run of a
    reference, measured for its timings only)."""
    stem = f"{trial.index:02d}_{slug(trial.label)}"
    if target.kind == "workload":
        spec, env = workload_spec(target, trial.setting), {}
    else:
        spec, env = script_command(target, trial.setting)
    with tempfile.TemporaryDirectory(prefix="kinetoscope-tune-") as tmp:
        result_path = Path(tmp) / "result.json"
        spec.update(
            label=trial.label,
            device=target.device,
            warmup=timing.warmup,
            blocks=timing.blocks,
            block_steps=timing.block_steps,
            min_block_s=timing.min_block_s,
            trace_dir=str(folder) if profile else None,
            trace_name=stem,
            force=force,
            result=str(result_path),
            meta={"tune_setting": trial.setting},
        )
        spec_path = Path(tmp) / "spec.json"
        spec_path.write_text(json.dumps(spec))
        argv = [sys.executable, "-m", "kinetoscope.tune.trial_run", str(spec_path)]
        started = time.monotonic()
        try:
            done = subprocess.run(
                argv, capture_output=True, text=True, timeout=timeout, env={**os.environ, **env}
            )
        except subprocess.TimeoutExpired:
            trial.error = f"timed out after {timeout:g} s"
            trial.wall_s = time.monotonic() - started
            return trial
        trial.wall_s = time.monotonic() - started
        if done.returncode == -signal.SIGINT:  # Ctrl-C reached the trial before us
            raise KeyboardInterrupt
        result = json.loads(result_path.read_text()) if result_path.is_file() else None
    _read_result(trial, result, done)
    if profile:
        _read_trace(trial, folder / f"{stem}.json")
    trial.samples_per_step = _samples_per_step(target, trial)
    return trial


def _read_result(trial: Trial, result: dict | None, done: subprocess.CompletedProcess) -> None:
    stderr = done.stderr or ""
    if result is None:
        trial.oom = "OutOfMemoryError" in stderr or "out of memory" in stderr
        trial.error = ("out of memory: " if trial.oom else f"exit {done.returncode}: ") + (
            _last_line(stderr)
        )
        return
    trial.block_seconds = result.get("block_seconds", [])
    trial.block_sizes = result.get("block_sizes", [])
    trial.run_queue_share = result.get("run_queue_share")
    trial.peak_memory = result.get("peak_memory_bytes")
    trial.device_memory = result.get("device_memory_bytes")
    trial.knobs_read = result.get("knobs_read", {})
    trial.params = result.get("params", {})
    if result.get("dtype"):
        trial.params["dtype"] = result["dtype"]
    trial.device = result.get("device", {})
    trial.oom = bool(result.get("oom")) or "OutOfMemoryError" in stderr
    trial.error = result.get("error")
    if trial.error and not trial.oom and "status" in trial.error:
        trial.error += f" ({_last_line(stderr)})"
    if trial.error is None and len(trial.block_seconds) < 2:
        trial.error = (
            f"only {result.get('steps', 0)} steps ran; a trial needs warm-up + "
            "timed blocks (fewer --blocks / --block-steps, or a longer run)"
        )


def _read_trace(trial: Trial, path: Path) -> None:
    """Regime and host-time shares of the trial's profiled steps, as `explain` gives them."""
    if not path.is_file():
        return
    from ..api import explain

    trial.trace = str(path)
    table = path.with_suffix(".txt")
    trial.table = str(table) if table.is_file() else None
    try:
        report = explain(path)
    except KinetoscopeError as exc:
        trial.regime = f"unreadable trace: {exc}"
        return
    trial.regime = report.verdict.regime
    trial.shares = dict(report.verdict.decomposition)
    trial.device_ratio = report.verdict.ratio


def _samples_per_step(target: Target, trial: Trial) -> float | None:
    if target.samples_per_step:
        return target.samples_per_step
    for name in BATCH_NAMES:
        for source in (trial.setting, trial.params, trial.knobs_read, target.base):
            value = source.get(name)
            if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
                return float(value)
    return None


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "no output"
