"""FLOPs and minimum bytes of one attention call, from the shapes and scalars the profiler recorded.

Convention (FlashAttention's, so figures compare with published ones): the
forward pass does two matrix products per head, S = Q K^T and O = P V, so
2*Sq*Sk*D + 2*Sq*Sk*Dv FLOPs per (batch, query head), i.e. 4*B*H*Sq*Sk*D when
Dv = D; softmax, scaling and masking are not counted. With `is_causal` and
Sq == Sk only about half of the score matrix is computed, so the count is
halved. The backward pass counts 2.5x the forward (five matrix products
against two: dV, dP, dS->dQ, dS->dK and the recomputed S). Both rules are
FlashAttention-2's (Dao 2023, arXiv:2307.08691, section 4.1, and
`benchmarks/benchmark_flash_attention.py` in Dao-AILab/flash-attention).

When `is_causal` is set but Sq != Sk (a KV cache), backends align the mask
differently (top-left for the math path, bottom-right for flash-attn >= 2.1),
so the count is not halved and the cost says so. When `is_causal` was not
recorded (Concrete Inputs appear with torch 2.1), it is not halved either,
and the cost says that too. An explicit mask is counted as dense: fused
kernels compute every score before applying it.

Bytes are the minimum traffic: Q, K, V read and O written once (the fused
kernels keep the score matrix on chip). The unfused math backend writes the
Sq x Sk score matrix and reads it back at least once more, so its minimum adds
two passes over it. The backward minimum reads Q, K, V, O, dO and writes dQ,
dK, dV.

Layouts: the SDPA-level ops take [B, H, S, D] (any leading dims in general:
batch is their product); the `_flash_attention_*` and `_efficient_attention_*`
kernels' ops take [B, S, H, D]. Ops with 3-D packed inputs (variable-length
batches, where the lengths live in tensors the profiler does not print) are
not rated.
"""

from __future__ import annotations

from dataclasses import dataclass

from .recorded_args import ITEMSIZE, MISSING, RecordedArgs, numel

#: The convention's backward multiplier (see the module docstring).
BACKWARD_FACTOR = 2.5


@dataclass(frozen=True)
class AttentionSignature:
    """Where an attention op keeps q, k, v and its causal flag (torch schema positions)."""

    layout: str  # "bhsd" (SDPA level) or "bshd" (flash/efficient kernel level)
    q: int
    causal: int  # position of is_causal, or of custom_mask_type where mask_type
    backward: bool = False
    mask_type: bool = False  # custom_mask_type (0 none, 1/2 causal) instead of a bool
    attn_mask: int | None = None  # position of an explicit mask argument


def _sig(layout, q, causal, **kw) -> AttentionSignature:
    return AttentionSignature(layout, q, causal, **kw)


#: Attention ops, forward and backward, checked against torch 2.13's schemas
#: (tests/analysis/test_roofline_attention.py compares them where torch is installed).
SIGNATURES: dict[str, AttentionSignature] = {
    "aten::scaled_dot_product_attention": _sig("bhsd", 0, 5, attn_mask=3),
    "aten::_scaled_dot_product_flash_attention": _sig("bhsd", 0, 4),
    "aten::_scaled_dot_product_flash_attention_for_cpu": _sig("bhsd", 0, 4, attn_mask=5),
    "aten::_scaled_dot_product_efficient_attention": _sig("bhsd", 0, 6, attn_mask=3),
    "aten::_scaled_dot_product_cudnn_attention": _sig("bhsd", 0, 6, attn_mask=3),
    "aten::_scaled_dot_product_attention_math": _sig("bhsd", 0, 5, attn_mask=3),
    "aten::_scaled_dot_product_fused_attention_overrideable": _sig("bhsd", 0, 5, attn_mask=3),
    "aten::_cudnn_attention_forward": _sig("bhsd", 0, 10, attn_mask=3),
    "aten::_flash_attention_forward": _sig("bshd", 0, 8),
    "aten::_efficient_attention_forward": _sig("bshd", 0, 9, mask_type=True, attn_mask=3),
    "aten::_scaled_dot_product_flash_attention_backward": _sig("bhsd", 1, 11, backward=True),
    "aten::_scaled_dot_product_flash_attention_for_cpu_backward": _sig(
        "bhsd", 1, 7, backward=True, attn_mask=8
    ),
    "aten::_scaled_dot_product_efficient_attention_backward": _sig(
        "bhsd", 1, 11, backward=True, attn_mask=4
    ),
    "aten::_scaled_dot_product_cudnn_attention_backward": _sig(
        "bhsd", 1, 14, backward=True, attn_mask=8
    ),
    "aten::_scaled_dot_product_fused_attention_overrideable_backward": _sig(
        "bhsd", 1, 13, backward=True, attn_mask=4
    ),
    "aten::_cudnn_attention_backward": _sig("bhsd", 1, 14, backward=True, attn_mask=8),
    "aten::_flash_attention_backward": _sig("bshd", 1, 11, backward=True),
    "aten::_efficient_attention_backward": _sig(
        "bshd", 1, 14, backward=True, mask_type=True, attn_mask=4
    ),
}
#: The unfused fallback: its score matrix goes through memory.
MATH_OPS = frozenset(
    {"aten::_scaled_dot_product_attention_math", "aten::_scaled_dot_product_attention_math_for_mps"}
)
#: Every op that makes a call an attention call (the math-for-MPS op has no rated signature).
ATTENTION_OPS = frozenset(SIGNATURES) | MATH_OPS


@dataclass(frozen=True)
class OpCost:
    """What one rated call computes and moves at least, and how that was decided."""

    flops: float
    bytes: float
    dtype: str
    backward: bool = False
    notes: tuple[str, ...] = ()  # assumptions a reader must know ("is_causal not recorded")


def _split(shape: list[int], layout: str) -> tuple[int, int, int] | None:
    """(batch*heads, sequence, head dim) of one of q/k/v/o."""
    if layout == "bshd":
        if len(shape) != 4:
            return None
        b, s, h, d = shape
        return b * h, s, d
    if len(shape) < 3:  # 2-D inputs are legal for SDPA but carry no batch or head
        return (1, *shape) if len(shape) == 2 else None
    return numel(shape[:-2]), shape[-2], shape[-1]


def _causal(args: RecordedArgs, sig: AttentionSignature):
    """True/False as recorded, MISSING where the trace has no Concrete Inputs."""
    value = args.scalar(sig.causal)
    if value is MISSING:
        return MISSING
    return bool(value) if sig.mask_type else value is True


def attention_cost(name: str, args: RecordedArgs, math: bool) -> OpCost | None:
    """FLOPs and minimum bytes of the attention op `name`; None without usable shapes.

    `math`: the call ran the unfused math backend (its score matrix is in memory)."""
    sig = SIGNATURES.get(name)
    if sig is None:
        return None
    q, k, v = (args.shape(sig.q + i) for i in range(3))
    dtype = args.dtype(sig.q)
    if not (q and k and v and dtype):
        return None
    parts = [_split(t, sig.layout) for t in (q, k, v)]
    if any(p is None for p in parts):
        return None
    (bh, sq, d), (_, sk, dk), (_, sv, dv) = parts
    if dk != d or sv != sk or min(bh, sq, sk, d, dv) <= 0:
        return None
    scores = float(bh) * sq * sk
    flops = 2.0 * scores * (d + dv)
    notes = []
    causal = _causal(args, sig)
    masked = sig.attn_mask is not None and args.shape(sig.attn_mask) is not None
    if causal is MISSING:
        notes.append("is_causal not recorded (torch < 2.1), counted as full attention")
    elif causal and sq == sk:
        flops /= 2
    elif causal:
        notes.append("is_causal with Sq != Sk, not halved (backends align the mask differently)")
    if masked:
        notes.append("an explicit mask, counted as full attention")
    q_n, k_n, v_n, o_n = bh * sq * d, numel(k), numel(v), bh * sq * dv
    elements = q_n + k_n + v_n + o_n
    if sig.backward:
        flops *= BACKWARD_FACTOR
        elements *= 2  # Q, K, V, O, dO read; dQ, dK, dV written
    elif math:
        elements += 2 * scores  # the score matrix written, then read back for P V
    return OpCost(flops, elements * ITEMSIZE[dtype], dtype, sig.backward, tuple(notes))
