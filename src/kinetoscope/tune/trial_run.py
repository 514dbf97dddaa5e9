"""One tune trial, in its own process: `python -m kinetoscope.tune.trial_run SPEC.json`.

The parent (`tune.trials`) writes the spec and reads back the result file; a
crash, an out-of-memory or a hang here ends this trial only. A built-in
workload is built with the trial's parameters and stepped in a loop; a script
runs as `__main__` exactly as `kinetoscope profile script.py` runs it (its knob
values come from the environment or its arguments, set by the parent), with
steps at `optimizer.step()` or `--step-on`. Either way a `StepClock` warms up,
times blocks of steps and profiles a few more; a script is stopped once that is
done. This module imports torch (it is capture, run in a child).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..capture.deps import require_torch
from ..capture.device import resolve_device, resolve_dtype, synchronize
from ..capture.schedule import Schedule
from ..capture.session import Profile
from .clock import MIN_BLOCK_S, StepClock, TrialDone
from .knob import read_knobs

#: profiler schedule of the profiling phase: 1 warm-up step, 3 recorded (ProfilerStep#1-#3)
PROFILE_SCHEDULE = Schedule(wait=0, warmup=1, active=3)


def main(spec_path: str) -> int:
    spec = json.loads(Path(spec_path).read_text())
    torch = require_torch()
    if spec.get("tf32"):
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    device = resolve_device(torch, spec.get("device", "auto"))
    result: dict = {"device": device.as_meta(), "torch_version": torch.__version__}

    def sync() -> None:
        if device.is_gpu and torch.cuda.is_initialized():
            torch.cuda.synchronize()

    def profiler():
        return Profile(
            spec["trace_dir"],
            PROFILE_SCHEDULE,
            device=device,
            meta={"tune_trial": spec["label"], **spec.get("meta", {})},
            naming=lambda _c: (spec["trace_name"] + ".json", spec["trace_name"] + ".txt"),
            force=spec.get("force", False),
        )

    clock = StepClock(
        spec["warmup"],
        spec["blocks"],
        spec["block_steps"],
        sync,
        profiler if spec.get("trace_dir") else None,
        PROFILE_SCHEDULE.total_steps,
        spec.get("min_block_s", MIN_BLOCK_S),
    )

    def reset_peak() -> None:
        if device.is_gpu and torch.cuda.is_initialized():
            torch.cuda.reset_peak_memory_stats()

    clock.on_timing_start = reset_peak
    exit_code = 0
    try:
        if spec["kind"] == "workload":
            _run_workload(torch, spec, device, clock, result)
        else:
            exit_code = _run_script(torch, spec, device, clock)
    except torch.OutOfMemoryError as exc:
        clock.close(failed=True)
        result["error"] = f"out of memory: {str(exc).splitlines()[0]}"
        result["oom"] = True
    finally:
        clock.close()
    result.update(_measured(torch, device, clock))
    if exit_code and "error" not in result:
        result["error"] = f"the script exited with status {exit_code}"
    Path(spec["result"]).write_text(json.dumps(result))
    return 3 if result.get("oom") else 0


def _measured(torch, device, clock: StepClock) -> dict:
    measured = {
        "block_seconds": clock.block_seconds(),
        "block_sizes": clock.sizes,
        "run_queue_share": clock.run_queue_share(),
        "steps": clock.steps,
        "knobs_read": read_knobs(),
        "peak_memory_bytes": None,
        "device_memory_bytes": None,
    }
    if device.is_gpu and torch.cuda.is_initialized():
        measured["peak_memory_bytes"] = torch.cuda.max_memory_allocated()
        measured["device_memory_bytes"] = torch.cuda.get_device_properties(0).total_memory
    return measured


def _run_workload(torch, spec: dict, device, clock: StepClock, result: dict) -> None:
    """Build the workload with the trial's settings (recorded in `result`), step until done."""
    import dataclasses

    from ..capture.runner import workload_params
    from ..capture.workloads import Context, load_workload

    module = load_workload(spec["workload"])
    params = workload_params(module, spec.get("params", {}))
    dtype_name, dtype = resolve_dtype(torch, spec.get("dtype"), device)
    result["params"] = dataclasses.asdict(params)
    result["dtype"] = dtype_name
    mode = spec.get("compile_mode")

    def compiler(fn):
        return fn if mode is None else torch.compile(fn, mode=mode)

    step = module.build(params, Context(torch, device.type, dtype, compiler))
    synchronize(torch, device)
    while not clock.done:
        step()
        clock.on_step()


def _run_script(torch, spec: dict, device, clock: StepClock) -> int:
    from ..capture.main_hook import hooked_code
    from ..capture.script import _install_step_source, _main_attr, _run, _stepping_wrapper

    script = Path(spec["script"])
    step_on = spec.get("step_on")
    main_attr = _main_attr(step_on)
    code = hooked_code(script, step_on, main_attr) if main_attr else None

    def on_step() -> None:
        clock.on_step()
        if clock.done:
            raise TrialDone

    sys.argv = [str(script), *spec.get("args", [])]
    sys.path.insert(0, str(script.resolve().parent))
    undo = None if main_attr else _install_step_source(torch, on_step, step_on)
    try:
        return _run(script, code and (code, _stepping_wrapper(on_step), main_attr))
    except TrialDone:
        return 0
    finally:
        if undo is not None:
            undo()


if __name__ == "__main__":
    from ..errors import KinetoscopeError

    try:
        sys.exit(main(sys.argv[1]))
    except KinetoscopeError as exc:  # bad settings: one line for the parent to record
        print(f"kinetoscope: error: {exc}", file=sys.stderr)
        sys.exit(2)
