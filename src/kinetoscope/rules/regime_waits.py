"""Regimes named by a wait that holds the steady window: data-bound, sync-bound,
external-wait.

`rules.verdict.classify` decides from the window account (so exactly one regime fires
and it matches the verdict line); these rules show the evidence: the account's steady
part and the events behind the dominant wait. A wait counts only while every device
stream idles: a host blocked on a busy device is the device's time.
"""

from __future__ import annotations

from ..analysis.account import sets
from ..analysis.account.sources import wait_events
from ..analysis.dataloader import data_waits
from ..analysis.source_lines import line_label
from ..analysis.stepmap import step_of
from ..analysis.syncs import sync_sites
from ..formatting.units import fmt_pct, fmt_us
from .base import Evidence, Finding, event_evidence, rule
from .training import DATA_WAIT, SYNC_WAIT, loader_advice
from .verdict import DEFAULTS, WAITS, RegimeCall, classify


def _decomposition(call: RegimeCall) -> list[Evidence]:
    """The steady part's classes, and what the window set apart."""
    out = [
        Evidence(
            f"the steady part is {fmt_us(call.steady_us)} of the {fmt_us(call.window_us)} "
            f"window; the window account: {call.decomposition}",
            value=call.steady_us,
            unit="us",
        )
    ]
    if call.set_apart:
        out.append(Evidence(f"set apart: {call.set_apart}"))
    return out


def _measured(call: RegimeCall, rule_id: str) -> dict:
    return {
        **{f"{c}_share_of_steady": round(v, 4) for c, v in call.steady.items()},
        "steady_us": round(call.steady_us, 3),
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
        "Data-bound: waiting for the next batch takes {share} of the steady part",
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
    call, regime: str, headline: str, explanation: str, suggestion: str, evidence
) -> list[Finding]:
    """The critical finding of a wait regime: one shape for every wait, so their titles,
    impact and measured values cannot drift apart. The saving is the wait's own account
    time: removing the wait gives back at most the time the device idled in it."""
    cls = WAITS[regime]
    share = call.steady[cls]
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
            impact_us=call.account.us(cls) / call.step_count,
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
        line = line_label(trace, site.index)
        frame = f", from {line}" if line else ""
        evidence.append(
            event_evidence(
                trace,
                site.index,
                f"{trace.name(site.index)} blocked {fmt_us(site.wait_us)} in {site.held_by}{frame}",
                step=site.step,
                value=site.wait_us,
                unit="us",
            )
        )
    (found,) = _wait_verdict(
        call,
        "sync-bound",
        "Sync-bound: the host is blocked in device syncs with the device idle for {share} "
        "of the steady part",
        explanation=(
            "The host stops at each sync and the device idles inside the wait itself: the "
            "wait's own cost (waking the thread, a launch reaching an idle device), paid at "
            "every sync. Host and device take turns instead of overlapping."
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
    "external-wait",
    "regime",
    "the host waits with every device stream idle and nothing of this trace to wait for, "
    ">= min_share of the steady part and more than any other part",
    **DEFAULTS["external-wait"],
)
def external_wait(ctx) -> list[Finding]:
    call = classify(ctx.trace, ctx.config)
    if call.regime != "external-wait":
        return []
    trace = ctx.trace
    evidence = _decomposition(call)
    waits = wait_events(trace)
    part = call.account.parts["external"]
    held = list(
        zip(
            sets.covered_between(part, trace.ts[waits], trace.end[waits]).tolist(),
            waits.tolist(),
            strict=True,
        )
    )
    for us, i in sorted(held, reverse=True)[:3]:
        if us > 0:
            evidence.append(
                event_evidence(
                    trace,
                    i,
                    f"{trace.name(i)} waited {fmt_us(us)} with every device stream idle",
                    step=step_of(trace, float(trace.ts[i])),
                    value=us,
                    unit="us",
                )
            )
    (found,) = _wait_verdict(
        call,
        "external-wait",
        "External wait: the host waits on something outside this trace for {share} of the "
        "steady part",
        explanation=(
            "The host is blocked in a runtime wait while every device stream of this trace "
            "idles: the work it waits for is not here. It is an event or copy of another "
            "process (a scheduler, a tokenizer, a peer rank), I/O, or a device this trace "
            "did not record. The device is not the bottleneck; neither is this process's "
            "Python."
        ),
        suggestion=(
            "Profile the process the wait depends on (the scheduler or the other ranks) "
            "in the same window, or record every device; the waiting call and its stack "
            "below say where this process stops."
        ),
        evidence=evidence,
    )
    return [found]
