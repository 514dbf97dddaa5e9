"""One paragraph in plain words: how much faster or slower B is, and where it comes from.

The paragraph answers, in order: the speed ratio per step; whether the device
does the same work (same kernels) or different work, or why that cannot be
told (different vendors, no device lane); whether the change is host or device
time; which host ops appeared or vanished; how the verdict and findings moved.
"""

from __future__ import annotations

from ..units import fmt_us
from .diff import TraceDiff

#: Ratios closer to 1 than this are "about the same".
SAME_SPEED = 0.05


def same_speed(a: float, b: float) -> bool:
    return abs(a / b - 1) <= SAME_SPEED


def _speed(d: TraceDiff) -> str:
    a, b = d.a.step_time_us, d.b.step_time_us
    per = "per step" if d.a.has_steps and d.b.has_steps else "over the trace window (no steps)"
    numbers = f"({fmt_us(a, 1)} -> {fmt_us(b, 1)}, median of {d.a.steps} and {d.b.steps} steps)"
    if a <= 0 or b <= 0:
        return f"Step time cannot be compared {numbers}."
    if same_speed(a, b):
        return f"B takes about as long as A {per} {numbers}."
    if b < a:
        return f"B is {a / b:.2g}x faster {per} {numbers}."
    return f"B is {b / a:.2g}x slower {per} {numbers}."


def _device(d: TraceDiff) -> str:
    k = d.kernels
    dev = f"device busy {fmt_us(d.a.device_busy_us, 1)} -> {fmt_us(d.b.device_busy_us, 1)} per step"
    if not k.comparable:
        kinds = ", ".join(
            f"{r.key} {fmt_us(r.us_a, 1)} -> {fmt_us(r.us_b, 1)}" for r in k.by_kind[:3]
        )
        by_kind = f"; by kind of work: {kinds} per step" if kinds else ""
        return f"{k.reason[0].upper()}{k.reason[1:]} ({dev}{by_kind})."
    if not k.rows:
        return "Neither trace recorded device kernels, so the comparison is all host time."
    new, gone, moved = k.by_status("new"), k.by_status("gone"), k.by_status("changed")
    replaced = k.by_status("replaced")
    top = k.rows[0].display
    if not new and not gone and not moved and not replaced:
        return (
            f"The device does the same work: the same {len(k.rows)} kernel(s) with the same "
            f"counts and durations (top: {top})."
        )
    if not new and not gone and not replaced:
        m = moved[0]
        return (
            f"The device runs the same {len(k.rows)} kernel(s) but {len(moved)} changed count "
            f"or duration (largest: {m.display}, {fmt_us(m.us_a, 1)} -> {fmt_us(m.us_b, 1)} "
            f"per step; {dev})."
        )
    parts = []
    if replaced:
        r = replaced[0]
        change = f": {r.change}" if r.change else ""
        parts.append(
            f"{len(replaced)} replaced by another variant "
            f"(top: {r.display} -> {r.replacement}{change})"
        )
    if new:
        parts.append(f"{len(new)} new (top: {new[0].display})")
    if gone:
        parts.append(f"{len(gone)} gone (top: {gone[0].display})")
    if moved:
        parts.append(f"{len(moved)} changed")
    return f"The device does different work: {', '.join(parts)} kernel(s); {dev}."


def _where(d: TraceDiff) -> str:
    a, b = d.a, d.b
    dstep = b.step_time_us - a.step_time_us
    if a.step_time_us <= 0 or b.step_time_us <= 0 or same_speed(a.step_time_us, b.step_time_us):
        return ""
    dhost = b.host_time_us - a.host_time_us
    ddev = b.device_busy_us - a.device_busy_us
    verb = "gain" if dstep < 0 else "loss"
    numbers = f"host {_signed(dhost)}, device {_signed(ddev)} per step"
    if not a.device_busy_us and not b.device_busy_us:
        return f"The {verb} is host time ({numbers})."
    small, large = sorted((abs(dhost), abs(ddev)))
    if dhost * ddev > 0 and small >= 0.5 * large:
        return f"The {verb} is both host and device time ({numbers})."
    if abs(dhost) >= abs(ddev):
        return f"The {verb} is host time ({numbers})."
    return f"The {verb} is device time ({numbers})."


def _signed(us: float) -> str:
    return ("+" if us >= 0 else "-") + fmt_us(abs(us), 1)


def _ops(d: TraceDiff) -> str:
    def names(status: str) -> str:
        rows = sorted(
            (r for r in d.ops if r.status == status),
            key=lambda r: -max(r.self_us_a, r.self_us_b),
        )
        shown = ", ".join(
            f"{r.name} ({fmt_us(max(r.self_us_a, r.self_us_b), 1)} self CPU/step)" for r in rows[:3]
        )
        more = f" and {len(rows) - 3} more" if len(rows) > 3 else ""
        return shown + more

    gone, new = names("vanished"), names("appeared")
    parts = []
    if gone:
        parts.append(f"{gone} vanished")
    if new:
        parts.append(f"{new} appeared")
    if not parts:
        moved = [r for r in d.ops if r.status == "changed"]
        if not moved:
            return "The host runs the same ops."
        r = moved[0]
        return (
            f"The host runs the same ops; the largest change is {r.name} "
            f"({fmt_us(r.self_us_a, 1)} -> {fmt_us(r.self_us_b, 1)} self CPU per step)."
        )
    return "On the host, " + "; ".join(parts) + "."


def _verdict(d: TraceDiff) -> str:
    parts = []
    if d.a.regime and d.b.regime:
        if d.a.regime != d.b.regime:
            parts.append(f"The verdict moved from {d.a.regime} to {d.b.regime}")
        else:
            parts.append(f"Both runs are {d.a.regime}")
    regimes = {d.a.regime, d.b.regime}  # already said above
    gone = [r.id for r in d.findings if r.status == "disappeared" and r.id not in regimes]
    new = [r.id for r in d.findings if r.status == "appeared" and r.id not in regimes]
    if gone:
        parts.append(f"resolved: {', '.join(gone)}")
    if new:
        parts.append(f"new: {', '.join(new)}")
    return ("; ".join(parts) + ".") if parts else ""


def conclude(d: TraceDiff) -> str:
    sentences = [_speed(d), _device(d), _where(d), _ops(d), _verdict(d)]
    return " ".join(s for s in sentences if s)
