"""Advice that fits the trace: which fixes apply to the device and the window recorded.

CUDA graphs (`torch.compile(mode="reduce-overhead")`, `torch.cuda.graphs`) replay a
captured launch sequence with one call: they help only when kernels exist, the
host's launch path is the bottleneck (an overhead-bound window) and the window is
a steady state (no compilation inside it, which changes the launch sequence and
dominates the host time). On a host-only trace they do not exist at all.
"""

from __future__ import annotations

from ..analysis.compile import compile_events
from .verdict import classify


def cuda_graphs_fit(ctx) -> bool:
    """Whether CUDA-graph advice applies: kernels recorded, no compilation in the window,
    and the window is overhead-bound (computed once per trace)."""
    key = ("cuda-graphs-fit",)
    if key not in ctx.cache:
        trace = ctx.trace
        ctx.cache[key] = (
            bool(len(trace.kernels))
            and not len(ctx.analysis(compile_events))
            and classify(trace, ctx.config).regime == "overhead-bound"
        )
    return ctx.cache[key]
