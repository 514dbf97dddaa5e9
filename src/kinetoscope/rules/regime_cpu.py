"""The regime findings of a CPU run: overhead-bound, compute-bound and mixed judged on the
CPU's compute share (`RegimeCall.on_cpu`).

`rules.regime` registers the regime rules and hands a CPU run's call here, so a
run without a device is told about ops, math libraries and Python, never about
kernels, launches or a device. The share is the self time of the ops that run
the arithmetic over the window (`analysis.cpu_compute`), the thresholds the GPU
ones.
"""

from __future__ import annotations

from ..analysis.cpu_compute import math_ops
from ..analysis.window import in_window, time_by_name
from ..formatting.units import fmt_pct, fmt_us
from ..trace import Trace
from .advice import fuse_with_compile
from .base import Evidence, Finding
from .roofline import peak_evidence
from .verdict import RegimeCall


def _numbers(call: RegimeCall) -> list[Evidence]:
    return [
        Evidence("window (the profiled steps)", value=call.window_us, unit="us"),
        Evidence(
            "CPU compute in the window: self time of the ops that run the math "
            "(GEMM, convolution, attention, reductions, elementwise loops)",
            value=call.compute_us,
            unit="us",
        ),
        Evidence(
            f"CPU compute / window = {fmt_pct(call.ratio)} (overhead-bound below "
            f"{fmt_pct(call.overhead_max_ratio, 0)}, compute-bound from "
            f"{fmt_pct(call.compute_min_ratio, 0)})",
            value=call.ratio,
        ),
    ]


def _measured(call: RegimeCall, **extra) -> dict:
    return {
        "window_us": round(call.window_us, 3),
        "compute_us": round(call.compute_us, 3),
        "compute_share": round(call.ratio, 5),
        **extra,
    }


def _top_math_ops(trace: Trace, limit: int = 3) -> list[Evidence]:
    """The ops owning the most CPU compute (self time of the math ops in the window)."""
    ops = math_ops(trace)
    ops = ops[in_window(trace, trace.ts[ops])]
    whole = float(trace.self_time[ops].sum())
    return [
        Evidence(
            f"self CPU time {fmt_us(total)} ({fmt_pct(total / whole if whole > 0 else 0.0)} "
            "of the compute)",
            name=name,
            value=total,
            unit="us",
        )
        for name, total in time_by_name(trace, ops, trace.self_time[ops])[:limit]
    ]


def _evidence(ctx, call: RegimeCall) -> list[Evidence]:
    """What every CPU verdict shows: the share and its threshold, the ops owning the
    compute, and their achieved FLOP/s where shapes were recorded."""
    return _numbers(call) + _top_math_ops(ctx.trace) + peak_evidence(ctx)


def _of_window(call: RegimeCall) -> str:
    return f"the CPU computes {fmt_us(call.compute_us)} of a {fmt_us(call.window_us)} window"


def cpu_overhead_bound(ctx, call: RegimeCall) -> Finding:
    return Finding(
        id="overhead-bound",
        severity="warn",
        title=(
            f"Overhead-bound: {_of_window(call)} ({fmt_pct(call.ratio)} < "
            f"{fmt_pct(call.overhead_max_ratio, 0)})"
        ),
        explanation=(
            "Most of each step goes to Python, the dispatcher and the framework code around "
            "the ops, not to the arithmetic inside them: each op does too little work to pay "
            "for its call."
        ),
        suggestion=(
            "Give each op more work (larger batch or shapes, batched ops instead of Python "
            "loops over small tensors), "
            + fuse_with_compile(ctx, "fuse operations (torch.compile)")
            + ", or move the loop's bookkeeping out of the step."
        ),
        impact_us=max(call.window_us - call.compute_us, 0.0) / call.step_count,
        evidence=_evidence(ctx, call),
        measured=_measured(call, threshold=call.overhead_max_ratio),
    )


def cpu_compute_bound(ctx, call: RegimeCall) -> Finding:
    return Finding(
        id="compute-bound",
        severity="info",
        title=(
            f"Compute-bound: {_of_window(call)} ({fmt_pct(call.ratio)} >= "
            f"{fmt_pct(call.compute_min_ratio, 0)})"
        ),
        explanation=(
            "The step's time is spent inside the math libraries (BLAS, oneDNN, vectorized "
            "loops), not in Python or the dispatcher around them. This is the regime to aim "
            "for; the time now goes to the arithmetic itself."
        ),
        suggestion=(
            "Look at the hot ops' achieved FLOP/s, the intra-op threads "
            "(torch.get_num_threads(), one per physical core), lower precision where the CPU "
            "has it (bf16 with AMX or AVX512-BF16), fusing memory-bound ops (torch.compile), "
            "or a GPU for the big products."
        ),
        impact_us=0.0,
        evidence=_evidence(ctx, call),
        measured=_measured(call, threshold=call.compute_min_ratio),
    )


def cpu_mixed(ctx, call: RegimeCall) -> Finding:
    rest = max(call.window_us - call.compute_us, 0.0)
    return Finding(
        id="mixed",
        severity="info",
        title=f"Mixed: {_of_window(call)} ({fmt_pct(call.ratio)})",
        explanation=(
            "Neither side dominates: the ops' arithmetic takes a good part of the step, and "
            f"Python, the dispatcher and framework code the rest ({fmt_us(rest)})."
        ),
        suggestion=(
            "Look at the ops with the most self time outside the math (call-count, "
            "deep-child-cost) and at the Python between ops; larger ops or torch.compile "
            "shift the balance toward compute."
        ),
        impact_us=rest / call.step_count,
        evidence=_evidence(ctx, call),
        measured=_measured(
            call,
            overhead_threshold=call.overhead_max_ratio,
            compute_threshold=call.compute_min_ratio,
        ),
    )
