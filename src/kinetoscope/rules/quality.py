"""Trust and communication rules: how far the trace can be believed, and how much
of each step waits on communication (docs/rules.md, "Trace quality")."""

from __future__ import annotations

from ..analysis.backward import TrainingEvidence, training_evidence
from ..analysis.quality import trace_quality
from ..analysis.resolution import resolvable, timestamp_resolution
from ..analysis.streams import stream_report
from ..formatting.units import fmt_pct, fmt_us
from .base import Evidence, Finding, rule
from .requires import need_device


def above_resolution(ctx, value_us: float, lane: str = "both") -> bool:
    """Whether a duration measured on `lane` ("host", "device" or "both": a
    host-to-device comparison) is fine enough for this trace's timestamps.
    Rules measuring microsecond gaps call this before reporting one."""
    res = ctx.analysis(timestamp_resolution)
    step = {"host": res.host_us, "device": res.device_us}.get(lane) or res.coarsest_us
    return resolvable(value_us, step)


@rule("trace-quality", "quality", "the trace itself is unreliable: skew, drops, resolution")
def trace_quality_rule(ctx) -> list[Finding]:
    quality = ctx.analysis(trace_quality)
    if quality.grade == "good":
        return []
    serious = [i for i in quality.issues if i.level != "note"]
    return [
        Finding(
            id="trace-quality",
            severity="warn" if quality.grade == "poor" else "info",
            title=f"Trace quality: {quality.grade} ({'; '.join(i.id for i in serious)})",
            explanation=(
                "Some numbers in this report rest on events the profiler recorded "
                "imperfectly: " + "; ".join(i.text for i in serious) + "."
            ),
            suggestion=(
                "Read the affected figures with that margin. Record again with a current "
                "torch/Kineto (nanosecond timestamps, one clock for host and device), fewer "
                "active steps per cycle so CUPTI buffers do not fill, and no early stop."
            ),
            impact_us=0.0,
            evidence=[
                Evidence(i.text, value=i.value_us if i.value_us is not None else float(i.count))
                for i in quality.issues
            ],
            measured={"grade": quality.grade, "issues": [i.id for i in serious]},
        )
    ]


@rule(
    "exposed-communication",
    "quality",
    "communication kernels that no compute overlaps take a large share of the step",
    min_share=0.15,
)
def exposed_communication(ctx) -> list[Finding]:
    trace = ctx.trace
    need_device(trace)
    report = ctx.analysis(stream_report)
    if not report.has_communication:
        return []  # a single-device run: nothing to overlap, the rule does not apply
    limit = ctx.threshold("min_share")
    flagged = [s for s in report.steps if s.exposed_share >= limit]
    if not flagged:
        return []
    worst = max(flagged, key=lambda s: s.exposed_share)
    per_step = sum(s.exposed_us for s in report.steps) / max(len(report.steps), 1)
    hidden = report.hidden_share or 0.0
    return [
        Finding(
            id="exposed-communication",
            severity="warn",
            title=(
                f"Exposed communication: {fmt_us(per_step)} per step not overlapped by compute "
                f"(up to {fmt_pct(worst.exposed_share)} of a step; threshold {fmt_pct(limit, 0)})"
            ),
            explanation=(
                f"Communication kernels ran for {fmt_us(report.communication_us)} in the window "
                f"and only {fmt_pct(hidden)} of that time had compute running beside them. "
                "While no compute runs, the step waits on the collective, or on the slowest "
                "rank, since a collective kernel spins until its peers arrive."
            ),
            suggestion=_overlap_advice(ctx.analysis(training_evidence)),
            impact_us=per_step,
            evidence=[
                Evidence(
                    f"step #{s.step}: {fmt_us(s.communication_us)} communication, "
                    f"{fmt_us(s.exposed_us)} exposed ({fmt_pct(s.exposed_share)} of the step)",
                    step=s.step,
                    value=s.exposed_us,
                    unit="us",
                )
                for s in flagged[:5]
            ],
            measured={
                "exposed_us_per_step": round(per_step, 3),
                "worst_exposed_share": round(worst.exposed_share, 4),
                "hidden_share": round(hidden, 4),
                "threshold_min_share": limit,
            },
        )
    ]


_COMPARE_RANKS = (
    "compare ranks (kinetoscope explain RANKS_DIR/) to see whether the wait is a straggler."
)


def _overlap_advice(trained: TrainingEvidence) -> str:
    """Gradient-bucket and FSDP advice only where a backward ran: a forward-only window's
    collectives are the forward's own (tensor, pipeline or expert parallel), which no
    gradient bucket touches."""
    if trained.backward:
        return (
            "Overlap communication with compute: DDP gradient buckets (bucket_cap_mb) "
            "so reduction starts during backward, FSDP prefetch (forward_prefetch, "
            "backward_prefetch), no syncs between backward and the optimizer; " + _COMPARE_RANKS
        )
    return (
        f"This window is forward-only ({trained.said()}): its collectives belong to the "
        "forward (tensor, pipeline or expert parallel), so gradient-bucket advice does not "
        "apply. Overlap them with independent compute where the framework offers it "
        "(micro-batch or two-batch overlap, async tensor parallel), or use fewer ranks per "
        "model when the messages are small; " + _COMPARE_RANKS
    )
