"""One paragraph in plain words: how much faster or slower B is, and where it comes from.

The paragraph answers, in order: what differs in the environment (the device
first: another vendor or model makes every later number a comparison of two
machines, not of two programs); the speed ratio per step; which part of the
step changed (device busy, dispatch, data wait, sync wait, each against its
step-to-step noise, so a change within the noise is not called a gain);
whether the device does the same work (same kernels) or different work, by
type, or why that cannot be told (different vendors, no device lane); which
host ops appeared or vanished; how the verdict and findings moved.
"""

from __future__ import annotations

from ..units import fmt_us
from .decompose import cause
from .diff_model import TraceDiff
from .types import summary

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


_DEVICE_CHANGE = {
    "vendor": "another vendor's GPU",
    "model": "another GPU model",
    "count": "another number of GPUs visible",
}


def _environment(d: TraceDiff) -> str:
    env = d.environment
    rest = [r for r in env.differences if r.field not in ("devices", "vendor")]
    others = "; ".join(f"{r.field} {r.a} -> {r.b}" for r in rest)
    if env.device_change:
        head = (
            f"The device changed ({_DEVICE_CHANGE[env.device_change]}): A ran on "
            f"{env.devices_a}, B on {env.devices_b}, so every difference below mixes the "
            "program with the hardware."
        )
        return head + (f" Also different: {others}." if others else "")
    if others:
        return f"The environment differs: {others}."
    return (
        "No difference in the recorded environment "
        "(devices, runtime versions, profiler settings, steps)."
    )


def _decomposition(d: TraceDiff) -> str:
    """The per-step change, part by part, each with its noise figure."""
    if not d.decomposition:
        return ""
    step, parts = d.decomposition[0], d.decomposition[1:]
    if all(c.status == "none" for c in d.decomposition):
        return "Nothing changed: every part of the step is equal in both runs."

    def one(c) -> str:
        if c.status == "none":
            return f"{c.words} unchanged"
        change = f"{c.words} {_signed(c.delta_us)}"
        if c.noise_us is None:
            return change
        if c.status == "noise":
            return f"{change} (within noise, {fmt_us(c.noise_us, 1)})"
        if c.status == "negligible":
            return f"{change} (under 1% of the step)"
        return f"{change} (noise {fmt_us(c.noise_us, 1)})"

    listed = "; ".join(one(c) for c in parts)
    lead = "Per step (medians; device busy runs under the host parts, which add up to the step)"
    text = f"{lead}: {listed}."
    if step.noise_us is None:
        text += " With one step per run there is no step-to-step spread: treat these as unverified."
    elif min(d.a.steps, d.b.steps) < 4:
        text += f" With {min(d.a.steps, d.b.steps)} steps in a run the noise figures are rough."
    if step.status == "noise":
        return (
            f"{text} The step time moved {_signed(step.delta_us)}, within its step-to-step noise "
            f"({fmt_us(step.noise_us, 1)}): that is noise, not a gain or a loss."
        )
    why = cause(d.decomposition)
    if why is None:
        return text
    verb = "gain" if step.delta_us < 0 else "loss"
    numbers = f"{fmt_us(why.a_us, 1)} -> {fmt_us(why.b_us, 1)} per step"
    return f"{text} The {verb} is {why.words}: {numbers}."


def _types(d: TraceDiff) -> str:
    if not d.kernels.comparable:  # nothing is like for like across vendors
        return ""
    new, gone = summary(d.types)
    parts = [f"{new} appeared" if new else "", f"{gone} vanished" if gone else ""]
    parts = [p for p in parts if p]
    return f"By type, per step: {'; '.join(parts)}." if parts else ""


def _device(d: TraceDiff) -> str:
    k = d.kernels
    dev = f"device busy {fmt_us(d.a.device_busy_us, 1)} -> {fmt_us(d.b.device_busy_us, 1)} per step"
    if d.environment.device_change == "model" and k.rows:
        return (
            "Kernels are matched by name, but a kernel of the same name runs on different "
            f"hardware in B, so its time is not like for like ({dev})."
        )
    if not k.comparable:
        kinds = ", ".join(
            f"{r.key} {fmt_us(r.us_a, 1)} -> {fmt_us(r.us_b, 1)}" for r in k.by_kind[:3]
        )
        by_kind = f"; by kind of work: {kinds} per step" if kinds else ""
        if d.environment.device_change == "vendor":  # the devices are already named
            return (
                "Kernels cannot be matched by name across vendors: each vendor's libraries and "
                "compilers name and pick their own, so no kernel is like for like "
                f"({dev}{by_kind})."
            )
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
    sentences = [
        _environment(d),
        _speed(d),
        _decomposition(d),
        _device(d),
        _types(d),
        _ops(d),
        _verdict(d),
    ]
    return " ".join(s for s in sentences if s)
