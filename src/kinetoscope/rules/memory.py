"""Memory rules of the "Training-loop health" family: peak usage and spikes.

They read `analysis.memory.memory_timeline`, which needs `[memory]` events:
without them both rules report "not checked" with how to record them.
"""

from __future__ import annotations

from ..analysis.backward import TrainingEvidence, training_evidence
from ..analysis.memory import DeviceMemory, memory_timeline, op_label
from .base import Evidence, Finding, NotChecked, rule

FAMILY = "Training-loop health"
RECORD_ADVICE = (
    "record allocator events: torch.profiler.profile(..., profile_memory=True) "
    "(or `kinetoscope profile --profile-memory`)"
)


def fmt_bytes(n: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n:.0f} B"


def timelines(ctx) -> list[DeviceMemory]:
    found = ctx.analysis(memory_timeline)
    if not found:
        raise NotChecked("no [memory] events in the trace", RECORD_ADVICE)
    # device memory is what runs out; CPU only when nothing else was recorded
    gpu = [m for m in found if m.device != "cpu"]
    return gpu or found


@rule("memory-peak", FAMILY, "allocated-memory peak and the op at the peak", warn_share=0.9)
def memory_peak(ctx) -> list[Finding]:
    trace = ctx.trace
    warn_share = ctx.threshold("warn_share")
    starts = {s.number: s.start for s in trace.steps}
    trained = ctx.analysis(training_evidence)
    findings = []
    for m in timelines(ctx):
        capacity = _capacity(trace, m)
        reserved_peak = float(m.reserved.max()) if m.reserved is not None else None
        used = reserved_peak if reserved_peak is not None else m.peak_bytes
        share = used / capacity if capacity else None
        where = op_label(trace, m.peak.op)
        relative = " (relative to recording start)" if m.relative else ""
        evidence = [
            Evidence(
                f"peak {fmt_bytes(m.peak_bytes)} allocated{relative} right after "
                f"{fmt_bytes(m.peak.nbytes)} for {where}",
                name=trace.name(m.peak.op) if m.peak.op >= 0 else "[memory]",
                ts_us=trace.rel(m.peak.ts),
                step=m.peak.step,
                value=m.peak_bytes,
                unit="bytes",
            )
        ]
        evidence.append(Evidence(f"training: {trained.said()}", name=trained.example or None))
        for a in m.largest[:5]:
            evidence.append(
                Evidence(
                    f"allocation of {fmt_bytes(a.nbytes)} by {op_label(trace, a.op)}",
                    name=trace.name(a.op) if a.op >= 0 else "[memory]",
                    ts_us=trace.rel(a.ts),
                    step=a.step,
                    value=float(a.nbytes),
                    unit="bytes",
                )
            )
        for c in m.churn[:10]:
            evidence.append(
                Evidence(
                    f"in the step: {fmt_bytes(c.allocated_bytes)} allocated, "
                    f"{fmt_bytes(c.freed_bytes)} freed, net {fmt_bytes(c.net_bytes)}, "
                    f"peak {fmt_bytes(c.peak_bytes)}",
                    name=f"ProfilerStep#{c.step}",
                    ts_us=trace.rel(starts[c.step]),
                    step=c.step,
                    value=float(c.allocated_bytes),
                    unit="bytes",
                )
            )
        measured = {
            "training": trained.training,
            "device": m.device,
            "peak_allocated_bytes": m.peak_bytes,
            "peak_reserved_bytes": reserved_peak,
            "device_memory_bytes": capacity,
            "share_of_device_memory": round(share, 4) if share is not None else None,
            "warn_share": warn_share,
            "memory_events": m.events,
        }
        of_device = f" ({share:.0%} of {fmt_bytes(capacity)})" if share is not None else ""
        findings.append(
            Finding(
                id="memory-peak",
                severity="warn" if share is not None and share >= warn_share else "info",
                title=f"{m.device} memory peaks at {fmt_bytes(m.peak_bytes)}{of_device} in {where}",
                explanation=_peak_explanation(trained),
                suggestion=_peak_suggestion(trained),
                impact_us=0.0,
                evidence=evidence,
                measured=measured,
            )
        )
    return findings


def _peak_explanation(trained: TrainingEvidence) -> str:
    """Why memory peaks where it does: saved activations only when a backward ran."""
    reserved = " Reserved memory is what the caching allocator holds from the driver."
    if trained.backward:
        return (
            "Allocated memory rises through the forward pass (activations kept for "
            "backward) and falls in backward; the peak decides the largest batch that "
            "fits." + reserved
        )
    return (
        f"This window is forward-only: {trained.said()}. Its peak is weights, inputs, caches "
        "(a KV cache grows with the tokens) and the forward's intermediate tensors, freed "
        "as soon as no later op reads them; activations are kept only for a backward, which "
        "this window does not run. If the forward ran with gradients enabled, autograd "
        "still keeps each layer's inputs until the output is freed (the trace cannot tell "
        "grad mode)." + reserved
    )


def _peak_suggestion(trained: TrainingEvidence) -> str:
    if trained.backward:
        return (
            "To lower the peak: activation checkpointing "
            "(torch.utils.checkpoint) around the big blocks, a smaller batch with "
            "gradient accumulation, bf16/fp16 autocast, in-place ops where safe, and "
            "freeing references to tensors you no longer need."
        )
    return (
        "To lower the peak: run the forward under torch.inference_mode() (or "
        "torch.no_grad()) so autograd saves nothing, a smaller batch or shorter sequences, "
        "lower-precision weights (bf16/fp16, or quantized), in-place ops where safe, and "
        "freeing references to tensors you no longer need."
    )


def _capacity(trace, m: DeviceMemory) -> float | None:
    if not m.device.startswith("cuda"):
        return None
    index = int(m.device.split(":")[1]) if ":" in m.device else 0
    for d in trace.devices:
        if d.id == index and d.memory_bytes:
            return float(d.memory_bytes)
    return None


@rule(
    "memory-spike",
    FAMILY,
    "one allocation jumps memory inside a step, or the allocator releases memory every step",
    spike_share=0.2,
    min_release_steps=2,
)
def memory_spike(ctx) -> list[Finding]:
    trace = ctx.trace
    spike_share = ctx.threshold("spike_share")
    min_release = int(ctx.threshold("min_release_steps"))
    starts = {s.number: s.start for s in trace.steps}
    findings = []
    for m in timelines(ctx):
        if m.peak_bytes <= 0:
            continue
        spikes = [
            a for a in m.largest if a.step is not None and a.nbytes > spike_share * m.peak_bytes
        ]
        if spikes:
            biggest = spikes[0]
            findings.append(
                Finding(
                    id="memory-spike",
                    severity="warn",
                    title=(
                        f"One allocation of {fmt_bytes(biggest.nbytes)} is "
                        f"{biggest.nbytes / m.peak_bytes:.0%} of the {m.device} peak"
                    ),
                    explanation=(
                        "A single op asks for a large block at once. Such spikes set the peak "
                        "and fragment the caching allocator."
                    ),
                    suggestion=(
                        "Look at that op's inputs: a concatenation, a large intermediate or an "
                        "out-of-place op on a big tensor. Use in-place variants, chunk the "
                        "computation, or free the inputs earlier."
                    ),
                    impact_us=0.0,
                    evidence=[
                        Evidence(
                            f"{fmt_bytes(a.nbytes)} by {op_label(trace, a.op)}",
                            name=trace.name(a.op) if a.op >= 0 else "[memory]",
                            ts_us=trace.rel(a.ts),
                            step=a.step,
                            value=float(a.nbytes),
                            unit="bytes",
                        )
                        for a in spikes[:5]
                    ],
                    measured={
                        "device": m.device,
                        "largest_share_of_peak": round(biggest.nbytes / m.peak_bytes, 4),
                        "spike_share": spike_share,
                        "peak_allocated_bytes": m.peak_bytes,
                    },
                )
            )
        releasing = [c for c in m.churn if c.reserved_released_bytes > 0]
        if len(releasing) >= min_release:
            findings.append(
                Finding(
                    id="memory-spike",
                    severity="warn",
                    title=(
                        f"The allocator returns {m.device} memory to the driver in "
                        f"{len(releasing)} of {len(m.churn)} steps"
                    ),
                    explanation=(
                        "Reserved memory shrinks and grows again inside steps: the caching "
                        "allocator frees blocks (torch.cuda.empty_cache(), or a retry after an "
                        "out-of-memory) and must cudaMalloc them again, which synchronizes."
                    ),
                    suggestion=(
                        "Remove torch.cuda.empty_cache() from the loop; if memory is tight, "
                        "lower the peak instead (see memory-peak) or set "
                        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True."
                    ),
                    impact_us=0.0,
                    evidence=[
                        Evidence(
                            f"released {fmt_bytes(c.reserved_released_bytes)} to the driver, "
                            f"reserved {fmt_bytes(c.reserved_grown_bytes)} again",
                            name=f"ProfilerStep#{c.step}",
                            ts_us=trace.rel(starts[c.step]),
                            step=c.step,
                            value=float(c.reserved_released_bytes),
                            unit="bytes",
                        )
                        for c in releasing[:10]
                    ],
                    measured={
                        "device": m.device,
                        "steps_releasing": len(releasing),
                        "min_release_steps": min_release,
                    },
                )
            )
    return findings
