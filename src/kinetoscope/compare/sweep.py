"""`sweep`: one workload profiled across values of one parameter, read as a curve.

Each value runs `kinetoscope profile` in its own subprocess (a crash or an
out-of-memory at one size ends that point, not the sweep). Each trace is then
read through `explain`: its step time, host and device busy time, busy ratio,
regime, and on a CPU run its compute, dispatch and Python/other parts and
compute share, are the report's own figures (`analysis.stats`), so a sweep row
and `explain` on the same trace print the same numbers. Only what explain does
not report per step is added: the step's matmul FLOPs from the recorded shapes,
and the achieved TFLOP/s they give over the busy time. The crossover is the
value where the work overtakes the overhead: device time exceeds host time on a
GPU run (the overhead-bound to compute-bound turn); on a CPU run, the compute
part exceeds dispatch and Python/other together.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from statistics import median
from typing import Any

from ..analysis.compute_ops import matmul_flops_per_step
from ..analysis.roofline import CLASSES, Roofline, roofline
from ..api import explain
from ..errors import KinetoscopeError, UsageError
from ..files.own_files import signature
from ..report.sweep_model import SweepPoint
from ..trace import Trace, load


@dataclass
class Crossover:
    mode: str  # "device" (device vs host time) or "host" (compute vs dispatch)
    value: float | None  # interpolated parameter value, None when the curves never cross
    note: str


def parse_vary(text: str) -> tuple[str, list[float]]:
    """`size=16,32,64` -> ("size", [16, 32, 64]); at least two increasing numbers."""
    m = re.fullmatch(r"\s*([A-Za-z_][A-Za-z0-9_-]*)\s*=\s*(.+)", text)
    if not m:
        raise UsageError(f"--vary {text!r}: expected NAME=V1,V2,... (e.g. size=16,32,64)")
    try:
        values = [float(v) for v in m[2].split(",") if v.strip()]
    except ValueError:
        raise UsageError(f"--vary {text!r}: values must be numbers") from None
    if len(values) < 2 or any(b <= a for a, b in zip(values, values[1:], strict=False)):
        raise UsageError(f"--vary {text!r}: give at least two increasing values")
    return m[1], values


def measure(trace: Trace, value: float) -> SweepPoint:
    """One trace of the sweep, in explain's figures (per-step medians, window shares)."""
    report = explain(trace)
    m = report.metrics
    roof = roofline(trace)
    flops = median(matmul_flops_per_step(trace))
    has_device = trace.has_device
    busy = m["device_busy_per_step_us"] if has_device else m["compute_us"]
    return SweepPoint(
        value=value,
        trace=trace.path,
        has_device=has_device,
        step_us=m["step_time_us"],
        host_us=m["host_time_per_step_us"],
        device_us=m["device_busy_per_step_us"],
        busy_ratio=m["device_busy_ratio"],
        regime=report.verdict.regime,
        compute_us=m["compute_us"],
        dispatch_us=m["dispatch_us"],
        other_us=m["other_us"],
        compute_share=m["compute_share"],
        flops=flops or None,
        tflops=flops / busy * 1e-6 if flops and busy > 0 else None,
        share_of_peak=_gemm_share_of_peak(roof),
        classes=_class_rates(roof),
    )


def _gemm_share_of_peak(roof: Roofline) -> float | None:
    """Share of peak of the dtype whose GEMMs own the most device time (None off the table)."""
    rows = roof.of_class("gemm")
    return rows[0].share_of_peak if rows else None


def _class_rates(roof: Roofline) -> dict[str, dict[str, float | None]]:
    out = {}
    for op_class in CLASSES:
        summary = roof.summary(op_class)
        if summary is not None and summary.device_us > 0:
            out[op_class] = {
                "tflops": summary.achieved_flops / 1e12,
                "share_of_peak": summary.share_of_peak,
            }
    return out


def curves(points: list[SweepPoint]) -> tuple[str, list[tuple[float, float, float]]]:
    """(mode, [(value, work, overhead)]) over the successful points."""
    ok = [p for p in points if p.ok]
    if any(p.has_device for p in ok):
        return "device", [(p.value, p.device_us, p.host_us) for p in ok]
    return "host", [(p.value, p.compute_us, p.overhead_us) for p in ok]


def crossover(points: list[SweepPoint]) -> Crossover:
    """Where work overtakes overhead, interpolated on log scales between two points."""
    mode, rows = curves(points)
    work, over = (
        ("device time", "host time") if mode == "device" else ("compute", "dispatch + Python")
    )
    if not rows:
        return Crossover(mode, None, "no successful run")
    if rows[0][1] >= rows[0][2]:
        return Crossover(mode, None, f"{work} already exceeds {over} at the smallest value")
    for (x0, w0, o0), (x1, w1, o1) in zip(rows, rows[1:], strict=False):
        if w1 >= o1:
            r0 = math.log(max(w0, 1e-9) / max(o0, 1e-9))
            r1 = math.log(max(w1, 1e-9) / max(o1, 1e-9))
            t = -r0 / (r1 - r0) if r1 != r0 else 1.0
            x = math.exp(math.log(x0) + t * (math.log(x1) - math.log(x0)))
            return Crossover(mode, x, f"{work} exceeds {over} from about {x:.3g}")
    return Crossover(mode, None, f"{work} stays below {over} over the whole range")


def sweep_dict(
    workload: str, param: str, points: list[SweepPoint], cross: Crossover
) -> dict[str, Any]:
    return {
        **signature("sweep"),  # `explain DIR` knows the file as ours (own_files)
        "workload": workload,
        "parameter": param,
        "crossover": asdict(cross),
        "points": [asdict(p) for p in points],
    }


# ---- running the points ----------------------------------------------------
#: `kinetoscope profile` options the sweep sets itself, unless given as fixed options.
SWEEP_DEFAULTS = {"--record-shapes": [], "--warmup": ["3"]}


def format_value(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def profile_argv(workload: str, param: str, value: float, fixed: list[str], out: Path) -> list[str]:
    """The `kinetoscope profile` command line of one point of the sweep.

    Shapes are recorded (achieved FLOP/s needs them) and a few warm-up
    iterations run first, so one-time costs do not bend the curve; fixed
    options may override both.
    """
    argv = [sys.executable, "-m", "kinetoscope", "profile", workload]
    argv += ["--" + param.replace("_", "-"), format_value(value), "--out", str(out)]
    for option, args in SWEEP_DEFAULTS.items():
        if not any(f == option or f.startswith(option + "=") for f in fixed):
            argv += [option, *args]
    return argv + fixed


def check_fixed(param: str, fixed: list[str]) -> None:
    """Fixed options must not set what the sweep varies or where it writes."""
    for option in ("--" + param.replace("_", "-"), "--out"):
        if any(f == option or f.startswith(option + "=") for f in fixed):
            raise UsageError(f"{option} is set by the sweep; drop it from the fixed options")


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else "no output"


def run_point(argv: list[str], value: float, timeout: float) -> SweepPoint:
    """Profile one value in a subprocess and measure its trace (a failure is the point's error)."""
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return SweepPoint(value, error=f"timed out after {timeout:g} s")
    if res.returncode != 0:
        return SweepPoint(value, error=f"exit {res.returncode}: {_last_line(res.stderr)}")
    traces = re.findall(r"^trace: (.+)$", res.stdout, re.M)
    files = [f.strip() for f in re.findall(r"^(?:trace|table): (.+)$", res.stdout, re.M)]
    if not traces:
        return SweepPoint(value, error="profile wrote no trace")
    try:
        point = measure(load(traces[-1].strip()), value)
    except KinetoscopeError as exc:
        point = SweepPoint(value, trace=traces[-1], error=str(exc))
    point.files = files
    return point
