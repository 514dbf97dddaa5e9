"""Which library ran a collective, and which collective it was, from names alone.

A collective kernel's name is written by the library that moves the data, so the
name says the family; what collective it is comes from the name where the library
writes it (`ncclDevKernel_AllGather_RING_LL`, `cross_device_reduce_1stage`), else
from the op that launched it: PyTorch's `record_param_comms` ("Collective name":
`allreduce`, `_allgather_base`) or its `nccl:all_reduce` / `gloo:broadcast`
annotation. Pure string work; `analysis.collectives` reads the trace.

Families and the names they are recognised by (the sources are the libraries' own
kernels; tests/analysis/test_collective_names.py cites them):

- NCCL: `ncclKernel_*` (NCCL < 2.19), `ncclDevKernel_*` (2.19+, `_Generic` once
  kernels were merged). RCCL, AMD's port, keeps NCCL's names: the same name on a
  ROCm trace is RCCL (`analysis.kernel_names.decoded` renames it per trace).
- Gloo: CPU collectives, the `gloo:<collective>` annotations ProcessGroupGloo records.
- DeepEP: `deep_ep::intranode::`, `deep_ep::internode::`, `deep_ep::internode_ll::`
  (low latency) dispatch/combine, and its notify kernels (`notify_dispatch`,
  `cached_notify_dispatch`, `cached_notify_combine`, internode `cached_notify`),
  which exchange token counts between ranks before a dispatch; `deep_ep::layout::`
  counts locally and is no collective.
- MSCCL++ (`mscclpp::`), NVSHMEM (`nvshmem*`), pplx-kernels (`pplx::`), mori
  (`mori::moe::Ep*`).
- Custom all-reduce through peer memory: vLLM (`vllm::cross_device_reduce_1stage`,
  `_2stage`, csrc/custom_all_reduce.cuh), SGLang (its copy of it in sgl-kernel,
  `sglang::`, and its copy of TensorRT-LLM's kernels in namespace `trt_llm`),
  TensorRT-LLM (`tensorrt_llm::kernels::oneShotAllReduceKernel`,
  `twoShotAllReduceKernel`, `allreduce_fusion_kernel_*`, Lamport variants), quick
  all-reduce (`quickreduce`), and PyTorch symmetric memory (`multimem_all_reduce_kernel`,
  `one_shot_all_reduce_kernel`, `two_shot_all_reduce_kernel`, `multimem_all_gather_kernel`,
  torch/csrc/distributed/c10d/symm_mem/CUDASymmetricMemoryOps.cu).
"""

from __future__ import annotations

import re

from ..trace import Trace

#: version keys only a ROCm build of the profiler writes
_ROCM_VERSIONS = ("hip_runtime_version", "hip_driver_version", "roctracer_version")

_TRT_COMM = r"(?:all_?reduce|lamport|all_?gather|reduce_?scatter|all_?to_?all|a2a)"

#: (pattern on the lower-cased name, family), first match wins: the specific
#: namespaces before the kernel names that several libraries share.
_FAMILIES: list[tuple[re.Pattern, str]] = [
    (re.compile(r"deep_?ep::(?!layout)|^(?:cached_)?notify_(?:dispatch|combine)\b"), "DeepEP"),
    (re.compile(r"^cached_notify\b"), "DeepEP"),
    (re.compile(r"mscclpp|msccl"), "MSCCL++"),
    (re.compile(r"nvshmem"), "NVSHMEM"),
    (re.compile(r"\bpplx::"), "pplx"),
    (re.compile(r"mori::moe::ep"), "mori"),
    # TensorRT-LLM's namespace holds GEMM, quantization and MoE kernels too: only its
    # communication kernels count (customAllReduceKernels.cu, allReduceFusionKernels.cu)
    (
        re.compile(
            r"\bsglang::.*" + _TRT_COMM + r"|\bsglang::cross_device|\btrt_llm::.*" + _TRT_COMM
        ),
        "SGLang custom all-reduce",
    ),
    (
        re.compile(r"tensorrt_llm::.*" + _TRT_COMM + r"|allreduce_fusion_kernel"),
        "TensorRT-LLM all-reduce",
    ),
    (re.compile(r"cross_device_reduce"), "vLLM custom all-reduce"),
    (re.compile(r"quick_?reduce"), "quick all-reduce"),
    (
        re.compile(r"multimem_|(?:one|two)_shot_all_reduce|one_?shot_?all|two_?shot_?all"),
        "PyTorch symmetric memory",
    ),
    (re.compile(r"^rccl|\brccl"), "RCCL"),
    (re.compile(r"^nccl|nccl\w*kernel|\bnccl"), "NCCL"),
]

#: Collective kinds, in display order.
KINDS = (
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "all_to_all",
    "broadcast",
    "reduce",
    "send_recv",
    "dispatch",
    "combine",
    "notify",
    "barrier",
    # a kernel whose name says no collective and that nothing recorded links to one
    "unknown",
)

#: (pattern on the name with `_` removed and lower-cased, kind), first match wins.
_KINDS: list[tuple[re.Pattern, str]] = [
    (re.compile(r"notify"), "notify"),
    (re.compile(r"dispatch"), "dispatch"),
    (re.compile(r"combine"), "combine"),
    (re.compile(r"allreduce|crossdevicereduce|quickreduce|lamport"), "all_reduce"),
    (re.compile(r"reducescatter"), "reduce_scatter"),
    (re.compile(r"allgather"), "all_gather"),
    (re.compile(r"alltoall"), "all_to_all"),
    (re.compile(r"broadcast|bcast"), "broadcast"),
    (re.compile(r"sendrecv|send|recv"), "send_recv"),
    (re.compile(r"barrier"), "barrier"),
    (re.compile(r"reduce"), "reduce"),
]

#: nccl-tests' bus-bandwidth factor per kind for n ranks (doc/PERFORMANCE.md): the share
#: of the message each rank's link carries, so that bus bandwidth compares with the
#: link's peak whatever the collective; TraceLens's NcclAnalyser uses the same.
BUS_FACTOR = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
    "send_recv": lambda n: 1.0,
}

_ONE_TO_ONE = frozenset({"broadcast", "reduce", "send_recv"})

#: `dtype` of record_param_comms (c10's ScalarType names) -> bytes per element
ITEMSIZE = {
    "Float": 4,
    "Double": 8,
    "Half": 2,
    "BFloat16": 2,
    "Int": 4,
    "Long": 8,
    "Short": 2,
    "Char": 1,
    "Byte": 1,
    "Bool": 1,
    "Float8_e4m3fn": 1,
    "Float8_e5m2": 1,
    "Float8_e4m3fnuz": 1,
    "Float8_e5m2fnuz": 1,
    # `Input type` of an op's recorded arguments
    "float": 4,
    "double": 8,
    "c10::Half": 2,
    "c10::BFloat16": 2,
    "int": 4,
    "long": 8,
    "long int": 8,
    "short": 2,
    "signed char": 1,
    "unsigned char": 1,
    "bool": 1,
    "c10::Float8_e4m3fn": 1,
    "c10::Float8_e5m2": 1,
}


def _head(name: str) -> str:
    """The kernel's own qualified name, lower-cased: template and function arguments cut
    (an argument type such as `vllm::RankData*` names no library of the kernel)."""
    low = name.strip().lower()
    for prefix in ("void ", "__global__ "):
        if low.startswith(prefix):
            low = low[len(prefix) :]
    low = low.replace("(anonymous namespace)::", "")
    return re.split(r"[<(]", low, maxsplit=1)[0].strip()


def collective_family(name: str) -> str | None:
    """The library a kernel named `name` belongs to, when it is a collective; else None.
    NCCL's names are returned as NCCL: on ROCm they are RCCL's (see the module doc)."""
    head = _head(name)
    for pattern, family in _FAMILIES:
        if pattern.search(head):
            return family
    return None


def collective_kind(text: str) -> str | None:
    """The collective a kernel name or a recorded collective name says (`allreduce`,
    `_allgather_base`, `nccl:all_to_all`, `ncclDevKernel_ReduceScatter_RING`); None
    where it says none (`ncclDevKernel_Generic`)."""
    flat = _head(text).replace("_", "")
    for pattern, kind in _KINDS:
        if pattern.search(flat):
            return kind
    return None


def bus_factor(kind: str, ranks: int | None) -> float | None:
    """nccl-tests' factor from algorithm to bus bandwidth; None where the kind has none
    (dispatch/combine move a data-dependent share) or the group size is not recorded."""
    if kind in _ONE_TO_ONE:  # the message crosses each link once, whatever the group
        return 1.0
    factor = BUS_FACTOR.get(kind)
    if factor is None or not ranks or ranks < 1:
        return None
    return factor(ranks)


def on_rocm(trace: Trace) -> bool:
    """Whether the trace was recorded on ROCm: an AMD device, a HIP runtime or roctracer
    version in the file, or HIP launch calls (a trace without device properties)."""
    if any(d.vendor == "AMD" for d in trace.devices):
        return True
    if any(key in trace.meta.versions for key in _ROCM_VERSIONS):
        return True
    return any(trace.names[i].startswith("hip") for i in trace.launch_name_ids.tolist())
