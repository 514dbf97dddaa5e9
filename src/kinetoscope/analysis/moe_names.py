"""Which part of a mixture-of-experts layer a kernel or op name belongs to.

An MoE layer does four things besides the experts' own arithmetic, and the
libraries that serve MoE models name their kernels after them:

- routing: score the tokens against the experts and pick the top k (vLLM/SGLang
  `topk_softmax`, `grouped_topk`, `moe_fused_gate`; TensorRT-LLM/FlashInfer
  `moe::dev::routing::*`; DeepEP's `get_dispatch_layout`), and count or align the
  tokens per expert (`moe_align_block_size`, `count_and_sort_expert_tokens`,
  DeepSeek's `clean_and_count_expert`, `get_fused_mapping`);
- permutation: gather each expert's tokens together and put the results back in
  token order (vLLM `moe_permute`/`moe_unpermute`, SGLang `shuffle_rows` and
  `apply_shuffle_mul_sum`, TensorRT-LLM `expandInputRows`, `finalizeMoeRouting`,
  `moe::dev::finalize`, `moe_sum` which adds each token's k expert outputs);
- expert GEMMs run as one grouped launch (vLLM/SGLang Triton `fused_moe_kernel`,
  CUTLASS grouped GEMM `GroupProblemShape`, DeepGEMM `m_grouped_*`,
  `grouped_gemm`, torch's `aten::_grouped_mm`, FlashInfer
  `trtllm_fp4_block_scale_moe`);
- dispatch/combine: send tokens to the ranks holding their experts and back
  (DeepEP `deep_ep::intranode|internode|internode_ll::dispatch|combine`,
  `notify_dispatch`, `cached_notify*`), or an all-to-all collective.

The names are matched here, in this module, rather than through the kernel-type
table: whether a DeepEP kernel is a dispatch or a combine is an MoE question.
An all-to-all alone says nothing about experts (sequence parallelism uses it
too): it counts as dispatch/combine only inside a trace already seen to be MoE.
"""

from __future__ import annotations

import re

ROUTING = "routing"
PERMUTATION = "permutation"
EXPERT_GEMM = "expert GEMMs"
DISPATCH = "dispatch/combine"
OTHER = "other in MoE"
#: An op holding a whole fused layer: its host time (its kernels go to the parts above).
FUSED = "fused MoE op"
#: The parts, in the order a layer runs them (and the section lists them).
PARTS = (ROUTING, PERMUTATION, EXPERT_GEMM, DISPATCH, OTHER, FUSED)

_PATTERNS = (
    # DeepEP: csrc/kernels/{intranode,internode,internode_ll}.cu, namespace deep_ep
    (
        DISPATCH,
        re.compile(
            r"deep_ep::\w*::(?:\w+::)*(?:dispatch|combine)|notify_dispatch|cached_notify"
            r"|notify_combine"
        ),
    ),
    (
        ROUTING,
        re.compile(
            r"topk_softmax|grouped_topk|moe_fused_gate|clean_and_count_expert|get_fused_mapping"
            r"|moe_align_block_size|count_and_sort_expert_tokens|moe::dev::routing"
            r"|get_dispatch_layout"
        ),
    ),
    (
        PERMUTATION,
        re.compile(
            r"moe_permute|moe_unpermute|shuffle_rows|apply_shuffle_mul_sum|expandInputRows"
            r"|finalizeMoeRouting|moe::dev::finalize|\bmoe_sum|permute_processing_kernel"
        ),
    ),
    (
        EXPERT_GEMM,
        re.compile(
            r"fused_moe_kernel|GroupProblemShape|grouped_gemm|GroupedGemm|m_grouped"
            r"|_grouped_mm\b|trtllm_\w*_moe|MoeFCGemm|moe_gemm",
            re.I,
        ),
    ),
)

#: An op that holds a whole fused MoE layer (vLLM's `vllm::moe_forward`, SGLang's
#: and vLLM's `fused_experts`, FlashInfer's `trtllm_*_moe` ops): kernels it launches
#: that no name above places are its expert GEMMs (a GEMM kernel) or "other in MoE".
MOE_SCOPE = re.compile(r"moe_forward|fused_moe|fused_experts|trtllm_\w*_moe|FusedMoE")

#: all_to_all as the profiler names it: c10d ops, record_param_comms' `nccl:all_to_all`,
#: NCCL's kernels (`ncclDevKernel_AllToAll*` on newer NCCL).
ALL_TO_ALL = re.compile(r"all_?to_?all", re.I)


def part_of_name(name: str) -> str | None:
    """The MoE part `name` (a kernel or op) names, None when it names none."""
    for part, pattern in _PATTERNS:
        if pattern.search(name):
            return part
    return None


def is_moe_scope(name: str) -> bool:
    return MOE_SCOPE.search(name) is not None
