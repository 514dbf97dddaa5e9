"""CUDA-graph advice only where `cuda_graphs_fit` says it helps: kernels recorded, no
compilation in the window, and an overhead-bound window.

A CUDA graph replays a captured launch sequence with one host call, so it removes
launch cost only when the host's launch path is the bottleneck. On a compute-bound,
mixed or sync-bound window, or while torch.compile compiles, it is wrong advice.
"""

from __future__ import annotations

from functools import cache

import kinetoscope

from ..conftest import corpus

GRAPH_ADVICE = "CUDA graph"


@cache
def _advice(relative: str, **overrides) -> dict[str, str]:
    config = None
    if overrides:  # move both regime boundaries above the trace's device/host ratio
        ratio = overrides["ratio"]
        config = {
            "overhead-bound": {"max_device_ratio": ratio},
            "compute-bound": {"min_device_ratio": 2 * ratio},
        }
    report = kinetoscope.explain(corpus(relative), config=config)
    return {f.id: f.suggestion for f in report.findings} | {"regime": report.verdict.regime}


def test_overhead_bound_window_gets_graph_advice():
    # tiny_transformer_block_h100: 3 steps, the device busy 13% of the window, 16 small
    # kernels a step, no compile events
    advice = _advice("gpu/tiny_transformer_block_h100.pt.trace.json.gz")
    assert advice["regime"] == "overhead-bound"
    for rule_id in ("overhead-bound", "heavyweight-launch", "gpu-idle-breakdown"):
        assert GRAPH_ADVICE in advice[rule_id], rule_id


def test_mixed_window_with_host_wait_gets_no_graph_advice():
    # sampled_rank0: NCCL kernels ~380 ms per step, device busy well over 25% of host
    # time: the idle is mostly host wait, yet the window is not overhead-bound
    advice = _advice("gpu/sampled_rank0.json.gz")
    assert advice["regime"] == "mixed"
    assert "host wait" in advice["gpu-idle-breakdown"] or "Feed" in advice["gpu-idle-breakdown"]
    assert GRAPH_ADVICE not in advice["gpu-idle-breakdown"]


def test_mixed_window_heavyweight_launch_without_graph_advice():
    # DLRM rank 0: occupancy queries before GEMM launches, the device busy 46% of the step
    advice = _advice("multirank/dlrm_8ranks/worker0_step_12.1694128201545.pt.trace.json.gz")
    assert advice["regime"] == "mixed"
    assert GRAPH_ADVICE not in advice["heavyweight-launch"]


def test_sync_flush_advice_follows_the_regime():
    # compare_base: the final cudaDeviceSynchronize covers no device work; overhead-bound
    # by default (the device busy 1% of two 100 ms steps), compute-bound once the
    # thresholds call that share high
    default = _advice("gpu/compare_base.json.gz")
    assert default["regime"] == "overhead-bound"
    assert GRAPH_ADVICE in default["sync-flush"]
    lowered = _advice("gpu/compare_base.json.gz", ratio=0.001)
    assert lowered["regime"] == "compute-bound"
    assert GRAPH_ADVICE not in lowered["sync-flush"]
