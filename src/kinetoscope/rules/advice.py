"""Advice that fits the trace: which fixes apply to the device and the window recorded.

CUDA graphs (`torch.compile(mode="reduce-overhead")`, `torch.cuda.graphs`) replay a
captured launch sequence with one call: they help only when kernels exist, the
host's launch path is the bottleneck (an overhead-bound window) and the window is
a steady state (no compilation inside it, which changes the launch sequence and
dominates the host time). On a host-only trace they do not exist at all, and a run that
already replays graphs (`cudaGraphLaunch` / `hipGraphLaunch` in the trace: an H100 run of
compile mode reduce-overhead was told to "try mode='reduce-overhead'") is not told again.
"""

from __future__ import annotations

import numpy as np

from ..analysis.compile import CACHE_LOOKUP, GRAPH_CALL_RE, REGION_RE, compile_events
from ..analysis.kernel_names import decoded
from ..trace import Trace
from ..trace.categories import GRAPH_LAUNCHES
from .verdict import classify


def cuda_graphs_fit(ctx) -> bool:
    """Whether CUDA-graph advice applies: kernels recorded, no graph replayed, no
    compilation in the window, and the window is overhead-bound. The first three are the
    trace's (kept by it, `memo`); the regime depends on the configured thresholds, so it
    is asked each time (its figures are the trace's memoized stats)."""
    trace = ctx.trace
    return trace.memo(_graphs_could_be_added) and (
        classify(trace, ctx.config).regime == "overhead-bound"
    )


def _graphs_could_be_added(trace: Trace) -> bool:
    replays = trace.name_ids_matching(lambda n: n in GRAPH_LAUNCHES)
    return (
        bool(len(trace.kernels))
        and not len(trace.memo(compile_events))
        and not np.isin(trace.name_id, replays).any()
    )


def compiled_run(ctx) -> bool:
    """Whether the run already uses torch.compile, so advice to compile would tell it to do
    what it does: kinetoscope's metadata says so, or the trace holds Dynamo/Inductor events
    (compilation, compiled regions, `## Call CompiledFxGraph ##`) or Inductor's Triton
    kernels (`triton_poi_...`: a hand-written Triton kernel is not torch.compile)."""
    return ctx.trace.memo(_compiled_run)


def _compiled_run(trace: Trace) -> bool:
    meta = trace.meta.kinetoscope or {}
    marks = trace.name_ids_matching(
        lambda n: bool(REGION_RE.match(n) or GRAPH_CALL_RE.match(n)) or n == CACHE_LOOKUP
    )
    inductor = any(
        decoded(trace, trace.names[i]).triton_kind for i in np.unique(trace.name_id[trace.kernels])
    )
    return bool(meta.get("compile") or len(marks) or len(trace.memo(compile_events)) or inductor)


#: what to say instead of "torch.compile it" to a run that already compiles: the work the
#: finding is about ran outside its compiled code
COMPILED_ALREADY = (
    "the run already uses torch.compile, so this work runs outside its compiled code: find "
    "the graph breaks (TORCH_LOGS=graph_breaks) and compile the code around them"
)


def fuse_with_compile(ctx, eager: str) -> str:
    """`eager` (advice to fuse with torch.compile) on an eager run; on a run that already
    compiles (`compiled_run`), where the compiler has not reached instead."""
    return COMPILED_ALREADY if compiled_run(ctx) else eager
