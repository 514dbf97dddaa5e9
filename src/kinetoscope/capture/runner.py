"""Run one built-in workload under the profiler and write its artifacts.

`traces/<NN_workload>/<tag>.json[.gz]` and `<tag>.txt`, named as the series
names them: `<size>_<dtype>_<cold|warm>_<eager|compile>` (a warm run is `warm`
whatever the warm-up count, a compiled run `compile` whatever the mode; the
counts are in the trace metadata and the table header), then the extra knobs
(`_batched`, `_reduce-overhead`), what was recorded beyond the defaults (`_shapes`,
`_memory`, `_stack`) and the repeat cycle (`_cycle2`). A second run
with the same settings gets `_2` (never over an earlier run's files).
With `tensorboard`, the same folder holds `tensorboard_trace_handler`'s names
instead (`<host>_<pid>.<time_ns>.pt.trace.json`), which TensorBoard's profiler
plugin and HTA find when pointed at `traces/` (one run per workload folder).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from .. import progress
from ..errors import UsageError
from .deps import require_torch
from .device import DeviceChoice, resolve_device, resolve_dtype, synchronize
from .quiet import noise_filtered
from .schedule import Schedule
from .session import Artifacts, Profile, tensorboard_naming
from .workloads import Context, check_workload, load_workload

COMPILE_MODES = ("default", "reduce-overhead", "max-autotune")
#: stem suffixes of --record-shapes, --profile-memory, --with-stack
RECORDED = ("shapes", "memory", "stack")


@dataclass(frozen=True)
class CaptureOptions:
    """How to profile, independent of the workload."""

    device: str = "auto"
    dtype: str | None = None  # None: bf16 on GPU, fp32 on CPU
    compile: bool = False
    compile_mode: str = "default"
    warmup: int = 0  # iterations before the profiler starts
    schedule: Schedule = field(default_factory=Schedule)
    record_shapes: bool = False
    profile_memory: bool = False
    with_stack: bool = False
    out: Path = Path("traces")
    gzip: bool = False
    force: bool = False  # replace an earlier run's artifacts of the same name
    tensorboard: bool = False  # tensorboard_trace_handler names instead of the series' names


@dataclass(frozen=True)
class CaptureResult:
    workload: str
    tag: str
    device: DeviceChoice
    written: list[Artifacts]
    renamed: list[tuple[Path, Path]] = field(default_factory=list)  # (wanted, written)


def workload_params(module, overrides: dict):
    """The workload's Params with the given fields set; UsageError for options it lacks."""
    names = [f.name for f in dataclasses.fields(module.Params)]
    unknown = sorted(set(overrides) - set(names))
    if unknown:
        given = ", ".join("--" + n.replace("_", "-") for n in unknown)
        own = ", ".join("--" + n.replace("_", "-") for n in names)
        raise UsageError(f"{given} does not apply to workload {module.NAME} (its options: {own})")
    return module.Params(**overrides)


def run_tag(module, params, dtype: str, options: CaptureOptions) -> str:
    warm = "cold" if options.warmup == 0 else "warm"
    mode = "compile" if options.compile else "eager"
    knobs = list(getattr(module, "knobs", lambda _p: [])(params))
    if options.compile and options.compile_mode != "default":
        knobs.append(options.compile_mode)
    # what was recorded changes the trace (shapes, allocations, stacks): a run with them
    # is not the run without them, and gets its own name rather than `_2`
    recorded = (options.record_shapes, options.profile_memory, options.with_stack)
    knobs += [name for on, name in zip(recorded, RECORDED, strict=True) if on]
    return "_".join([module.tag(params), dtype, warm, mode, *knobs])


def run_workload(name: str, overrides: dict, options: CaptureOptions) -> CaptureResult:
    """Profile workload `name` with its Params overridden by `overrides`."""
    check_workload(name)
    if options.warmup < 0:
        raise UsageError(f"--warmup must be >= 0, not {options.warmup}")
    if options.compile_mode not in COMPILE_MODES:
        raise UsageError(f"--compile-mode must be one of {', '.join(COMPILE_MODES)}")
    progress.stage("importing torch")
    torch = require_torch()
    module = load_workload(name)
    params = workload_params(module, overrides)
    device = resolve_device(torch, options.device)
    dtype_name, dtype = resolve_dtype(torch, options.dtype, device)
    tag = run_tag(module, params, dtype_name, options)
    progress.stage(f"building {module.NAME} ({tag}) on {device.name}")
    step = module.build(params, Context(torch, device.type, dtype, _compiler(torch, options)))
    if options.warmup:
        progress.stage(f"warming up: {options.warmup} iterations")
    for i in range(options.warmup):
        if i == 0 and options.compile:  # the first call compiles: seconds, said as its own stage
            progress.stage(f"compiling: torch.compile ({options.compile_mode}) on the first call")
        progress.count(f"warming up: iteration {i + 1} of {options.warmup}", i, options.warmup)
        step()
    synchronize(torch, device)
    meta = {
        "workload": module.NAME,
        "params": dataclasses.asdict(params),
        "dtype": dtype_name,
        "compile": options.compile_mode if options.compile else None,
        "warmup_iters": options.warmup,
        "tag": tag,
    }
    schedule = options.schedule
    with (
        noise_filtered() as quiet,
        Profile(
            Path(options.out) / module.FOLDER,
            schedule,
            device=device,
            record_shapes=options.record_shapes,
            profile_memory=options.profile_memory,
            with_stack=options.with_stack,
            gzip=options.gzip,
            meta=meta,
            naming=tensorboard_naming() if options.tensorboard else _tag_naming(tag, schedule),
            force=options.force,
            quiet=quiet,
        ) as prof,
    ):
        for _ in range(schedule.total_steps):
            step()
            prof.step()
    return CaptureResult(module.NAME, tag, device, prof.written, prof.handler.renamed)


def _compiler(torch, options: CaptureOptions):
    if not options.compile:
        return lambda fn: fn
    return lambda fn: torch.compile(fn, mode=options.compile_mode)


def _tag_naming(tag: str, schedule: Schedule):
    def name(cycle: int) -> tuple[str, str]:
        stem = tag if schedule.repeat == 1 else f"{tag}_cycle{cycle}"
        return f"{stem}.json", f"{stem}.txt"

    return name
