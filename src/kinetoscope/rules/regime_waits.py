"""Regimes named by where host time goes: data-bound, sync-bound, compile-window.

`rules.verdict.classify` decides (so exactly one regime fires and it matches
the verdict line); these rules show the evidence: the host-time decomposition
(`analysis.hosttime`) and the events behind the dominant part.
"""

from __future__ import annotations

from ..analysis.compile import compile_events
from ..analysis.dataloader import data_waits
from ..analysis.stepmap import step_of
from ..analysis.syncs import sync_sites
from ..formatting.units import count, fmt_pct, fmt_us
from .base import Evidence, Finding, event_evidence, rule
from .training import DATA_WAIT, SYNC_WAIT, loader_advice
from .verdict import DEFAULTS, RegimeCall, classify


def _decomposition(call: RegimeCall) -> list[Evidence]:
    """The four parts of host time, and the device's share of the window."""
    out = [
        Evidence(
            f"host time per step: {call.decomposition} (shares of the {fmt_us(call.window_us)} "
            "window)",
            value=call.shares["data_share"] + call.shares["sync_share"],
            unit="share waiting",
        )
    ]
    if call.device_busy_us <= 0:
        return out  # no device: nothing idled, the parts above are the whole story
    out += [
        Evidence(
            "dispatch + launch while the device idled: "
            f"{fmt_pct(call.shares['dispatch_exposed_share'])} of the window; Python/other "
            f"while it idled: {fmt_pct(call.shares['other_exposed_share'])}",
            value=call.shares["dispatch_exposed_share"],
            unit="share",
        ),
        Evidence(
            f"device busy {fmt_pct(call.device_window_ratio)} of the window",
            value=call.device_window_ratio,
            unit="share",
        ),
    ]
    return out


def _measured(call: RegimeCall, rule_id: str) -> dict:
    keys = ("data_share", "sync_share", "dispatch_share", "other_share", "compile_share")
    return {
        **{k: round(call.shares[k], 4) for k in keys},
        "device_busy_ratio": round(call.device_window_ratio, 4),
        "min_share": call.min_shares[rule_id],
    }


@rule(
    "data-bound",
    "regime",
    "waiting for the next batch is the largest part of the step and >= min_share of it",
    **DEFAULTS["data-bound"],
)
def data_bound(ctx) -> list[Finding]:
    call = classify(ctx.trace, ctx.config)
    if call.regime != "data-bound":
        return []
    trace = ctx.trace
    evidence = _decomposition(call)
    for w in sorted(ctx.analysis(data_waits), key=lambda w: -w.wait_us)[:3]:
        if w.longest >= 0:
            evidence.append(
                event_evidence(
                    trace,
                    w.longest,
                    f"{fmt_us(w.wait_us)} waiting for data ({fmt_pct(w.share)} of the step)",
                    step=w.step,
                    value=w.wait_us,
                    unit="us",
                )
            )
    (found,) = _wait_verdict(
        call,
        "data-bound",
        "data_share",
        "Data-bound: waiting for the next batch takes {share} of the step",
        explanation=(
            "Most of each step is spent inside DataLoader.__next__: the model waits for "
            "its input. Until that wait is gone, the compute and dispatch numbers describe "
            "a starved loop, not the model."
        ),
        suggestion=(
            loader_advice(trace)
            + f" Then profile again for the {'device' if trace.has_device else 'compute'} verdict."
        ),
        evidence=evidence,
    )
    found.cause = (DATA_WAIT,)  # the wait dataloader-bound names (rules.merge folds them)
    return [found]


def _wait_verdict(
    call, regime: str, share_key: str, headline: str, explanation: str, suggestion: str, evidence
) -> list[Finding]:
    """The critical finding of a wait regime: one shape for data-bound and sync-bound, so
    their titles, impact and measured values cannot drift apart."""
    share = call.shares[share_key]
    return [
        Finding(
            id=regime,
            severity="critical",
            title=(
                headline.format(share=fmt_pct(share))
                + f" (>= {fmt_pct(call.min_shares[regime], 0)}), more than any other part"
            ),
            explanation=explanation,
            suggestion=suggestion,
            impact_us=share * call.window_us / call.step_count,
            evidence=evidence,
            measured=_measured(call, regime),
        )
    ]


@rule(
    "sync-bound",
    "regime",
    "host time blocked in real device syncs is the largest part of the step, >= min_share",
    **DEFAULTS["sync-bound"],
)
def sync_bound(ctx) -> list[Finding]:
    call = classify(ctx.trace, ctx.config)
    if call.regime != "sync-bound":
        return []
    trace = ctx.trace
    evidence = _decomposition(call)
    for site in sorted(ctx.analysis(sync_sites), key=lambda s: -s.wait_us)[:3]:
        frame = f", from {trace.name(site.frame)}" if site.frame >= 0 else ""
        evidence.append(
            event_evidence(
                trace,
                site.index,
                f"{trace.name(site.index)} blocked {fmt_us(site.wait_us)} in {site.call}{frame}",
                step=site.step,
                value=site.wait_us,
                unit="us",
            )
        )
    (found,) = _wait_verdict(
        call,
        "sync-bound",
        "sync_share",
        "Sync-bound: the host is blocked in device syncs for {share} of the step",
        explanation=(
            "The host stops at each sync until the device has drained its queue, then the "
            "device idles while the host prepares the next work: host and device take turns "
            "instead of overlapping."
        ),
        suggestion=(
            "Remove .item(), .cpu(), .tolist() and print(tensor) from the loop (accumulate "
            "on the device, read values once every N steps), copy with non_blocking=True "
            "from pinned memory, and drop torch.cuda.synchronize() outside timing code."
        ),
        evidence=evidence,
    )
    found.cause = (SYNC_WAIT,)  # the wait host-sync names, site by site (rules.merge folds them)
    return [found]


@rule(
    "compile-window",
    "regime",
    "torch.compile compiled during at least min_share of the window: no steady-state verdict",
    **DEFAULTS["compile-window"],
)
def compile_window(ctx) -> list[Finding]:
    call = classify(ctx.trace, ctx.config)
    if call.regime != "compile-window":
        return []
    trace = ctx.trace
    events = ctx.analysis(compile_events)
    evidence = [
        event_evidence(
            trace,
            i,
            f"{trace.name(i)}: {fmt_us(float(trace.dur[i]))}",
            step=step_of(trace, float(trace.ts[i])),
            value=float(trace.dur[i]),
            unit="us",
        )
        for i in sorted(events.tolist(), key=lambda i: -trace.dur[i])[:3]
    ]
    share = call.shares["compile_share"]
    return [
        Finding(
            id="compile-window",
            severity="critical",
            title=(
                f"Compile window: torch.compile compiled for {fmt_pct(share)} of the window "
                f"({count(len(events), 'compilation')}); no steady-state verdict"
            ),
            explanation=(
                "Dynamo and Inductor were tracing and generating code during most of the "
                "profiled window. Step times, host/device balance and kernel gaps describe "
                "compilation, not the program's steady state."
            ),
            suggestion=(
                "Profile after warmup: run the compiled function a few times before the "
                "profiler records (schedule(wait=1, warmup=2, active=3), or loop first)."
            ),
            impact_us=0.0,
            evidence=_decomposition(call) + evidence,
            measured=_measured(call, "compile-window"),
        )
    ]
