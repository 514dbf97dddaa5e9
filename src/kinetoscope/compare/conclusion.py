"""One paragraph in plain words: how much faster or slower B is, and where it comes from.

The paragraph answers, in order: what differs in the environment (the device
first: another vendor or model makes every later number a comparison of two
machines, not of two programs; then the job's world size, runtime versions and
settings); the speed ratio per step; which part of the step changed (device
busy, dispatch, data wait, sync wait, each judged by a bootstrap interval of
the median difference over the two sets of steps, so a change the steps'
variation explains is not called a gain);
where the host now waits for the device (blocking calls, over the whole
window); whether the device does the same work (same kernels) or different
work, by type, or why that cannot be told (different vendors, no device lane);
which host ops appeared or vanished; how the verdict and findings moved. All
of it before any kernel name: a kernel that changed is a consequence of the
machine, the job and the waits, rarely their cause.
"""

from __future__ import annotations

from ..formatting.units import fmt_us
from .decompose import cause
from .diff_model import TraceDiff
from .shift import MIN_STEPS
from .types import summary

#: Ratios closer to 1 than this are "about the same".
SAME_SPEED = 0.05


def same_speed(a: float, b: float) -> bool:
    return abs(a / b - 1) <= SAME_SPEED


def times(ratio: float) -> str:
    """A speed ratio as people write it: 1.3, 14, 150 (two significant digits, never
    an exponent)."""
    return f"{ratio:.2g}" if ratio < 100 else f"{float(f'{ratio:.2g}'):.0f}"


def _speed(d: TraceDiff) -> str:
    a, b = d.a.step_time_us, d.b.step_time_us
    per = "per step" if d.a.has_steps and d.b.has_steps else "over the trace window (no steps)"
    numbers = f"({fmt_us(a, 1)} -> {fmt_us(b, 1)}, median of {d.a.steps} and {d.b.steps} steps)"
    if a <= 0 or b <= 0:
        return f"Step time cannot be compared {numbers}."
    if same_speed(a, b):
        return f"B takes about as long as A {per} {numbers}."
    if b < a:
        return f"B is {times(a / b)}x faster {per} {numbers}."
    return f"B is {times(b / a)}x slower {per} {numbers}."


_DEVICE_CHANGE = {
    "vendor": "another vendor's GPU",
    "model": "another GPU model",
    "count": "another number of GPUs visible",
}


def _environment(d: TraceDiff) -> str:
    env = d.environment
    shown = ("devices", "vendor", "world size")
    rest = [r for r in env.differences if r.field not in shown]
    others = "; ".join(f"{r.field} {r.a} -> {r.b}" for r in rest)
    world = next((r for r in env.differences if r.field == "world size"), None)
    job = (
        f"The job's size changed: A ran as {world.a}, B as {world.b} (the trace's "
        "distributedInfo), so each rank's share of the work and its collectives differ."
        if world
        else ""
    )
    if env.device_change:
        head = (
            f"The device changed ({_DEVICE_CHANGE[env.device_change]}): A ran on "
            f"{env.devices_a}, B on {env.devices_b}, so every difference below mixes the "
            "program with the hardware."
        )
        also = f"Also different: {others}." if others else ""
        return " ".join(x for x in (head, job, also) if x)
    if others or job:
        differs = f"The environment differs: {others}." if others else ""
        return " ".join(x for x in (job, differs) if x)
    return (
        "No difference in the recorded environment "
        "(devices, runtime versions, profiler settings, steps)."
    )


def _interval(c) -> str:
    return f"95% interval {_signed(c.low_us)} to {_signed(c.high_us)}"


def _judged(c) -> str:
    """How a part's change reads: its figure and what the interval says of it."""
    change = f"{c.words} {_signed(c.delta_us)}"
    if c.status == "none":
        return f"{c.words} unchanged"
    if c.status == "unmeasured":
        return change
    if c.status == "noise":
        return f"{change} (noise: {_interval(c)})"
    if c.status == "negligible":
        return f"{change} (under 1% of the step)"
    return f"{change} ({_interval(c)})"


def _decomposition(d: TraceDiff) -> str:
    """The per-step change, part by part, each judged over the two sets of steps."""
    if not d.decomposition:
        return ""
    step, parts = d.decomposition[0], d.decomposition[1:]
    if all(c.status == "none" for c in d.decomposition):
        return "Nothing changed: every part of the step is equal in both runs."
    listed = "; ".join(_judged(c) for c in parts)
    lead = (
        "Per step (the median step's parts, which add up to it; device busy, the median "
        "over steps, runs under them)"
    )
    text = f"{lead}: {listed}."
    device_paced = [name for name, run in (("A", d.a), ("B", d.b)) if run.device_paced]
    if device_paced:
        text += (
            f" In {' and '.join(device_paced)} the device's busy time outlasts the host's "
            "window: the host parts add up to the window, and the step lasts as long as the "
            "device's work."
        )
    fewest = min(d.a.steps, d.b.steps)
    if step.noise_us is None:
        text += " With one step per run there is no step-to-step spread: treat these as unverified."
    elif fewest < MIN_STEPS:
        text += (
            f" With {fewest} step{'s' if fewest != 1 else ''} in a run no interval can be "
            "computed (it needs "
            f"{MIN_STEPS}): treat these as unverified."
        )
    if step.status == "noise":
        return (
            f"{text} The step time moved {_signed(step.delta_us)}, but the two runs' steps "
            f"overlap and the median difference could be zero ({_interval(step)}): that is "
            "noise, not a gain or a loss."
        )
    why = cause(d.decomposition)
    verb = "gain" if step.delta_us < 0 else "loss"
    if step.status in ("gain", "loss"):
        verb = step.status
        text += (
            f" The step time moved {_signed(step.delta_us)}: a {verb} ({_interval(step)}, "
            f"over {d.a.steps} and {d.b.steps} steps)."
        )
    if why is None:
        return text
    numbers = f"{fmt_us(why.a_us, 1)} -> {fmt_us(why.b_us, 1)} per step"
    if step.status == "unmeasured":  # too few steps: a direction, not a verdict
        return (
            f"{text} If the step's {_signed(step.delta_us)} is real, it comes mostly from "
            f"{why.words}: {numbers}."
        )
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


def _waits(d: TraceDiff) -> str:
    """Where the host blocks on the device, over each whole window (steps or not): a new
    wait is said before any kernel, since it can cost more than every kernel change."""
    a, b = d.waits
    if not a.total_us and not b.total_us:
        return ""
    if abs(b.total_us - a.total_us) < max(0.01 * max(a.window_us, b.window_us), 1.0):
        return ""

    def run(w) -> str:
        if not w.total_us:
            return "none"
        top = f", mostly {w.top_call}" + (f" in {w.top_site}" if w.top_site else "")
        return f"{fmt_us(w.total_us, 1)} in {w.sites} blocking call(s){top}"

    more = "more" if b.total_us > a.total_us else "less"
    return (
        f"The host waits {more} for the device in blocking calls over the trace: "
        f"A {run(a)}; B {run(b)}."
    )


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
        _waits(d),
        _device(d),
        _types(d),
        _ops(d),
        _verdict(d),
    ]
    return " ".join(s for s in sentences if s)
