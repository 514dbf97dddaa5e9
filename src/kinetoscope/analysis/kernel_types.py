"""Device time by kernel type: what kind of work the device spends its time on.

A GEMM-heavy step wants faster matmuls (dtype, tensor cores, shapes); an
elementwise-heavy one wants fusion; a communication-heavy one wants overlap.
The type of a kernel is read from how it was produced, not from a list of
names: the library that emitted it (`kernel_names.decode`: cuBLAS, CUTLASS,
Tensile, NCCL, ...), the naming conventions of kernel generators (Inductor's
`triton_poi_` pointwise, `triton_red_`/`triton_per_` reductions, `triton_tem_`
templates), and for copies and memsets the activity kind and direction CUPTI
and roctracer write in the event name (`Memcpy HtoD (Pinned -> Device)`).

Device time here is the summed duration of the events (two kernels running
at once on two streams both count), so the shares say where the device's work
goes, not how long the step took; kernels are placed in the step that
launched them (as `step_stats` does).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from ..trace import Cat, Trace
from .attention_kernels import kernel_family, kernel_family_in
from .kernel_name_record import KernelName
from .kernel_names import decode, decoded
from .stepmap import device_steps
from .window import window_device_work

#: Types in display order. Memory copies are split by direction because each
#: direction has its own cause and fix (HtoD: input pipeline, DtoH: syncs and
#: `.item()`, DtoD: layout copies, PtoP: multi-GPU traffic).
KERNEL_TYPES = (
    "gemm",
    "attention",
    "conv",
    "communication",
    "elementwise",
    "reduction",
    "embedding",
    "memcpy HtoD",
    "memcpy DtoH",
    "memcpy DtoD",
    "memcpy PtoP",
    "memcpy other",
    "memset",
    "spin",
    "other",
)

#: What each type holds, for renderers and docs.
TYPE_NOTES = {
    "gemm": "matrix multiplies: cuBLAS/cuBLASLt, CUTLASS, CK, Tensile (hipBLASLt/rocBLAS), "
    "DeepGEMM, Triton matmul templates",
    "attention": "fused attention: FlashAttention 2/3, FlashInfer, FlashMLA, fmha/mem-efficient, "
    "cuDNN SDPA, CK/aiter, paged and Triton attention",
    "conv": "convolutions (cuDNN, MIOpen, implicit GEMM, FFT and Winograd algorithms)",
    "communication": "collectives and peer traffic run as kernels: NCCL/RCCL, MSCCL++, DeepEP, "
    "NVSHMEM, pplx/mori MoE all-to-all, custom all-reduce (vLLM, SGLang, TensorRT-LLM)",
    "elementwise": "pointwise kernels, casts, copies, gathers and layout transposes run on SMs",
    "reduction": "reductions and normalizations: sums, softmax, norms, pooling, top-k, sort",
    "embedding": "embedding lookups and their fused updates (FBGEMM TBE, embedding_bag)",
    "memset": "device memsets",
    "spin": "deliberate busy-waits (torch.cuda._sleep's spin_kernel), used by tests and benchmarks",
    "other": "kernels whose name says none of the above",
}

#: Collective and peer-traffic kernels, named by the library or algorithm that moves
#: data between GPUs: NCCL and RCCL (`ncclDevKernel_*`, `ncclKernel_*`), MSCCL/MSCCL++
#: (`mscclpp::`), NVSHMEM (`nvshmemi_*`), DeepEP's intranode/internode/low-latency
#: dispatch, combine and notify kernels (`deep_ep::intranode::dispatch`,
#: `deep_ep::internode_ll::combine`; not `deep_ep::layout::`, which counts tokens
#: locally) and the same structure in its forks (`xen_moe::internode_ll::dispatch`,
#: `nccl_ep::internode_ll::combine`), the MoE all-to-all kernels of pplx-kernels
#: (`pplx::`) and ROCm's mori (`mori::moe::EpDispatch*`), and the custom all-reduce
#: kernels that do NCCL's job through peer memory: vLLM's and SGLang's
#: `cross_device_reduce_{1,2}stage`, TensorRT-LLM/FlashInfer one-/two-shot and
#: Lamport all-reduce, quick-reduce, symmetric-memory `multimem` all-reduce. Each of
#: these spins on flags written by peer GPUs, so its duration includes waiting for the
#: other ranks, like an NCCL kernel's.
_COMMUNICATION = re.compile(
    r"nccl|rccl|msccl|nvshmem|deep_?ep::(?!layout)|\bpplx::|mori::moe::ep|cross_device_reduce"
    r"|(?:intra|inter)node(?:_ll)?\w*::(?:\w+::)?(?:notify_|cached_notify_)?(?:dispatch|combine)"
    r"|multimem|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|sendrecv|lamport"
    r"|one_?shot_?all|two_?shot_?all|quick_?reduce"
)
#: Embedding-bag kernels gather rows and pool them (rotary embeddings are pointwise math).
_EMBEDDING = re.compile(r"(?<!rotary_)embedding|embedding_bag|\btbe_")
#: Normalizations and pooling reduce over a channel, row or window: batch norm
#: (cuDNN's `bn_fw_*`/`bn_bw_*`), layer/RMS/group norm and their backward
#: (`GammaBetaBackward`), Welford statistics, pooling, histograms. MoE routing
#: (`moe::dev::routing::*`, vLLM's `_combined_routing_compute`) counts tokens per
#: expert and prefix-sums the offsets; MoE finalize sums each token's top-k expert
#: outputs: both reduce.
_REDUCTION = re.compile(
    r"(?:^|[^a-z])bn_(?:fw|bw)|batch_?norm|layer_?norm|rms_?norm|group_?norm|gammabeta|welford"
    r"|pool|histogram|cumsum|scan|prefix_?sum|reduce|softmax|topk|sort|argm|routing(?!\w*memset)"
    r"|moe\w*::(?:\w+::)*finalize"
)
#: cuDNN's implicit-GEMM convolutions precompute their gather offsets in a helper kernel.
_CONV_HELPER = re.compile(r"cask_cudnn\w*::compute\w*offsets")
#: Pointwise work named by what it does to each element: quantization and
#: dtype conversion, rotary embeddings, layout transforms (NCHW <-> NHWC),
#: scaling, KV-cache stores, fills, triangular masks (triu/tril), MIOpen's tensor ops.
_ELEMENTWISE = re.compile(
    r"quant|convert|cast|rotary|nchwtonhwc|nhwctonchw|scale|cache|fill|subtensorop|tensorop|triu|tril"
    r"|activation|gelu|silu|relu|dropout|copy|transpose|permute|gather|scatter|index|cat_?array"
)
#: cuDNN's FFT convolution algorithm runs as fft2d_r2c/c2r kernels.
_FFT_CONV = re.compile(r"fft\d*d?_[rc]2[rc]|fft2d")
#: Libraries whose every kernel serves a matrix multiply.
_BLAS = frozenset({"cuBLAS", "hipBLASLt", "rocBLAS", "Tensile", "CUTLASS", "DeepGEMM"})
_DIRECTIONS = (
    ("memcpy HtoD", re.compile(r"htod|hosttodevice", re.I)),
    ("memcpy DtoH", re.compile(r"dtoh|devicetohost", re.I)),
    ("memcpy DtoD", re.compile(r"dtod|devicetodevice", re.I)),
    ("memcpy PtoP", re.compile(r"ptop|peertopeer", re.I)),
)


def kernel_type(name: str) -> str:
    """The type of a kernel event named `name` (see KERNEL_TYPES)."""
    return _classify(name, decode(name), kernel_family(name))


def kernel_type_in(trace: Trace, name: str) -> str:
    """`kernel_type(name)`, once per name of `trace` (`Trace.memo`), from its decoded name and
    attention family as the trace's other analyses read them."""
    return trace.memo(_kernel_type_in, name)


def _kernel_type_in(trace: Trace, name: str) -> str:
    return _classify(name, decoded(trace, name), kernel_family_in(trace, name))


def _classify(name: str, k: KernelName, family: tuple[str, str] | None) -> str:
    """`kernel_type`'s decision from the decoded name and attention family, passed in so the
    per-trace path reuses the ones the trace has already computed."""
    low = name.lower()
    if k.kind == "collective" or k.library in ("NCCL", "RCCL"):
        return "communication"
    if _COMMUNICATION.search(low):
        return "communication"
    if family is not None:
        return "attention"
    if k.library == "Triton" and k.triton_kind == "template":
        ops = " ".join(k.fused_ops)
        if "convolution" in ops:
            return "conv"
        return "attention" if "attention" in ops else "gemm"
    if k.kind in ("attention", "conv", "gemm"):
        return k.kind
    if _EMBEDDING.search(low):
        return "embedding"
    if k.kind == "reduction" or _REDUCTION.search(low):
        return "reduction"
    if k.kind in ("elementwise", "copy") or _ELEMENTWISE.search(low):
        return "elementwise"
    if _CONV_HELPER.search(low):
        return "conv"
    if k.library == "cuDNN" and _FFT_CONV.search(low):
        return "conv"
    if k.library in _BLAS:  # split-K reductions, epilogues: parts of a GEMM
        return "gemm"
    if k.short.startswith("spin_kernel"):
        return "spin"
    return "other"


def copy_type(name: str) -> str:
    """Direction of a memcpy event from its name (`Memcpy HtoD (Pinned -> Device)`)."""
    for label, pattern in _DIRECTIONS:
        if pattern.search(name):
            return label
    return "memcpy other"


@dataclass(frozen=True)
class TypeRow:
    type: str
    events: int
    total_us: float
    #: share of all device work time in the window (summed durations)
    share: float
    #: total_us over the steps: device time of this type per step
    per_step_us: float


@dataclass(frozen=True)
class KernelTypes:
    rows: list[TypeRow]
    total_us: float
    steps: int
    #: step number -> type -> us (steps that launched device work)
    by_step: dict[int, dict[str, float]] = field(default_factory=dict)
    #: the largest kernels left as "other" (name, us), so a user sees what was not typed
    top_other: list[tuple[str, float]] = field(default_factory=list)

    def share(self, type_: str) -> float:
        return next((r.share for r in self.rows if r.type == type_), 0.0)


def type_codes(trace: Trace, indices: np.ndarray) -> np.ndarray:
    """Type of each device event in `indices`, as its position in `KERNEL_TYPES` (each
    distinct category and name is typed once: a trace has millions of device events but a
    few thousand names)."""
    if not len(indices):
        return np.zeros(0, dtype=np.int64)
    # one integer per (category, name) pair: a 1-D unique, several times faster than
    # np.unique(axis=0) on pairs, same distinct pairs
    span = len(trace.names) + 1
    keys = trace.cat[indices].astype(np.int64) * span + (trace.name_id[indices] + 1)
    distinct, which = np.unique(keys, return_inverse=True)
    codes = np.array(
        [
            KERNEL_TYPES.index(_type_of(trace, cat, trace.names[nid - 1]))
            for cat, nid in zip(*(v.tolist() for v in divmod(distinct, span)), strict=True)
        ],
        dtype=np.int64,
    )
    return codes[which.reshape(-1)]


def _type_of(trace: Trace, cat: int, name: str) -> str:
    if cat == int(Cat.MEMCPY):
        return copy_type(name)
    if cat == int(Cat.MEMSET):
        return "memset"
    return kernel_type_in(trace, name)


def kernel_types(trace: Trace, indices: np.ndarray | None = None) -> KernelTypes:
    """Breakdown of device work (`indices`, default: all of it) by type and step."""
    work = window_device_work(trace) if indices is None else indices
    codes = type_codes(trace, work)
    durs = trace.dur[work]
    total = float(durs.sum())
    steps = max(len(trace.steps), 1)
    numbers = device_steps(trace, work) if trace.steps else np.full(len(work), -1)
    rows = []
    for code, type_ in enumerate(KERNEL_TYPES):
        sel = codes == code
        if not sel.any():
            continue
        us = float(durs[sel].sum())
        rows.append(TypeRow(type_, int(sel.sum()), us, us / total if total else 0.0, us / steps))
    by_step = _by_step(numbers, codes, durs)
    other = work[codes == KERNEL_TYPES.index("other")]
    top_other = []
    if len(other):
        sums = np.bincount(trace.name_id[other], weights=trace.dur[other])
        for name_id in np.argsort(-sums)[:5]:
            if sums[name_id] > 0:
                top_other.append((trace.names[int(name_id)], float(sums[name_id])))
    return KernelTypes(rows, total, steps, by_step, top_other)


def _by_step(
    numbers: np.ndarray, codes: np.ndarray, durs: np.ndarray
) -> dict[int, dict[str, float]]:
    """step number -> type -> us, for the steps (number >= 0) that have device work.

    One stable sort by (step, type) makes each group a contiguous run holding its
    events in their original order, so each sum is the same pairwise sum as
    masking would give; a mask per step and type cost O(steps x events).
    """
    keep = np.flatnonzero(numbers >= 0)
    key = numbers[keep].astype(np.int64) * len(KERNEL_TYPES) + codes[keep]
    by_key = np.argsort(key, kind="stable")
    order, sorted_key = keep[by_key], key[by_key]
    by_step: dict[int, dict[str, float]] = {}
    if not len(order):
        return by_step
    edges = np.flatnonzero(np.diff(sorted_key)) + 1
    starts, stops = np.r_[0, edges].tolist(), np.r_[edges, len(order)].tolist()
    for first, stop in zip(starts, stops, strict=True):
        number, code = divmod(int(sorted_key[first]), len(KERNEL_TYPES))
        by_step.setdefault(number, {})[KERNEL_TYPES[code]] = float(durs[order[first:stop]].sum())
    return by_step
