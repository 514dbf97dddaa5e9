"""Profile a user's script without editing it: `kinetoscope profile train.py -- ARGS`.

The script runs in this process as `__main__` (runpy, with `sys.argv` set to
the script and its arguments). Step boundaries come from every
`torch.optim.Optimizer.step()` (a global post-step hook) or, with
`--step-on module:function`, from every call of that function (a function the
script defines itself: `--step-on train_step` or `__main__:train_step`, see
`main_hook`); the schedule
counts those steps. Because we cannot know in advance whether the script will
ever step, recording starts at once: if a first step arrives, that opening
recording (imports, set-up, the first iteration) is dropped and the schedule
proceeds as usual; if none arrives, the whole run is the trace.

A step boundary at `optimizer.step()` falls inside any `record_function` the
script opens around its whole iteration; `--step-on` the loop-body function
puts the boundaries exactly between iterations.
"""

from __future__ import annotations

import functools
import importlib
import runpy
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

from .. import progress
from ..errors import Terminated, UsageError, raised_by_interrupt, raised_by_termination
from .deps import inductor_left_unimported, require_torch
from .device import DeviceChoice, activities, resolve_device
from .main_hook import hooked_code, run_as_main
from .optimizer_steps import OptimizerSteps
from .quiet import noise_filtered
from .schedule import Schedule
from .session import Artifacts, TraceHandler, switches_at, tensorboard_naming


@dataclass(frozen=True)
class ScriptResult:
    script: Path
    device: DeviceChoice
    written: list[Artifacts]
    steps: int  # step boundaries seen
    step_source: str
    whole_run: bool  # the script never stepped: the trace covers the whole run
    exit_code: int  # the script's own exit status (1 if it raised)
    renamed: list[tuple[Path, Path]]  # (wanted, written): an earlier file kept the name


class _DropOpeningRecording:
    """on_trace_ready gate: the first cycle is the opening recording; keep it only
    when the script never stepped (then it is the whole run)."""

    def __init__(self, handler: TraceHandler) -> None:
        self.handler = handler
        self.first = True
        self.whole_run = False

    def __call__(self, prof) -> None:
        if self.first:
            self.first = False
            if prof.step_num > 0:
                return
            self.whole_run = True
        self.handler(prof)


def _record_from_start(torch, base):
    record = torch.profiler.ProfilerAction.RECORD_AND_SAVE
    return lambda step: record if step == 0 else base(step)


def _main_attr(spec: str | None) -> str | None:
    """The attribute path when `spec` names the script's own function, else None."""
    if spec is None:
        return None
    module_name, sep, attr_path = spec.rpartition(":") if ":" in spec else ("", "", spec)
    if not sep:
        return spec or None
    return attr_path if module_name == "__main__" and attr_path else None


def _resolve_step_on(spec: str):
    """`module:function` (or `module:Class.method`) -> (owner object, attribute name)."""
    module_name, sep, attr_path = spec.partition(":")
    if not sep or not module_name or not attr_path:
        raise UsageError(f"--step-on {spec!r}: expected module:function")
    try:
        owner = importlib.import_module(module_name)
    except ImportError as exc:
        raise UsageError(f"--step-on {spec!r}: cannot import {module_name} ({exc})") from None
    *parents, attr = attr_path.split(".")
    for part in parents:
        owner = getattr(owner, part, None)
    if owner is None or not callable(getattr(owner, attr, None)):
        raise UsageError(f"--step-on {spec!r}: {attr_path} is not a function of {module_name}")
    return owner, attr


def run_script(
    script: str | Path,
    args: list[str],
    *,
    out: Path = Path("traces"),
    schedule: Schedule | None = None,
    step_on: str | None = None,
    device: str = "auto",
    record_shapes: bool = False,
    profile_memory: bool = False,
    with_stack: bool = False,
    gzip: bool = False,
    force: bool = False,
) -> ScriptResult:
    script = Path(script)
    if not script.is_file():
        raise UsageError(f"{script}: no such script")
    main_attr = _main_attr(step_on)
    code = hooked_code(script, step_on, main_attr) if main_attr else None
    progress.stage("importing torch")
    torch = require_torch()
    schedule = schedule or Schedule()
    choice = resolve_device(torch, device)
    step_source = f"calls of {step_on}" if step_on else "optimizer.step() calls"
    handler = TraceHandler(
        Path(out) / script.stem,
        gzip=gzip,
        meta={
            "workload": "script",
            "script": str(script),
            "args": list(args),
            "step_source": step_source,
            "device": choice.as_meta(),
            "schedule": schedule.as_meta(),
        },
        naming=tensorboard_naming(),
        force=force,
    )
    gate = _DropOpeningRecording(handler)
    prof = torch.profiler.profile(
        activities=activities(torch, choice),
        schedule=_record_from_start(torch, schedule.to_torch(torch)),
        on_trace_ready=gate,
        record_shapes=record_shapes,
        profile_memory=profile_memory,
        with_stack=with_stack,
    )
    steps = [0]
    when = prof.schedule

    def step() -> None:
        steps[0] += 1
        if switches_at(when, steps[0]):  # Kineto's start/stop lines out of stderr
            with quiet.around(), inductor_left_unimported():
                prof.step()
        else:
            prof.step()

    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [str(script), *args]
    sys.path.insert(0, str(script.resolve().parent))
    undo = None
    failed = True
    try:
        undo = None if main_attr else _install_step_source(torch, step, step_on)
        # our opening recording ends a cycle, which makes torch warn about clearing events
        with noise_filtered() as quiet:
            progress.stage(f"running {script.name} under the profiler")
            with quiet.around(), inductor_left_unimported():
                prof.__enter__()
            try:
                exit_code = _run(script, code and (code, _stepping_wrapper(step), main_attr))
            except BaseException as exc:  # Ctrl-C: stopping must not save a cut cycle
                handler.closed = True
                with quiet.around():
                    prof.__exit__(type(exc), exc, exc.__traceback__)
                raise
            with quiet.around():
                prof.__exit__(None, None, None)
        failed = False
    finally:
        handler.close(failed)
        if undo is not None:
            undo()
        sys.argv, sys.path[:] = saved_argv, saved_path
    return ScriptResult(
        script,
        choice,
        handler.written,
        steps[0],
        step_source,
        gate.whole_run,
        exit_code,
        handler.renamed,
    )


def _install_step_source(torch, step, step_on: str | None):
    """Hook `step` after each optimizer step or each call of `step_on`; returns the undo."""
    if step_on is None:
        return OptimizerSteps(torch, step).remove
    owner, attr = _resolve_step_on(step_on)
    original = getattr(owner, attr)
    setattr(owner, attr, _stepping_wrapper(step)(original))
    return lambda: setattr(owner, attr, original)


def _stepping_wrapper(step):
    """function -> the same function, with `step()` after each call (returned or raised)."""

    def wrap(original):
        @functools.wraps(original)
        def stepping(*a, **kw):
            try:
                return original(*a, **kw)
            finally:
                step()

        return stepping

    return wrap


def _run(script: Path, main_hook=None) -> int:
    """Run the script as __main__; its exit status (a raised exception is printed, status 1).

    `main_hook` = (hooked code, wrap, attribute path) when `--step-on` names the
    script's own function."""
    try:
        if main_hook:
            run_as_main(main_hook[0], script, main_hook[1], main_hook[2])
        else:
            runpy.run_path(str(script), run_name="__main__")
    except Terminated:
        raise  # SIGTERM's exit, raised inside the script: not the script's own status
    except SystemExit as exc:
        if exc.code is None:
            return 0
        return exc.code if isinstance(exc.code, int) else 1
    except Exception as exc:  # noqa: BLE001 - the user's script failing is reported, not our crash
        if raised_by_interrupt(exc):  # raised while a Ctrl-C unwound: the Ctrl-C's doing
            raise KeyboardInterrupt from None
        terminated = raised_by_termination(exc)
        if terminated is not None:  # the same for a SIGTERM's exit (`cli._terminated`)
            raise Terminated(terminated.code) from None
        traceback.print_exc()
        return 1
    return 0
