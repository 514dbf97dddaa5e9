"""`kinetoscope profile WORKLOAD|script.py [options] [-- ARGS]`: capture, then read the trace.

Built-in workloads write `traces/<NN_workload>/<tag>.json` and `<tag>.txt`
(with `--tensorboard`, TensorBoard's names in that folder); a script writes
TensorBoard-named files under `traces/<script stem>/`. Then the
trace is read back and explained. torch is imported only when a capture runs,
so `--help` works without it.
"""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path

import typer

from .. import progress
from ..errors import UsageError


class DeviceOpt(str, Enum):
    auto = "auto"
    cuda = "cuda"
    cpu = "cpu"


class DtypeOpt(str, Enum):
    bf16 = "bf16"
    fp16 = "fp16"
    fp32 = "fp32"


class CompileModeOpt(str, Enum):
    default = "default"
    reduce_overhead = "reduce-overhead"
    max_autotune = "max-autotune"


class TransformerModeOpt(str, Enum):
    forward_generate = "forward_generate"
    generate = "generate"


class ImplOpt(str, Enum):
    naive = "naive"
    sdpa = "sdpa"


class AttnBackendOpt(str, Enum):
    auto = "auto"
    naive = "naive"
    math = "math"
    efficient = "efficient"
    flash = "flash"
    cudnn = "cudnn"


_WORKLOAD = "Workload options (each applies to the workloads named)"
_SCHEDULE = "Schedule (torch.profiler.schedule)"


def register(app: typer.Typer) -> None:
    app.command(
        "profile",
        context_settings={"help_option_names": ["-h", "--help"]},
    )(profile_command)


def profile_command(
    target: str = typer.Argument(
        ...,
        metavar="WORKLOAD|SCRIPT.py",
        help="matmul_add, linear, mlp, attention, transformer, dataloader, or a script.py.",
    ),
    script_args: list[str] | None = typer.Argument(
        None, metavar="[-- ARGS]", help="Arguments for the script (after --)."
    ),
    device: DeviceOpt = typer.Option(DeviceOpt.auto, help="auto picks CUDA/ROCm when present."),
    dtype: DtypeOpt | None = typer.Option(None, help="Default bf16 on GPU, fp32 on CPU."),
    compile: bool = typer.Option(False, "--compile", help="torch.compile the workload."),
    compile_mode: CompileModeOpt = typer.Option(CompileModeOpt.default, help="torch.compile mode."),
    warmup: int = typer.Option(0, min=0, help="Iterations before the profiler starts (0: cold)."),
    wait: int = typer.Option(1, min=0, help="Steps skipped first.", rich_help_panel=_SCHEDULE),
    warmup_steps: int = typer.Option(
        1, min=0, help="Profiler warm-up steps.", rich_help_panel=_SCHEDULE
    ),
    active: int = typer.Option(3, min=1, help="Steps recorded.", rich_help_panel=_SCHEDULE),
    repeat: int = typer.Option(
        1, min=1, help="Cycles (one trace each).", rich_help_panel=_SCHEDULE
    ),
    record_shapes: bool = typer.Option(False, "--record-shapes", help="Record input shapes."),
    profile_memory: bool = typer.Option(False, "--profile-memory", help="Record allocations."),
    with_stack: bool = typer.Option(False, "--with-stack", help="Record Python stacks."),
    out: Path = typer.Option(Path("traces"), "--out", help="Output folder."),
    gzip: bool = typer.Option(False, "--gzip", help="Write .json.gz."),
    force: bool = typer.Option(
        False, "--force", help="Replace an earlier run's artifacts (default: new name _2, ...)."
    ),
    tensorboard: bool = typer.Option(
        False,
        "--tensorboard",
        help="Name traces as tensorboard_trace_handler does (<host>_<pid>.<ns>.pt.trace.json), "
        "for TensorBoard, HTA and Perfetto. Scripts always are.",
    ),
    step_on: str | None = typer.Option(
        None,
        help="Script only: module:function whose every call is one step; a function the "
        "script defines: its name or __main__:name.",
    ),
    size: int | None = typer.Option(
        None, min=1, help="matmul_add: matrix size.", rich_help_panel=_WORKLOAD
    ),
    batched: bool = typer.Option(
        False, "--batched", help="matmul_add: 3-D inputs (aten::bmm).", rich_help_panel=_WORKLOAD
    ),
    batch: int | None = typer.Option(
        None, min=1, help="linear, mlp, attention, dataloader.", rich_help_panel=_WORKLOAD
    ),
    in_dim: int | None = typer.Option(
        None, min=1, help="linear: input features.", rich_help_panel=_WORKLOAD
    ),
    out_dim: int | None = typer.Option(
        None, min=1, help="linear: output features.", rich_help_panel=_WORKLOAD
    ),
    seq: int | None = typer.Option(
        None, min=1, help="mlp, attention, transformer: tokens.", rich_help_panel=_WORKLOAD
    ),
    dim: int | None = typer.Option(
        None, min=1, help="mlp: model width.", rich_help_panel=_WORKLOAD
    ),
    hidden: int | None = typer.Option(
        None, min=1, help="mlp, transformer, dataloader: width.", rich_help_panel=_WORKLOAD
    ),
    impl: ImplOpt | None = typer.Option(
        None, help="attention: naive or sdpa.", rich_help_panel=_WORKLOAD
    ),
    backend: AttnBackendOpt | None = typer.Option(
        None,
        help="attention: SDPA backend to pin (auto lets PyTorch choose; naive = --impl naive).",
        rich_help_panel=_WORKLOAD,
    ),
    heads: int | None = typer.Option(
        None, min=1, help="attention: heads.", rich_help_panel=_WORKLOAD
    ),
    head_dim: int | None = typer.Option(
        None, min=1, help="attention: head size.", rich_help_panel=_WORKLOAD
    ),
    layers: int | None = typer.Option(
        None, min=1, help="transformer: decoder layers.", rich_help_panel=_WORKLOAD
    ),
    new_tokens: int | None = typer.Option(
        None, min=1, help="transformer: tokens generated.", rich_help_panel=_WORKLOAD
    ),
    mode: TransformerModeOpt | None = typer.Option(
        None,
        help="transformer: forward_generate (a forward, then generate) or generate alone.",
        rich_help_panel=_WORKLOAD,
    ),
    image: int | None = typer.Option(
        None, min=1, help="dataloader: image side in pixels.", rich_help_panel=_WORKLOAD
    ),
    blur: int | None = typer.Option(
        None, min=0, help="dataloader: blur passes per item.", rich_help_panel=_WORKLOAD
    ),
    num_workers: int | None = typer.Option(
        None, min=0, help="dataloader: loader processes.", rich_help_panel=_WORKLOAD
    ),
    pin_memory: bool = typer.Option(
        False, "--pin-memory", help="dataloader: pinned buffers.", rich_help_panel=_WORKLOAD
    ),
    prefetch_factor: int | None = typer.Option(
        None,
        min=1,
        help="dataloader: batches each worker keeps ready (torch's default 2; needs workers).",
        rich_help_panel=_WORKLOAD,
    ),
    read_ms: float | None = typer.Option(
        None,
        min=0.0,
        help="dataloader: per-item read latency in ms (a sleep, as a disk or network read).",
        rich_help_panel=_WORKLOAD,
    ),
) -> None:
    """Run a built-in workload or your script under torch.profiler, write the trace and the
    profiler table, then explain the trace."""
    from ..capture.schedule import Schedule

    schedule = Schedule(wait, warmup_steps, active, repeat)
    common = {
        "record_shapes": record_shapes,
        "profile_memory": profile_memory,
        "with_stack": with_stack,
        "gzip": gzip,
        "out": out,
        "force": force,
    }
    overrides = {
        k: (v.value if isinstance(v, Enum) else v)
        for k, v in {
            "size": size,
            "batched": batched or None,
            "batch": batch,
            "in_dim": in_dim,
            "out_dim": out_dim,
            "seq": seq,
            "dim": dim,
            "hidden": hidden,
            "impl": impl,
            "backend": backend,
            "heads": heads,
            "head_dim": head_dim,
            "layers": layers,
            "new_tokens": new_tokens,
            "mode": mode,
            "image": image,
            "blur": blur,
            "num_workers": num_workers,
            "pin_memory": pin_memory or None,
            "prefetch_factor": prefetch_factor,
            "read_ms": read_ms,
        }.items()
        if v is not None
    }
    if Path(target).is_dir():  # before anything is created or written
        raise UsageError(f"{target}: is a folder, not a script.py or a built-in workload")
    if target.endswith(".py") or Path(target).is_file():
        if overrides:
            names = ", ".join("--" + k.replace("_", "-") for k in overrides)
            raise UsageError(f"{names}: workload options do not apply to a script")
        if compile or dtype is not None or warmup:
            raise UsageError("--compile, --dtype and --warmup apply to workloads, not scripts")
        # a script's traces always carry tensorboard_trace_handler's names
        with progress.reporting():
            _profile_script(target, script_args or [], schedule, step_on, device.value, common)
        return
    if script_args:
        raise UsageError(f"extra arguments {' '.join(script_args)!r}: only a script takes them")
    if step_on is not None:
        raise UsageError("--step-on applies to scripts, not built-in workloads")
    if compile_mode is not CompileModeOpt.default and not compile:
        raise UsageError("--compile-mode needs --compile")
    from ..capture.runner import CaptureOptions, run_workload

    options = CaptureOptions(
        device=device.value,
        dtype=dtype.value if dtype is not None else None,
        compile=compile,
        compile_mode=compile_mode.value,
        warmup=warmup,
        schedule=schedule,
        tensorboard=tensorboard,
        **common,
    )
    with progress.reporting():
        result = run_workload(target, overrides, options)
        progress.pause()
        print(f"profiled {result.workload} ({result.tag}) on {result.device.name}")
        _report_artifacts(result.written, result.renamed)


def _profile_script(target, args, schedule, step_on, device, common) -> None:
    from ..capture.script import run_script

    result = run_script(target, args, schedule=schedule, step_on=step_on, device=device, **common)
    progress.pause()
    print(
        f"profiled {result.script} on {result.device.name}: "
        f"{result.steps} steps ({result.step_source})"
    )
    if not result.written:
        first = schedule.active_steps()[0]
        raise UsageError(
            f"the script stepped {result.steps} time(s), too few to reach the schedule's first "
            f"recorded step (#{first}): lower --wait / --warmup-steps"
        )
    if result.whole_run:
        print("the script never stepped: the trace covers the whole run (as ProfilerStep#0)")
    elif result.steps < schedule.total_steps:
        print(
            f"the script stepped {result.steps} times, fewer than the schedule's "
            f"{schedule.total_steps}: the last cycle is partial"
        )
    _report_artifacts(result.written, result.renamed)
    if result.exit_code:
        print(f"the script exited with status {result.exit_code}", file=sys.stderr)
        raise typer.Exit(result.exit_code)


def _report_artifacts(written, renamed=()) -> None:
    """Read each trace just written like `kinetoscope explain`, then list the files (and
    say when an earlier run's file kept the name asked for)."""
    if not written:
        raise UsageError("the profiler produced no trace (no recorded step completed)")
    for artifacts in written:
        _print_explanation(artifacts.trace)
    for wanted, got in renamed:
        print(f"{wanted} exists (use --force to replace it); wrote {got}")
    for artifacts in written:
        print(f"trace: {artifacts.trace}")
        print(f"table: {artifacts.table}")


def _print_explanation(path: Path) -> None:
    """Verdict, steps and ranked findings of the trace, as `kinetoscope explain` prints them."""
    from ..api import explain
    from ..report.console import output_width
    from ..report.text import render_text

    progress.stage(f"reading the trace {path}")
    report = explain(path)
    progress.pause()
    sys.stdout.write(render_text(report, width=output_width(), color=sys.stdout.isatty()))
