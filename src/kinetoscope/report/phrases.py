"""Phrases the text, Markdown and HTML renderers share, so each says the same thing."""

from __future__ import annotations

from ..formatting.units import fmt_us
from .evidence import short_name
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
        line += f"; device busy {m['device_busy_ratio'] * 100:.1f}% of the window (the account)"
    return line


#: The account's classes and their CSS class, in the order every renderer lists them.
ACCOUNT_CSS = {
    "device": "device",
    "python": "other",
    "dispatch": "dispatch",
    "data": "data",
    "sync_stall": "sync",
    "external": "external",
    "one_time": "once",
    "untraced": "untraced",
    "profiler": "profiler",
}


def account_line(report: Report) -> str:
    """`device busy 72.0%, dispatch + launch 24.2%, ... of the 838 ms window`: the window
    account, every class of at least 0.05% (the shares add up to 100%)."""
    shares, words = report.verdict.account, report.decomposition_words
    parts = [f"{words.get(c, c)} {v * 100:.1f}%" for c, v in shares.items() if v >= 0.0005]
    return ", ".join(parts) + f" of the {fmt_us(report.trace.window['dur_us'])} window"


def path_rows(report: Report, limit: int = 5) -> list[dict]:
    """The critical path's largest parts, each with its class in words."""
    words = report.decomposition_words
    return [
        {**p, "words": words.get(p["class"], p["class"]), "css": ACCOUNT_CSS.get(p["class"], "")}
        for p in report.critical_path.get("parts", [])[:limit]
    ]


def path_line(row: dict, per_step: bool) -> str:
    """One part of the path: `34.1% device: volta_sgemm (286 ms in 12 pieces, from +1.2 ms;
    shortening it saves at most 57 ms per step)`."""
    saving = fmt_us(row["saving_per_step_us"]) + (" per step" if per_step else "")
    return (
        f"{row['share'] * 100:.1f}% {row['words']}: {short_name(row['name'])} "
        f"({fmt_us(row['us'])} in "
        f"{row['segments']} piece{'s' if row['segments'] != 1 else ''}, first at "
        f"+{fmt_us(row['first_us'])}; shortening it saves at most {saving})"
    )
