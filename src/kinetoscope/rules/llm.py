"""LLM generation rules: what limits the decode loop (analysis/llm.py finds the passes).

A decode pass runs the whole layer stack for one new token per sequence: the
matrices are tiny, so each of the hundreds of kernels finishes before the host
has launched the next one. Replaying the pass as one CUDA/HIP graph removes the
per-kernel launch cost, which needs fixed shapes and addresses: a static KV
cache (preallocated, written in place) instead of one grown by concatenation.
"""

from __future__ import annotations

from ..analysis.llm import llm_view
from ..analysis.llm_evidence import CACHE_FRAME
from ..analysis.stepmap import step_count
from ..formatting.units import fmt_pct, fmt_us
from .base import Evidence, Finding, rule
from .requires import need_kernels

STATIC_COMPILE = (
    'model.generation_config.cache_implementation = "static"; '
    'model.forward = torch.compile(model.forward, mode="reduce-overhead", fullgraph=True)'
)
#: the same for a model whose cache is its own code (no transformers frame recorded)
STATIC_COMPILE_OWN = (
    "preallocate keys and values to [batch, heads, max_len, head_dim] once and write each "
    "new token in place (cache[:, :, pos] = k, or index_copy_); "
    'decode = torch.compile(decode, mode="reduce-overhead", fullgraph=True)'
)


def _transformers_cache(trace) -> bool:
    """Whether transformers' cache code ran: its module's frames in the recorded Python
    stacks (with_stack=True). A cache that starts empty and grows by torch.cat along the
    sequence is also what a hand-written decoder does, so the ops alone never say
    transformers; without stacks the cache is described by its mechanism only."""
    return any(CACHE_FRAME in name for name in trace.names)


def _decode(ctx):
    """The decode passes, or None when the trace holds no generation: the rules do not
    apply then (a training loop lists no LLM rule as not checked)."""
    view = ctx.analysis(llm_view)
    return None if view is None else view.phase("decode")


@rule(
    "llm-decode-overhead",
    "llm",
    "decode passes are launch-bound: the device idles between tiny kernels",
    max_device_ratio=0.5,
    max_blocked_share=0.5,
)
def llm_decode_overhead(ctx) -> list[Finding]:
    trace = ctx.trace
    decode = _decode(ctx)
    if decode is None:
        return []
    need_kernels(trace)
    decode = [p for p in decode if p.kernels]
    if not decode:
        return []
    if any(p.graph_launches for p in decode):
        return []  # already replayed as graphs: the advice is in place
    wall = sum(p.dur for p in decode)
    busy = sum(min(p.device_busy_us, p.dur) for p in decode)
    blocked = sum(p.blocked_us for p in decode)
    ratio, blocked_share = busy / wall, blocked / wall
    if ratio >= ctx.threshold("max_device_ratio"):
        return []
    if blocked_share >= ctx.threshold("max_blocked_share"):
        return []  # the host waits on the device, it does not launch: not overhead
    kernels = sum(p.kernels for p in decode) / len(decode)
    worst = sorted(decode, key=lambda p: p.dur, reverse=True)[:3]
    return [
        Finding(
            id="llm-decode-overhead",
            severity="warn",
            title=(
                f"Decode is launch-bound: the device is busy {fmt_pct(ratio)} of each decode "
                f"pass ({len(decode)} passes, {kernels:.0f} kernels each)"
            ),
            explanation=(
                f"The {len(decode)} decode passes took {fmt_us(wall)} and kept the device busy "
                f"for {fmt_us(busy)}; the host spent {fmt_pct(blocked_share)} of them blocked "
                "on the device. Each pass launches every kernel of the layer stack for one "
                "token per sequence: the kernels are too small to cover the launch time, so "
                "per-token latency is the host's launch path, not the model's arithmetic."
            ),
            suggestion=(
                "Replay the decode pass as one CUDA graph: a static KV cache plus "
                "torch.compile in reduce-overhead mode ("
                + (STATIC_COMPILE if _transformers_cache(trace) else STATIC_COMPILE_OWN)
                + "); a larger batch also amortises each launch over more tokens."
            ),
            impact_us=(wall - busy) / step_count(trace),
            evidence=[
                Evidence(
                    f"{p.label}: {fmt_us(p.dur)}, device busy {fmt_us(p.device_busy_us)}, "
                    f"{p.kernels} kernels",
                    name=p.label,
                    ts_us=trace.rel(p.start),
                    dur_us=p.dur,
                    value=p.device_busy_us,
                    unit="us",
                )
                for p in worst
            ],
            measured={
                "decode_passes": len(decode),
                "device_ratio": round(ratio, 4),
                "blocked_share": round(blocked_share, 4),
                "threshold_max_device_ratio": ctx.threshold("max_device_ratio"),
            },
        )
    ]


@rule(
    "llm-kv-cache-concat",
    "llm",
    "the KV cache grows by concatenation: every decode pass copies the whole cache",
    min_appends=1,
)
def llm_kv_cache_concat(ctx) -> list[Finding]:
    trace = ctx.trace
    growing = [p for p in _decode(ctx) or [] if p.kv_appends]
    if sum(p.kv_appends for p in growing) < ctx.threshold("min_appends"):
        return []
    last = growing[-1]
    per_pass = sum(p.kv_appends for p in growing) / len(growing)
    size = f", {last.kv_append_bytes / 2**20:.2f} MiB written" if last.kv_append_bytes else ""
    hf = _transformers_cache(trace)
    owner = (
        f"transformers' DynamicCache: its {CACHE_FRAME} frames are in the recorded stacks"
        if hf
        else "a concatenating KV cache, torch.cat along the sequence dimension; no "
        f"{CACHE_FRAME} frame recorded, so not attributed to transformers"
    )
    return [
        Finding(
            id="llm-kv-cache-concat",
            severity="info",
            title=(
                f"KV cache grown by concatenation: {per_pass:.0f} cache copies per decode pass "
                f"({len(growing)} passes)"
            ),
            explanation=(
                "Each decode pass appends the new token's keys and values with "
                f"torch.cat([past, new], dim=-2) ({owner}): the whole cache "
                "is copied into a new tensor, per layer, per token, so the copy grows with the "
                f"context (the last pass: {last.kv_appends} copies{size}). The cache's shape "
                "and address change every token, which also rules out CUDA graphs."
            ),
            suggestion=(
                'Use a static cache (generate(..., cache_implementation="static")): preallocated '
                "to the maximum length and written in place (index_copy_), the shape every "
                "compiled or graph-captured decode pass needs."
                if hf
                else "Preallocate the cache to the maximum length ([batch, heads, max_len, "
                "head_dim]) and write each new token in place (cache[:, :, pos] = k, or "
                "index_copy_), attending over cache[:, :, : pos + 1]: no copy per token, and "
                "the fixed shape every compiled or graph-captured decode pass needs."
            ),
            impact_us=0.0,
            evidence=[
                Evidence(
                    f"{p.label}: {p.kv_appends} cache concatenations"
                    + (f", {p.kv_append_bytes / 2**20:.2f} MiB" if p.kv_append_bytes else ""),
                    name=p.label,
                    ts_us=trace.rel(p.start),
                    dur_us=p.dur,
                    value=float(p.kv_append_bytes),
                    unit="bytes",
                )
                for p in (growing[0], growing[-1])
            ][: len(growing)],
            measured={
                "passes": len(growing),
                "appends_per_pass": round(per_pass, 2),
                "last_pass_bytes": last.kv_append_bytes,
                "transformers_frames": hf,
            },
        )
    ]
