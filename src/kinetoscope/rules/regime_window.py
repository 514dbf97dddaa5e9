"""Regimes that say the window is not a steady state: compile-window, cold-window, and
not-judged (the capture itself cannot be judged).

`rules.verdict.classify` decides from the window account; these rules show what holds
the window instead of a loop: the compilations, the one-time calls (context start-up,
module loading, library set-up, a first launch), or the capture's own failure.
"""

from __future__ import annotations

from ..analysis.account import sets, sources
from ..analysis.account.capture import WITHHOLD, capture_issues
from ..analysis.stepmap import step_of
from ..formatting.units import fmt_pct, fmt_us
from ..trace import Trace
from .base import Evidence, Finding, event_evidence, rule
from .verdict import DEFAULTS, ONE_TIME, RegimeCall, classify

_WARM_UP = (
    "Profile after warm-up: run the step a few times before the profiler records "
    "(torch.profiler.schedule(wait=1, warmup=2, active=3), or loop first); "
    "kinetoscope profile --warmup 3 does it for the built-in workloads."
)


def _one_time_events(trace: Trace, limit: int = 5) -> list[Evidence]:
    """The longest one-time calls, each with the time the account gave it."""
    part = classify(trace).account.parts["one_time"]
    rows = []
    for cause in sources.ONE_TIME_CAUSES:
        idx = sources.one_time_events(trace, cause)
        held = sets.covered_between(part, trace.ts[idx], trace.end[idx])
        rows += [(h, i, cause) for h, i in zip(held.tolist(), idx.tolist(), strict=True) if h > 0]
    rows.sort(key=lambda r: -r[0])
    return [
        event_evidence(
            trace,
            i,
            f"{cause}: {trace.name(i)} held the window {fmt_us(held)} with the device idle",
            step=step_of(trace, float(trace.ts[i])),
            value=held,
            unit="us",
        )
        for held, i, cause in rows[:limit]
    ]


def _measured(call: RegimeCall, rule_id: str) -> dict:
    once = call.account.causes.get("one_time", {})
    return {
        "one_time_share": round(call.account.us("one_time") / call.window_us, 4)
        if call.window_us
        else 0.0,
        **{f"{k.replace(' ', '_').replace('-', '_')}_us": round(v, 3) for k, v in once.items()},
        "steady_us": round(call.steady_us, 3),
        "min_share": call.min_shares[rule_id],
    }


def _first_instant(call: RegimeCall) -> str:
    """`; the first 473 ms hold it, cudaLaunchKernel alone 322 ms`: how far into the window
    the one-time work reaches, and the call that held it longest."""
    part = call.account.parts["one_time"]
    window = sets.union(*call.account.parts.values())
    if not len(part[0]) or not len(window[0]):
        return ""
    reach = float(part[1][-1] - window[0][0])
    out = f"; the first {fmt_us(reach)} hold it"
    if call.longest_once:
        name, held, _at = call.longest_once
        out += f", {name} alone {fmt_us(held)}"
    return out


@rule(
    "compile-window",
    "regime",
    "compilation holds at least min_share of the window: no steady-state verdict",
    **DEFAULTS["compile-window"],
)
def compile_window(ctx) -> list[Finding]:
    call = classify(ctx.trace, ctx.config)
    if call.regime != "compile-window":
        return []
    trace = ctx.trace
    compiling = call.account.causes["one_time"].get("compilation", 0.0)
    events = sources.one_time_events(trace, "compilation")
    return [
        Finding(
            id="compile-window",
            severity="critical",
            title=(
                f"Compile window: compilation holds {fmt_pct(compiling / call.window_us)} of "
                f"the window ({len(events)} compilations); no steady-state verdict"
            ),
            explanation=(
                "Dynamo and Inductor were tracing and generating code during most of the "
                "profiled window, with the device idle. Step times, host/device balance and "
                "kernel gaps describe compilation, not the program's steady state."
            ),
            suggestion=_WARM_UP,
            impact_us=0.0,
            evidence=_one_time_events(trace),
            measured=_measured(call, "compile-window"),
            cause=(ONE_TIME,),
        )
    ]


@rule(
    "cold-window",
    "regime",
    "one-time work (context start-up, module loading, library set-up, compilation) holds "
    "at least min_share of the window: no steady-state verdict",
    **DEFAULTS["cold-window"],
)
def cold_window(ctx) -> list[Finding]:
    call = classify(ctx.trace, ctx.config)
    if call.regime != "cold-window":
        return []
    trace = ctx.trace
    once = call.account.us("one_time")
    steady = (
        f" The steady rest ({fmt_us(call.steady_us)}), as shares of the window: "
        f"{call.decomposition}."
        if call.steady_us > 0
        else " Nothing steady is left to judge."
    )
    return [
        Finding(
            id="cold-window",
            severity="critical",
            title=(
                f"Cold window: one-time work holds {fmt_pct(once / call.window_us)} of the "
                f"{fmt_us(call.window_us)} window{_first_instant(call)}; no steady-state "
                "verdict"
            ),
            explanation=(
                "Most of the window is work a running loop does once: creating the CUDA "
                "context on the first runtime call, loading each kernel's module on its "
                "first launch, setting up cuBLAS/cuDNN, compiling. A later step pays none "
                "of it, so judging this window would judge the start-up." + steady
            ),
            suggestion=_WARM_UP,
            impact_us=0.0,
            evidence=_one_time_events(trace),
            measured=_measured(call, "cold-window"),
            cause=(ONE_TIME,),
        )
    ]


@rule("not-judged", "regime", "the capture cannot be judged: the verdict is withheld")
def not_judged(ctx) -> list[Finding]:
    call = classify(ctx.trace, ctx.config)
    if call.regime != "not-judged":
        return []
    issues = [i for i in capture_issues(ctx.trace) if i.level == "poor" and i.id in WITHHOLD]
    return [
        Finding(
            id="not-judged",
            severity="critical",
            title=f"Not judged: {issues[0].text.split(':')[0]}" if issues else "Not judged",
            explanation=(
                "The capture does not hold what a verdict needs, so none is given: "
                + " ".join(f"({k + 1}) {i.text}." for k, i in enumerate(issues))
            ),
            suggestion=(
                "Record again: a window over several steady steps "
                "(torch.profiler.schedule(wait=1, warmup=2, active=3)) with "
                "activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA] on a machine "
                "with free cores."
            ),
            impact_us=0.0,
            evidence=[
                Evidence(i.text, value=float(i.value_us if i.value_us is not None else i.count))
                for i in issues
            ],
            measured={"reasons": [i.id for i in issues], "window_us": round(call.window_us, 3)},
        )
    ]
