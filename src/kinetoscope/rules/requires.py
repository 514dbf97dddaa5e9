"""What GPU-side rules need from a trace, with one wording for every rule.

The same reason and advice for every rule that cannot run for the same cause
lets a report group them ("not checked: 8 rules, no device activity recorded").
"""

from __future__ import annotations

from ..trace import Trace
from .base import NotChecked

NO_DEVICE = (
    "no device activity recorded",
    "profile with activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]",
)
NO_KERNELS = (
    "no kernels in the trace",
    "record the GPU run with ProfilerActivity.CUDA (a CUPTI counter or range profile has none)",
)
NO_LINKS = (
    "device events are not linked to launch calls (no correlation ids)",
    "record host and device activities in the same profiler session",
)


def need_device(trace: Trace) -> None:
    """Raise NotChecked unless kernels, memcpys or memsets were recorded."""
    if not trace.has_device:
        raise NotChecked(*NO_DEVICE)


def need_kernels(trace: Trace) -> None:
    """Raise NotChecked unless kernels were recorded."""
    need_device(trace)
    if not len(trace.kernels):
        raise NotChecked(*NO_KERNELS)
