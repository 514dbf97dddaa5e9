"""Turning a cost into `impact_us`, the time per step a fix could recover.

Host-side savings only shorten a step while the device waits for the host:
when the device is busy 97% of the window, removing host work mostly makes
the host wait longer on the device. So host costs are scaled by the share of
the window in which the device idles.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..analysis.stats import trace_metrics
from ..analysis.stepmap import step_count
from ..analysis.steps import StepStats


def host_saving_per_step(ctx, host_us: float) -> float:
    """Per-step recoverable share of `host_us` spent on the host over the whole window."""
    idle = 1.0 - min(ctx.analysis(trace_metrics)["device_busy_ratio"], 1.0)
    if not ctx.trace.has_device:
        idle = 1.0
    return host_us * idle / step_count(ctx.trace)


def host_cost_hidden(steps: Iterable[StepStats]) -> bool:
    """Whether the device is busy at least as long as the host over these steps: then host
    work only makes the host wait longer on the device, and removing it saves nothing."""
    steps = list(steps)
    return sum(s.device_busy_us for s in steps) >= sum(s.host_busy_us for s in steps)
