"""Phrases the text, Markdown and HTML renderers share, so each says the same thing."""

from __future__ import annotations

from ..formatting.units import fmt_us
from .model import Report, StepRow


def no_device(report: Report) -> bool:
    """No device work was recorded: a host-only trace, or a CPU run whose math ops play
    the device in the account."""
    verdict = report.verdict
    return verdict.regime == "host-only" or bool(verdict.account_us.get("device_is_cpu"))


def device_cell(report: Report, row: StepRow) -> str:
    """A step's device busy time as a table cell: `-` where no device lane was recorded."""
    return "-" if no_device(report) else fmt_us(row.device_busy_us)


def step_counts(report: Report) -> str:
    """`3 steps` / `1 step`, or `whole trace, no ProfilerStep` without step markers."""
    steps = int(report.trace.window["steps"])
    if not steps:
        return "whole trace, no ProfilerStep"
    return f"{steps} step{'s' if steps != 1 else ''}"


def steps_line(report: Report) -> str:
    """The line under the step table: the medians, and the device share where there is one."""
    m = report.metrics
    line = (
        f"median step {fmt_us(m['step_time_us'])}, {m['kernels_per_step']:g} kernels and "
        f"{m['launches_per_step']:g} launches per step"
    )
    windows = sorted(s.dur_us for s in report.steps)
    if windows and m["step_time_us"] > windows[len(windows) // 2] * 1.01:
        line += (
            " (the device's busy time: it outlasts the host's windows, which queued the work ahead)"
        )
    if not no_device(report):
        line += f"; device busy {m['device_busy_ratio'] * 100:.1f}% of the window"
    return line
