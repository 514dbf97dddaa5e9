"""`attention-backend`: which attention implementation ran, and why the math fallback did.

The same `scaled_dot_product_attention` line costs one fused kernel per call
(flash, memory-efficient, cuDNN) or a chain of unfused ones (the math
backend's bmm, softmax and bmm, with the seq x seq score matrix written to
device memory and read back). Which one ran depends on dtype, mask, head dim,
dropout and layout, silently; the trace is where it shows.
"""

from __future__ import annotations

from ..analysis.attention import AttentionUse, BackendUse, attention_use, math_reasons
from ..units import fmt_us
from .base import Evidence, Finding, rule

_FUSED = ("flash", "efficient", "cudnn")


def _details(use: BackendUse) -> str:
    """`24 calls; 1 kernel per call; FlashAttention-2 (pytorch_flash)`."""
    if use.calls:
        parts = [_count(use.calls, "call")]
        if use.kernels:
            per_call = use.kernels_per_call
            parts.append(f"{per_call:.3g} kernel{'' if per_call == 1 else 's'} per call")
    else:
        kernels = _count(use.kernels, "kernel")
        parts = [f"{kernels}, no recorded SDPA call (a library's own attention op)"]
    if use.libraries:
        parts.append(", ".join(sorted(use.libraries)))
    return "; ".join(parts)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _describe(use: BackendUse) -> str:
    return f"{use.backend} ({_details(use)})"


def _evidence(trace, use: BackendUse) -> list[Evidence]:
    out = [
        Evidence(
            f"backend {use.backend}: {_details(use)}",
            name=trace.name(use.first),
            ts_us=trace.rel(float(trace.ts[use.first])),
            dur_us=float(trace.dur[use.first]),
            value=use.time_per_call_us,
            unit="us/call" if use.calls else None,
        )
    ]
    for name, count in use.kernel_names.most_common(3):
        out.append(Evidence(f"{count} launches", name=name, value=float(count), unit="kernels"))
    if use.unlinked:
        out.append(
            Evidence(
                f"{use.unlinked} more {use.backend} kernels in the window not launched under a "
                "recorded call (graph replay or a launch before the window)",
                value=float(use.unlinked),
                unit="kernels",
            )
        )
    return out


def _math_cost(found: AttentionUse, math: BackendUse) -> tuple[str, float]:
    """Sentence on what math costs against a fused backend in the same trace, and the
    time per step a fused backend would save (0 when the trace cannot tell)."""
    fused = [u for u in found.uses if u.backend in _FUSED and u.calls]
    if not fused or math.time_per_call_us is None:
        return (
            "The trace holds no fused call to compare with; profile once with "
            "sdpa_kernel(SDPBackend.FLASH_ATTENTION) or EFFICIENT_ATTENTION to measure the gap.",
            0.0,
        )
    best = min(fused, key=lambda u: u.time_per_call_us)
    ratio = math.time_per_call_us / best.time_per_call_us if best.time_per_call_us else 0.0
    saved = max(math.time_per_call_us - best.time_per_call_us, 0.0) * math.calls
    return (
        f"In this trace a math call takes {fmt_us(math.time_per_call_us)} against "
        f"{fmt_us(best.time_per_call_us)} for a {best.backend} call ({ratio:.2g}x; shapes may "
        "differ between the calls).",
        saved,
    )


@rule("attention-backend", "attention", "which attention backend ran and why math fell back")
def attention_backend(ctx) -> list[Finding]:
    found = ctx.analysis(attention_use)
    if not found.uses:
        return []
    trace = ctx.trace
    steps = max(len(trace.steps), 1)
    evidence = [e for use in found.uses for e in _evidence(trace, use)]
    names = ", ".join(_describe(u) for u in found.uses)
    math = next((u for u in found.uses if u.backend == "math" and u.calls), None)
    if math is None:
        return [
            Finding(
                id="attention-backend",
                severity="info",
                title=f"Attention ran on {names}",
                explanation=(
                    "scaled_dot_product_attention picks one backend per call from the inputs' "
                    "dtype, mask, head dim and layout; here the fused kernels ran (each call is "
                    "one kernel pass instead of separate matmul, softmax and matmul kernels)."
                ),
                suggestion="Nothing to change in the backend choice; compare backends with "
                "`kinetoscope diff` after switching with torch.nn.attention.sdpa_kernel.",
                evidence=evidence,
                measured={"backends": found.backends()},
            )
        ]
    reasons = math_reasons(math, found.on_device)
    cost, saved = _math_cost(found, math)
    why = (
        "Recorded properties that rule the fused kernels out: " + "; ".join(reasons) + "."
        if reasons
        else "Nothing recorded (dtype, head dim, mask, dropout) rules the fused kernels out: "
        "the math path was likely chosen explicitly (sdpa_kernel(SDPBackend.MATH), "
        "enable_flash_sdp(False)) or by an unrecorded condition such as a non-contiguous "
        "last dimension."
    )
    kernels = (
        f" Each math call launched {math.kernels_per_call:.3g} kernels." if math.kernels else ""
    )
    return [
        Finding(
            id="attention-backend",
            severity="warn",
            title=f"Attention fell back to the math backend: {names}",
            explanation=(
                "The math backend computes attention as separate matmul, softmax and matmul "
                "ops, writing the seq x seq score matrix to memory and reading it back; the "
                f"fused backends do it in one kernel.{kernels} {why} {cost}"
            ),
            suggestion=(
                "Use fp16/bf16 (autocast), pass is_causal=True instead of a causal mask, keep "
                "the head dim a multiple of 8 and <= 256, make q/k/v contiguous in the last "
                "dimension, pass need_weights=False to nn.MultiheadAttention, and check with "
                "sdpa_kernel(SDPBackend.FLASH_ATTENTION), which raises with the reason when "
                "flash cannot run."
            ),
            impact_us=saved / steps,
            evidence=evidence,
            measured={"backends": found.backends(), "math_reasons": reasons},
        )
    ]
