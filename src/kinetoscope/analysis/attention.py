"""Which attention backend ran, how many kernels each call took, and what was recorded about it.

`F.scaled_dot_product_attention` (aten::scaled_dot_product_attention) is a
dispatcher: it checks the inputs against each fused kernel's constraints and
calls one backend op, which the profiler records as a child:
`_scaled_dot_product_flash_attention` (FlashAttention-2 on CUDA, AOTriton's
`attn_fwd` on ROCm), `_scaled_dot_product_efficient_attention` (xFormers'
CUTLASS `fmha_cutlass*` kernels), `_scaled_dot_product_cudnn_attention` (cuDNN's
SDPA graph, launched with cuLaunchKernelEx), `_scaled_dot_product_attention_math`
(the unfused fallback: bmm, softmax, bmm as separate kernels), or on the CPU
`_scaled_dot_product_flash_attention_for_cpu` (ATen's own CPU flash-attention
kernel, no CUDA library: blocked over the keys, parallel over batch x heads x
query blocks on the intra-op thread pool). A call runs on the CPU when its
backend op is the `_for_cpu` one or the trace has no device; such a use is kept
apart (`BackendUse.cpu`) so it is described and advised as a CPU one. The backend op is the first
witness; where a trace has no such op (serving engines call their own
attention ops: vLLM's `unified_attention_with_output`, SGLang's aiter backend,
SageAttention), the kernel names tell the family.

A call's kernels are the kernels whose launch call lies under the call on the
host call tree (launch -> kernel by correlation id). Shapes and dtypes come
from `Input Dims`/`Input type` (record_shapes=True); they say why the math
fallback was taken when a recorded property rules the fused kernels out.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from ..trace import Cat, Trace
from .ancestry import ancestor_of_kind
from .attention_kernels import (
    has_kernel_family,
    kernel_family,
    kernel_family_in,
    kernel_pass,
    library_op_backend,
)
from .attention_pattern import UnfusedAttention, find_unfused
from .kernel_types import kernel_type_in
from .window import device_anchor, in_window, window_device_work

__all__ = ["AttentionUse", "BackendUse", "attention_use", "kernel_family", "math_reasons"]

#: The SDPA entry point; a call is its outermost occurrence (or a backend op without it).
SDPA_OP = "aten::scaled_dot_product_attention"

#: nn.MultiheadAttention's fast path: with need_weights=False it calls SDPA (a child op);
#: with need_weights=True (the default) it computes the weights with bmm + softmax, unfused.
NATIVE_MHA_OP = "aten::_native_multi_head_attention"

#: Backend op -> backend name, as `torch.nn.attention.SDPBackend` names them.
BACKEND_OPS = {
    "aten::_scaled_dot_product_flash_attention": "flash",
    "aten::_scaled_dot_product_flash_attention_for_cpu": "flash",
    "aten::_scaled_dot_product_efficient_attention": "efficient",
    "aten::_scaled_dot_product_cudnn_attention": "cudnn",
    "aten::_scaled_dot_product_attention_math": "math",
    "aten::_scaled_dot_product_attention_math_for_mps": "math",
    "aten::_scaled_dot_product_fused_attention_overrideable": "overrideable",
}

#: Backend ops that only run on the CPU: ATen's CPU kernels, no CUDA library.
CPU_BACKEND_OPS = frozenset({"aten::_scaled_dot_product_flash_attention_for_cpu"})
CPU_FLASH_LIBRARY = "ATen's CPU flash-attention kernel"

_DTYPES = {
    "float": "fp32",
    "double": "fp64",
    "c10::Half": "fp16",
    "c10::BFloat16": "bf16",
}
_DROPOUT_OPS = frozenset({"aten::dropout", "aten::native_dropout", "aten::bernoulli_"})


@dataclass(frozen=True)
class CallShape:
    """What record_shapes wrote about one call's query (None where not recorded)."""

    dims: list[int] | None
    dtype: str | None
    has_mask: bool


@dataclass
class BackendUse:
    """All calls (or kernels, where no op was recorded) of one backend in the window."""

    backend: str
    source: str  # "op": from the backend op under the call; "kernel": from kernel names only
    calls: int = 0
    kernels: int = 0  # kernels launched under the calls (all of them for source "kernel")
    unlinked: int = 0  # this backend's kernels in the window that no recorded call launched
    unlinked_us: float = 0.0  # their device time (a CUDA-graph replay of the same backend)
    device_us: float = 0.0
    host_us: float = 0.0  # summed duration of the calls (CPU-side)
    kernel_names: Counter = field(default_factory=Counter)
    libraries: set[str] = field(default_factory=set)
    #: kernels per pass ("forward", "backward") where the kernel names say which
    passes: Counter = field(default_factory=Counter)
    first: int = -1  # event index of the first call (or kernel), for evidence
    shapes: list[CallShape] = field(default_factory=list)
    dropout: bool = False  # a dropout op ran under a call
    native_mha: bool = False  # a call was nn.MultiheadAttention's fast path
    #: the calls ran on the CPU (the `_for_cpu` backend op, or a trace without a device)
    cpu: bool = False
    #: hand-written chains: device time of their non-GEMM kernels (scale, mask, softmax,
    #: dropout, casts: passes over the seq x seq scores that a fused kernel keeps on chip)
    score_pass_us: float = 0.0

    @property
    def kernels_per_call(self) -> float | None:
        return self.kernels / self.calls if self.calls else None

    @property
    def time_per_call_us(self) -> float | None:
        """Device time per call where kernels exist, else host time per call."""
        if not self.calls:
            return None
        return (self.device_us if self.kernels else self.host_us) / self.calls


@dataclass(frozen=True)
class AttentionUse:
    uses: list[BackendUse]  # most time first
    on_device: bool  # the trace has a device lane (the reasons differ on the CPU)
    #: all device work in the window (summed durations), the denominator of `share`
    device_total_us: float = 0.0
    #: hand-written chains (backend "unfused"), for evidence
    unfused: list[UnfusedAttention] = field(default_factory=list)

    def backends(self) -> list[str]:
        return [u.backend for u in self.uses]

    def share(self, use: BackendUse) -> float | None:
        """The backend's share of the window's device time, its graph-replayed kernels
        included (None without device work)."""
        us = use.device_us + use.unlinked_us
        return us / self.device_total_us if self.device_total_us > 0 else None


def _call_shape(trace: Trace, index: int) -> CallShape:
    dims = dtype = None
    has_mask = False
    try:
        all_dims = json.loads(trace.input_dims.get(index) or "null")
        # native MHA's first input is (batch, seq, embed dim), not per-head
        if all_dims and all_dims[0] and trace.name(index) != NATIVE_MHA_OP:
            dims = [int(d) for d in all_dims[0]]
        has_mask = bool(all_dims and len(all_dims) > 3 and all_dims[3])
    except (ValueError, TypeError):
        pass
    try:
        types = json.loads(trace.input_types.get(index) or "null")
        if types:
            dtype = _DTYPES.get(types[0], types[0] or None)
    except (ValueError, TypeError):
        pass
    return CallShape(dims, dtype, has_mask)


def _call_ops(trace: Trace) -> np.ndarray:
    """SDPA ops, their backend ops, native MHA and libraries' own attention ops."""
    names = set(BACKEND_OPS) | {SDPA_OP, NATIVE_MHA_OP}
    ids = trace.name_ids_matching(lambda n: n in names or library_op_backend(n) is not None)
    return np.flatnonzero(trace.mask(Cat.CPU_OP) & np.isin(trace.name_id, ids))


def attention_use(trace: Trace) -> AttentionUse:
    """Backends of the attention calls, kernels and hand-written chains in the active window."""
    ops = _call_ops(trace)
    ops = ops[in_window(trace, trace.ts[ops])]
    is_call = np.zeros(len(trace), dtype=bool)
    is_call[ops] = True
    outermost = ancestor_of_kind(trace, is_call, outermost=True)
    owner = {i: int(outermost[i]) for i in ops.tolist()}
    calls = sorted({o for o in owner.values() if o >= 0})
    backend_of: dict[int, str] = {}
    on_cpu = {top: not trace.device_lanes for top in calls}
    for i, top in sorted(owner.items()):
        name = trace.name(i)
        backend = BACKEND_OPS.get(name) or library_op_backend(name)
        if backend and top not in backend_of:
            backend_of[top] = backend
        if name in CPU_BACKEND_OPS and top >= 0:
            on_cpu[top] = True
    dropout = _calls_with_dropout(trace, outermost)
    chains = find_unfused(trace, outermost >= 0)

    uses: dict[tuple[str, str], BackendUse] = {}
    call_use: dict[int, BackendUse] = {}
    kernels = trace.kernels
    kernels = kernels[in_window(trace, device_anchor(trace)[kernels])]
    kernel_call = {}
    launches = trace.launch_of[kernels]
    tops = np.where(launches >= 0, outermost[np.maximum(launches, 0)], -1)
    for k, top in zip(kernels.tolist(), tops.tolist(), strict=True):
        if top >= 0:
            kernel_call[k] = top
    for call in calls:
        backend = backend_of.get(call)
        if backend is None:  # an SDPA op without a recorded backend op: name it from its kernels
            fams = [
                kernel_family_in(trace, trace.name(k)) for k, c in kernel_call.items() if c == call
            ]
            backend = next((f[0] for f in fams if f), None)
        if backend is None:  # native MHA without SDPA under it ran unfused; else unknowable
            backend = "math" if trace.name(call) == NATIVE_MHA_OP else "unknown"
        source = "cpu op" if on_cpu[call] else "op"
        use = uses.setdefault((backend, source), BackendUse(backend, "op", first=call))
        use.cpu = on_cpu[call]
        if use.cpu and backend == "flash":
            use.libraries.add(CPU_FLASH_LIBRARY)
        use.calls += 1
        use.host_us += float(trace.dur[call])
        use.shapes.append(_call_shape(trace, call))
        use.dropout |= call in dropout
        use.native_mha |= trace.name(call) == NATIVE_MHA_OP
        call_use[call] = use
    _add_chains(trace, chains, kernels, launches, kernel_call, call_use, uses)
    # only kernels of a call or with an attention name count: the rest are skipped below
    linked = np.isin(kernels, np.fromiter(kernel_call, np.int64, len(kernel_call)))
    for k in kernels[linked | has_kernel_family(trace, kernels)].tolist():
        name = trace.name(k)
        family = kernel_family_in(trace, name)
        if k in kernel_call:
            use = call_use[kernel_call[k]]
        elif family is not None and (family[0], "op") in uses:
            # launched outside a recorded call (a graph replay, a launch outside the window)
            uses[(family[0], "op")].unlinked += 1
            uses[(family[0], "op")].unlinked_us += float(trace.dur[k])
            continue
        elif family is not None:
            use = uses.setdefault((family[0], "kernel"), BackendUse(family[0], "kernel", first=k))
        else:
            continue
        use.kernels += 1
        use.device_us += float(trace.dur[k])
        use.kernel_names[name] += 1
        if use.source == "pattern" and kernel_type_in(trace, name) != "gemm":
            use.score_pass_us += float(trace.dur[k])
        if family is not None:
            use.libraries.add(family[1])
            direction = kernel_pass(name)
            if direction:
                use.passes[direction] += 1
    ordered = sorted(uses.values(), key=lambda u: -(u.device_us or u.host_us))
    work = window_device_work(trace)
    return AttentionUse(
        ordered,
        on_device=bool(trace.device_lanes),
        device_total_us=float(trace.dur[work].sum()),
        unfused=chains,
    )


def _add_chains(trace, chains, kernels, launches, kernel_call, call_use, uses) -> None:
    """One "unfused" use for the hand-written chains; each chain's kernels are those
    launched under its ops (`kernel_call` gains kernel -> chain's first op)."""
    if not chains:
        return
    use = uses[("unfused", "pattern")] = BackendUse("unfused", "pattern", first=chains[0].softmax)
    chain_of = {}
    for chain in chains:
        use.calls += 1
        use.host_us += float(trace.end[chain.second] - trace.ts[chain.first])
        use.dropout |= chain.dropout
        call_use[chain.first] = use
        for op in chain.ops:
            chain_of[op] = chain.first
    is_op = trace.mask(Cat.CPU_OP)
    top_op = ancestor_of_kind(trace, is_op, outermost=True)
    for k, launch in zip(kernels.tolist(), launches.tolist(), strict=True):
        if launch >= 0 and k not in kernel_call:
            first = chain_of.get(int(top_op[launch]))
            if first is not None:
                kernel_call[k] = first


def _calls_with_dropout(trace: Trace, outermost: np.ndarray) -> set[int]:
    """Calls with a dropout op under them (`outermost`: each event's outermost call)."""
    ids = trace.name_ids_matching(_DROPOUT_OPS.__contains__)
    hits = np.flatnonzero(np.isin(trace.name_id, ids) & trace.mask(Cat.CPU_OP))
    return {int(c) for c in outermost[hits] if c >= 0}


def math_reasons(use: BackendUse, on_device: bool) -> list[str]:
    """Recorded properties of the math calls that rule a fused kernel out (PyTorch's
    `sdp_utils` checks), most decisive first; empty when nothing recorded explains it.

    The checks differ by device. CUDA/ROCm: flash takes fp16/bf16 only, head dims
    up to 256, no mask tensor; memory-efficient takes fp32 too and masks; none
    takes fp64 or head dims that are not a multiple of 8; dropout is supported.
    CPU (torch 2.13, measured): the flash kernel takes fp64, fp32 and masks but
    not dropout, so dropout_p > 0 falls back to math.
    """
    reasons = []
    dtypes = {s.dtype for s in use.shapes if s.dtype}
    head_dims = {s.dims[-1] for s in use.shapes if s.dims}
    if not on_device:
        if use.dropout:
            reasons.append("dropout_p > 0: the CPU flash kernel has no dropout")
        return reasons
    if "fp64" in dtypes:
        reasons.append("dtype fp64: no fused attention kernel takes float64")
    if "fp32" in dtypes:
        reasons.append(
            "dtype fp32: flash attention takes only fp16/bf16 (memory-efficient takes fp32 "
            "but runs it without tensor cores)"
        )
    big = sorted(d for d in head_dims if d > 256)
    if big:
        reasons.append(f"head dim {big[0]} > 256: beyond flash attention's limit")
    odd = sorted(d for d in head_dims if d % 8)
    if odd:
        reasons.append(
            f"head dim {odd[0]} is not a multiple of 8: the fused kernels need aligned head dims"
        )
    if any(s.has_mask for s in use.shapes):
        reasons.append(
            "an explicit attn_mask: flash attention takes only is_causal, not a mask tensor"
        )
    if use.native_mha:
        reasons.append(
            "nn.MultiheadAttention with need_weights=True (its default) returns the attention "
            "weights, so its fast path computes them unfused instead of calling SDPA"
        )
    return reasons


def backend_change(trace_a: Trace, trace_b: Trace) -> str | None:
    """One sentence for `diff` when the attention backends differ between two runs, else None."""
    a, b = attention_use(trace_a), attention_use(trace_b)
    if not a.uses or not b.uses or a.backends() == b.backends():
        return None

    def said(found: AttentionUse) -> str:
        parts = []
        for use in found.uses:
            per = use.kernels_per_call
            detail = f", {per:.3g} kernels per call" if per else ""
            parts.append(f"{use.backend}{detail}")
        return " + ".join(parts)

    return f"Attention backend changed: {said(a)} -> {said(b)}."
