"""Which attention library a kernel or an op belongs to, from its name.

Each attention library names its kernels after its own code, so the name is
the library's signature, not a guess: PyTorch's vendored FlashAttention-2
lives in `pytorch_flash::`, Tri Dao's flash-attn package (and vLLM's fork) in
`flash::flash_fwd_*kernel`, FlashAttention-3 is a CUTLASS 3 kernel
(`cutlass::device_kernel<flash::FlashAttnFwdSm90<...>>`), FlashInfer's kernels
are `flashinfer::Batch{Prefill,Decode}With...Kernel`, FlashMLA's
`flash_fwd_splitkv_mla_kernel`, cuDNN's SDPA graphs
`cudnn_generated_fort_native_sdpa_*`, the memory-efficient (xFormers/CUTLASS)
kernels `fmha_cutlassF_*`, vLLM's paged attention `paged_attention_v{1,2}_kernel`
(CUDA) and `paged_attention_ll4mi_*` (ROCm), Composable Kernel's
`ck_tile::FmhaFwdKernel` and aiter's `fmha_fwd_*`. Serving engines call these
through their own ops (`_vllm_fa3_C::fwd`), which name the library too.

Kernels that serve attention but do not compute it (KV-cache stores such as
`reshape_and_cache_flash_kernel`, index builders such as
`create_flashinfer_kv_indices_triton`) are copies, not attention; they are
ruled out first so the library's name inside them does not mislead.
"""

from __future__ import annotations

import re

import numpy as np

from ..trace import Trace

#: Kernels with an attention library's name that move the KV cache or build its indices.
_NOT_ATTENTION = re.compile(r"and_cache|kv_indices|kv_?cache_(?:store|write|copy)|quant", re.I)

#: (backend, library, pattern), checked in order (first match wins).
KERNEL_FAMILIES: tuple[tuple[str, str, re.Pattern], ...] = (
    (
        "flash-attn 3",
        "FlashAttention-3 (CUTLASS 3, Hopper/Blackwell)",
        re.compile(r"FlashAttn(?:Fwd|Bwd)Sm\d+|flash::FlashAttnFwdCombine|flash::prepare_varlen"),
    ),
    (
        "FlashMLA",
        "FlashMLA (DeepSeek multi-head latent attention)",
        re.compile(r"splitkv_mla|flash_fwd_mla|flash_mla|FlashMLA", re.I),
    ),
    ("flash", "FlashAttention-2 (pytorch_flash)", re.compile(r"pytorch_flash::")),
    (
        "flash-attn 2",
        "FlashAttention-2 (flash-attn package or vLLM's fork)",
        re.compile(r"flash::flash_|flash_fwd_splitkv|flash_(?:fwd|bwd)\w*_kernel"),
    ),
    (
        "efficient",
        "CUTLASS memory-efficient (xFormers fmha)",
        re.compile(
            r"fmha_cutlass|PyTorchMemEffAttention|AttentionKernel<|AttentionBackwardKernel<"
        ),
    ),
    ("cudnn", "cuDNN SDPA", re.compile(r"cudnn.*(sdpa|fmha|flash|mha)|(sdpa|fmha).*cudnn", re.I)),
    ("flash", "AOTriton (ROCm)", re.compile(r"^attn_fwd$|^attn_bwd|^bwd_kernel_d[kq]")),
    (
        "CK fmha",
        "Composable Kernel fmha (ROCm, aiter/CK)",
        re.compile(r"fmha_fwd|fmha_bwd|FmhaFwd|FmhaBwd|mha_fwd|mha_bwd"),
    ),
    ("trtllm-gen fmha", "TensorRT-LLM generated fmha (FlashInfer)", re.compile(r"^fmhaSm\d+")),
    (
        "FlashInfer",
        "FlashInfer",
        re.compile(
            r"(?:Batch|Single)(?:Prefill|Decode)With\w*Kernel|BatchMLAPaged\w*Kernel"
            r"|PODWith\w*Kernel|(?:VariableLength)?MergeStates\w*Kernel"
        ),
    ),
    (
        "paged attention",
        "vLLM paged attention (CUDA)",
        re.compile(r"paged_attention_v\d"),
    ),
    ("paged attention", "vLLM/aiter paged attention (ROCm)", re.compile(r"paged_attention")),
    ("sage", "SageAttention (quantized, Triton)", re.compile(r"^sage_fwd|^sage_attn")),
    (
        "triton attention",
        "Triton attention kernels (vLLM unified/prefix-prefill, SGLang extend/decode, flex)",
        re.compile(
            r"unified_attention|^_attn_fwd|^_attn_bwd|^_fwd_kernel$|_fwd_grouped_kernel_stage\d"
            r"|^_fwd_kernel_stage\d|extend_attention|decode_attention|flex_attention"
        ),
    ),
)

#: Serving engines' and libraries' own attention ops: op name prefix -> backend.
LIBRARY_OPS: tuple[tuple[str, str], ...] = (
    ("_vllm_fa3_C::", "flash-attn 3"),
    ("flash_attn_3::", "flash-attn 3"),
    ("_vllm_fa2_C::", "flash-attn 2"),
    ("flash_attn::", "flash-attn 2"),
    ("_flashmla_C::", "FlashMLA"),
    ("flash_mla::", "FlashMLA"),
)


def kernel_family_in(trace: Trace, name: str) -> tuple[str, str] | None:
    """`kernel_family(name)`, once per name of `trace` (`Trace.memo`): attributing attention
    asks it of every kernel, and a trace repeats a few hundred names."""
    return trace.memo(_kernel_family_in, name)


def _kernel_family_in(trace: Trace, name: str) -> tuple[str, str] | None:
    return kernel_family(name)


def has_kernel_family(trace: Trace, kernels: np.ndarray) -> np.ndarray:
    """Per event of `kernels`, whether its name has an attention `kernel_family`: one
    test per distinct name, so the callers loop in Python only over the kernels
    that matter instead of asking every kernel's name."""
    uniq, inverse = np.unique(trace.name_id[kernels], return_inverse=True)
    names = trace.names
    found = [kernel_family_in(trace, names[i]) is not None for i in uniq.tolist()]
    return np.array(found, dtype=bool)[inverse.reshape(-1)]


def kernel_family(name: str) -> tuple[str, str] | None:
    """(backend, library) of an attention kernel from its name, None for other kernels."""
    if _NOT_ATTENTION.search(name):
        return None
    for backend, library, pattern in KERNEL_FAMILIES:
        if pattern.search(name):
            return backend, library
    return None


#: Which pass an attention kernel serves, as the libraries name it: FlashAttention-3's
#: `FlashAttnFwdSm90`/`FlashAttnBwdSm90` (and the forward's split-KV `FlashAttnFwdCombine`),
#: FlashAttention-2's `flash_fwd_*`/`flash_bwd_*`, xFormers' `fmha_cutlassF`/`fmha_cutlassB`,
#: CK's `fmha_fwd`/`fmha_bwd`, AOTriton's `attn_fwd`/`bwd_kernel_*`. Backward first: a
#: backward kernel's arguments never name the forward, while names without either (a paged
#: decode kernel) say nothing.
_PASSES = (
    ("backward", re.compile(r"Bwd|_bwd|bwd_|cutlassB_|[Bb]ackward")),
    ("forward", re.compile(r"Fwd|_fwd|fwd_|cutlassF_|[Ff]orward")),
)


def kernel_pass(name: str) -> str | None:
    """ "forward" or "backward" where an attention kernel's name says which, else None."""
    return next((p for p, pattern in _PASSES if pattern.search(name)), None)


def library_op_backend(op_name: str) -> str | None:
    """The backend a library's own attention op names (`_vllm_fa3_C::fwd` -> flash-attn 3)."""
    return next((b for prefix, b in LIBRARY_OPS if op_name.startswith(prefix)), None)
