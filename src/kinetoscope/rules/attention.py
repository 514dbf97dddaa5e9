"""`attention-backend`: which attention implementation ran, and why the math fallback did.

The same `scaled_dot_product_attention` line costs one fused kernel per call
(flash, memory-efficient, cuDNN) or a chain of unfused ones (the math
backend's bmm, softmax and bmm, with the seq x seq score matrix written to
device memory and read back). Which one ran depends on dtype, mask, head dim,
dropout and layout, silently; the trace is where it shows. Attention written
by hand (matmul -> softmax -> matmul) is the same unfused chain without SDPA
in the way; serving engines' own backends (FlashAttention-3, FlashInfer,
FlashMLA, paged attention) are named from their ops and kernels.
"""

from __future__ import annotations

from ..analysis.attention import AttentionUse, BackendUse, attention_use, math_reasons
from ..analysis.gpu_arch import GpuArch, gpu_arch
from ..analysis.roofline import roofline
from ..formatting.units import fmt_us
from .base import Evidence, Finding, rule

#: Backends that compute attention in one fused pass (no seq x seq matrix in memory).
_FUSED = (
    "flash", "efficient", "cudnn", "flash-attn 2", "flash-attn 3", "FlashInfer", "FlashMLA",
    "CK fmha", "trtllm-gen fmha", "paged attention", "triton attention", "sage",
)  # fmt: skip
_UNFUSED = ("math", "unfused")

#: How to get a fused backend where SDPA fell back to math.
_MATH_FIX = (
    "Use fp16/bf16 (autocast), pass is_causal=True instead of a causal mask, keep the head dim a "
    "multiple of 8 and <= 256, make q/k/v contiguous in the last dimension, pass "
    "need_weights=False to nn.MultiheadAttention, and check with "
    "sdpa_kernel(SDPBackend.FLASH_ATTENTION), which raises with the reason when flash cannot run."
)
#: ... where the recorded inputs are already fp16/bf16 and nothing recorded rules flash out
_MATH_CHOSEN_FIX = (
    "The inputs are already {dtypes} and nothing recorded rules flash out: look first for "
    "the math path chosen in code (sdpa_kernel(SDPBackend.MATH), "
    "torch.backends.cuda.enable_flash_sdp(False) or enable_mem_efficient_sdp(False)); "
    "otherwise pass is_causal=True instead of a causal mask, make q/k/v contiguous in the last "
    "dimension, and check with sdpa_kernel(SDPBackend.FLASH_ATTENTION), which raises with the "
    "reason when flash cannot run."
)


#: ... where the math calls ran on the CPU: the CPU flash kernel's own conditions
_CPU_MATH_FIX = (
    "On the CPU, SDPA's flash kernel (aten::_scaled_dot_product_flash_attention_for_cpu) "
    "takes fp32, fp64, bf16 and fp16 and an attn_mask, but no dropout: pass dropout_p=0.0 "
    "outside training (model.eval() does not change the argument: pass "
    "dropout_p=self.p if self.training else 0.0), make q/k/v "
    "contiguous in the last dimension, and check with sdpa_kernel(SDPBackend.FLASH_ATTENTION), "
    "which raises with the reason when flash cannot run."
)
#: What a CPU attention run can change: the matmul units its dtype reaches, and threads.
_CPU_TUNING = (
    "On the CPU the fused kernel's speed follows the dtype and the threads: bf16 "
    "(torch.autocast('cpu', dtype=torch.bfloat16)) runs its matmuls on AMX or AVX512-BF16 "
    "units where the CPU has them (Intel Sapphire Rapids and later, AMD Zen 4 and later; "
    "elsewhere bf16 is emulated and fp32 is as fast); the kernel splits batch x heads x "
    "query blocks over the intra-op threads (torch.set_num_threads, OMP_NUM_THREADS): up to "
    "one per physical core, no more than that product."
)


def _math_fix(math: BackendUse, reasons: list[str]) -> str:
    """The generic list, unless the recorded dtypes are all fp16/bf16 and no recorded
    property explains the fallback: then "use fp16/bf16" would tell the run to do what it
    does (an H100 run with the math backend pinned on bf16 inputs was told so). CPU calls
    get the CPU kernel's conditions: fp32 is no reason to fall back there."""
    if math.cpu:
        return _CPU_MATH_FIX
    dtypes = sorted({s.dtype for s in math.shapes if s.dtype})
    if dtypes and set(dtypes) <= {"fp16", "bf16"} and not reasons:
        return _MATH_CHOSEN_FIX.format(dtypes="/".join(dtypes))
    return _MATH_FIX


#: What to know or do about each backend once it is named.
ADVICE = {
    "flash": "SDPA's flash backend (FlashAttention-2 on CUDA, AOTriton on ROCm), its fused "
    "path for fp16/bf16.",
    "efficient": "memory-efficient (CUTLASS/xFormers) kernels: SDPA picks them when flash cannot "
    "run (fp32, an arbitrary attn_mask, head dim > 256); fp16/bf16 with is_causal usually "
    "gets flash, which is faster.",
    "cudnn": "cuDNN attention: the trace's 'est. achieved occupancy' of 0% for these kernels is "
    "a profiler artifact, not a measurement: Kineto estimates it with the CUDA occupancy "
    "calculator, which does not model a kernel's opt-in to more than 48 KB of shared memory, so "
    "every kernel using more reads 0% (in the corpus: sm90_xmma GEMMs with 226 KB, 0%; "
    "pytorch_flash with 48 KB, 13%).",
    "flash-attn 2": "FlashAttention-2 (flash-attn package or vLLM's fork).",
    "flash-attn 3": "FlashAttention-3: the Hopper/Blackwell fused kernel (warp-specialised, "
    "TMA, wgmma); nothing to change in the backend choice.",
    "FlashInfer": "FlashInfer's paged prefill/decode kernels; nothing to change in the backend "
    "choice.",
    "FlashMLA": "FlashMLA: DeepSeek's fused multi-head latent attention decode kernel.",
    "CK fmha": "Composable Kernel fused attention on ROCm (flash-attn's ROCm build, aiter).",
    "trtllm-gen fmha": "TensorRT-LLM generated fmha kernels (FlashInfer's trtllm-gen backend).",
    "paged attention": "paged-attention kernels read the KV cache by blocks; on recent vLLM "
    "versions FlashAttention or FlashInfer backends replace them for most shapes.",
    "triton attention": "Triton attention kernels (vLLM's unified/prefix-prefill, SGLang's "
    "extend/decode, flex attention): portable, usually slower than the vendor fused kernels "
    "where those support the shapes.",
    "sage": "SageAttention: quantized (int8 QK, fp8 PV) attention; a deliberate speed/accuracy "
    "trade.",
    "math": "the math backend runs bmm, softmax and bmm as separate kernels.",
    "unfused": "attention written by hand (matmul -> softmax -> matmul): replace it with "
    "torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=..., dropout_p=..., "
    "is_causal=...), which picks a fused kernel and never writes the seq x seq scores to memory.",
    "overrideable": "a backend registered by an out-of-tree device (PrivateUse1).",
}
#: ... for calls that ran on the CPU (`BackendUse.cpu`): no CUDA library is involved.
CPU_ADVICE = {
    "flash": "SDPA's CPU flash backend: ATen's own flash-attention kernel for the CPU "
    "(aten::_scaled_dot_product_flash_attention_for_cpu), blocked over the keys so the "
    "seq x seq scores never reach memory; it takes fp32, fp64, bf16 and fp16.",
    "math": "the math fallback (aten::_scaled_dot_product_attention_math) runs bmm, softmax "
    "and bmm as separate ATen ops on the CPU, writing the seq x seq scores to memory.",
}


def _details(use: BackendUse) -> str:
    """`24 calls; 1 kernel per call; FlashAttention-2 (pytorch_flash)`; kernels found by
    name alone say which passes they serve (`forward and backward`)."""
    if use.calls:
        parts = [_count(use.calls, "call")]
        if use.kernels:
            per_call = use.kernels_per_call
            parts.append(f"{per_call:.3g} kernel{'' if per_call == 1 else 's'} per call")
    else:
        kernels = _count(use.kernels, "kernel")
        parts = [
            f"{kernels}{_passes(use)}, named from the kernels (no SDPA or attention op recorded)"
        ]
    if use.source == "pattern":
        parts[0] = _count(use.calls, "matmul -> softmax -> matmul chain")
    if use.libraries:
        parts.append(", ".join(sorted(use.libraries)))
    return "; ".join(parts)


def _passes(use: BackendUse) -> str:
    """`, 2 forward and 2 backward`: the passes the kernel names say they serve."""
    said = [f"{use.passes[p]} {p}" for p in ("forward", "backward") if use.passes[p]]
    return f", {' and '.join(said)}" if said else ""


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _describe(found: AttentionUse, use: BackendUse) -> str:
    share = found.share(use)
    said = f", {share:.1%} of device time" if share else ""
    return f"{use.backend} ({_details(use)}{said})"


#: FlashAttention-2 on a GPU whose tensor-core instructions it does not use.
_HOPPER_NOTE = (
    " On {arch} FlashAttention-2 does not use the wgmma/TMA instructions; FlashAttention-3 "
    "(flash-attn's hopper build, vLLM's default there) or cuDNN attention "
    "(sdpa_kernel(SDPBackend.CUDNN_ATTENTION)) do: compare with `kinetoscope diff`."
)


def _advice(found: AttentionUse, arch: GpuArch | None) -> str:
    """Each backend's note; the FA2 ones say what a Hopper/Blackwell GPU (from
    deviceProperties) could use instead."""
    out = []
    for use in found.uses:
        advice = CPU_ADVICE if use.cpu and use.backend in CPU_ADVICE else ADVICE
        if use.backend not in advice:
            continue
        text = f"{use.backend}: {advice[use.backend]}"
        fa2 = use.backend == "flash-attn 2" or (
            use.backend == "flash" and "FlashAttention-2 (pytorch_flash)" in use.libraries
        )
        if fa2 and arch is not None and arch.name in ("Hopper", "Blackwell"):
            text += _HOPPER_NOTE.format(arch=arch.name)
        out.append(text)
    return " ".join(out)


def _roofline_sentence(ctx) -> str:
    """Achieved attention FLOP/s against the device's peak, where shapes rated any call."""
    summary = ctx.analysis(roofline).summary("attention")
    if summary is None or summary.share_of_peak is None:
        return ""
    return (
        f" Rated attention calls ({summary.ops}, from recorded shapes) reached "
        f"{summary.achieved_flops / 1e12:.3g} TFLOP/s, {summary.share_of_peak:.1%} of the "
        "device's peak for their dtype."
    )


def _unfused_evidence(trace, found: AttentionUse) -> list[Evidence]:
    out = []
    for chain in found.unfused[:3]:
        scope = trace.name(chain.scope) if chain.scope >= 0 else "the thread's top level"
        how = (
            "shapes are attention's"
            if chain.shaped
            else "shapes not recorded: matched on op order only"
        )
        out.append(
            Evidence(
                f"{trace.name(chain.first)} -> {trace.name(chain.softmax)}"
                f"{' -> dropout' if chain.dropout else ''} -> {trace.name(chain.second)} "
                f"under {scope} ({how})",
                name=trace.name(chain.softmax),
                ts_us=trace.rel(float(trace.ts[chain.softmax])),
                dur_us=float(trace.end[chain.second] - trace.ts[chain.first]),
            )
        )
    return out


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
        f"In this trace {'an' if math.backend[0] in 'aeiou' else 'a'} {math.backend} call takes "
        f"{fmt_us(math.time_per_call_us)} against "
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
    evidence += _unfused_evidence(trace, found)
    names = ", ".join(_describe(found, u) for u in found.uses)
    measured = {
        "backends": found.backends(),
        "shares": {u.backend: found.share(u) for u in found.uses},
        "cpu_backends": [u.backend for u in found.uses if u.cpu],
    }
    slow = [u for u in found.uses if u.backend in _UNFUSED and u.calls]
    if not slow:
        return [
            Finding(
                id="attention-backend",
                severity="info",
                title=f"Attention ran on {names}",
                explanation=(
                    "Each attention call ran as fused kernels (one pass over q, k and v "
                    "instead of separate matmul, softmax and matmul kernels)."
                    f"{_roofline_sentence(ctx)} {_advice(found, gpu_arch(trace))}"
                ),
                suggestion="Nothing to change in the backend choice; compare backends with "
                "`kinetoscope diff` after switching with torch.nn.attention.sdpa_kernel."
                + (f" {_CPU_TUNING}" if any(u.cpu for u in found.uses) else ""),
                evidence=evidence,
                measured=measured,
            )
        ]
    math = next((u for u in slow if u.backend == "math"), None)
    unfused = next((u for u in slow if u.backend == "unfused"), None)
    parts, saved = [], 0.0
    reasons: list[str] = []
    if math is not None:
        reasons = math_reasons(math, found.on_device and not math.cpu)
        parts.append(
            "Recorded properties that rule the fused kernels out: " + "; ".join(reasons) + "."
            if reasons
            else "Nothing recorded (dtype, head dim, mask, dropout) rules the fused kernels "
            "out: the math path was likely chosen explicitly (sdpa_kernel(SDPBackend.MATH), "
            "enable_flash_sdp(False)) or by an unrecorded condition such as a non-contiguous "
            "last dimension."
        )
    for use in slow:
        cost, more = _math_cost(found, use)
        if cost not in parts:
            parts.append(cost)
        saved += more
        if use.kernels:
            parts.append(f"Each {use.backend} call launched {use.kernels_per_call:.3g} kernels.")
    if unfused is not None and unfused.score_pass_us > 0:
        parts.append(
            f"Their non-GEMM kernels (scale, mask, softmax, dropout, casts: each a pass over "
            f"the scores in memory) take {fmt_us(unfused.score_pass_us / steps)} "
            f"{'per step' if trace.steps else 'in the window'}: up to that much is saved by a "
            "fused kernel, which applies them on chip."
        )
        saved = max(saved, unfused.score_pass_us)
    if unfused is not None:
        order_only = sum(1 for c in found.unfused if not c.shaped)
        parts.append(
            f"{_count(unfused.calls, 'hand-written chain')} found from the call tree"
            + (f" ({order_only} on op order alone: no shapes recorded)." if order_only else ".")
        )
    kind = "the math backend" if math is not None else "attention written by hand"
    if math is not None and unfused is not None:
        kind = "the math backend and attention written by hand"
    measured["math_reasons"] = reasons
    return [
        Finding(
            id="attention-backend",
            severity="warn",
            title=f"Attention ran unfused ({kind}): {names}",
            explanation=(
                "Unfused attention computes separate matmul, softmax and matmul ops, writing "
                "the seq x seq score matrix to memory and reading it back; the fused backends "
                "do it in one kernel. " + " ".join(parts) + _roofline_sentence(ctx)
            ),
            suggestion=" ".join(
                ([ADVICE["unfused"]] if unfused is not None else [])
                + ([_math_fix(math, reasons)] if math is not None else [])
                + ([_CPU_TUNING] if any(u.cpu for u in slow) else [])
            ),
            impact_us=saved / steps,
            evidence=evidence,
            measured=measured,
        )
    ]
