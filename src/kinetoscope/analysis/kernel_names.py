"""Decode GPU kernel names into what they say about the work.

A kernel name is the dispatcher's decision written down: `ampere_sgemm_128x64_tn`
says cuBLAS picked an FP32 SIMT GEMM for Ampere with a 128x64 tile and the first
operand read transposed. Two runs with the same name did the same GPU work; a
changed name means another branch was taken. `decode(name)` turns any kernel
name (CUDA or ROCm, demangled or not) into a `KernelName`:

- `short`: a display name without C++ namespaces, template and function
  arguments (`vectorized_elementwise_kernel<CUDAFunctor_add>`); the same
  kernel gets the same `short` whatever the dtype template argument.
- `family`: a coarser key, `"<library>:<what>"`, for matching kernels across
  runs: GEMMs/convolutions/attention of one library share a family whatever the
  tile or dtype (`"cuBLAS:gemm"`), Triton kernels match by kind and fused op list
  without Inductor's graph-order index (`"Triton:triton_poi_fused_add_mul"`),
  anything else by `short`.
- the decoded fields: `library`, `kind`, `arch`, `dtype`, `mma`, `tile`,
  `stages`, `layout`, `epilogue`, and for Inductor's Triton kernels
  `triton_kind` and `fused_ops`. Fields the name does not encode are None/empty.

Pure string work, no trace needed. Analyses and rules call `decoded(trace,
name)`, which decodes each name once per trace (`Trace.memo`): traces repeat
the same few hundred names thousands of times, and a cache kept on the trace
dies with it, where a module-level one kept every name of every trace a
long process ever read.

This module is the dispatcher: it picks the decoder for the name's grammar
(`triton_kernel_names`, `vendor_kernel_names`, `cutlass_kernel_names` for the
kernels CUTLASS 3 launches through `cutlass::device_kernel<...>`) or reads library and kind from
the C++ name (`cpp_kernel_names`); the record lives in `kernel_name_record`.
"""

from __future__ import annotations

import dataclasses
import re

from ..trace import Trace
from .collective_names import collective_family, on_rocm
from .cpp_kernel_names import (
    demangled_parts,
    functor_of,
    signature_display,
    strip_cpp,
    strip_declaration,
)
from .cutlass_kernel_names import decode_wrapped, maybe_wrapped
from .kernel_name_fields import arch_of, dtype_from_cpp, dtype_from_tokens, epilogue_of, name_tokens
from .kernel_name_record import KernelName
from .triton_kernel_names import decode_triton
from .vendor_kernel_names import (
    CUTLASS3_RE,
    TRTLLM_GEN_RE,
    decode_cutlass,
    decode_cutlass3,
    decode_prefixed_blas,
    decode_tensile,
    decode_trtllm_gen,
    decode_xmma,
)

__all__ = ["KernelName", "decode", "decoded", "display_name", "strip_cpp"]


def display_name(name: str, limit: int = 90) -> str:
    """The one name every table, title and label shows for an event named `name`: a C++
    kernel without its return type (`std::enable_if<...>::type` included) or parameter
    list, a CUTLASS/CuTe `device_kernel<...>` as the kernel inside it (`FlashAttnFwdSm90
    (FA3 forward, bf16, ...)`), anything else as recorded; cut to `limit` characters."""
    wrapped = decode_wrapped(strip_declaration(name)) if maybe_wrapped(name) else None
    if wrapped is None:
        return signature_display(name, limit)
    text = wrapped.short
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _kind_of(text: str) -> str:
    low = text.lower()
    checks = [
        ("collective", r"nccl|rccl|all_?reduce|all_?gather|reduce_?scatter|sendrecv|alltoall"),
        # KV-cache stores and page-index builders carry an attention library's name
        # (`reshape_and_cache_flash_kernel`, `create_flashinfer_kv_indices_triton`) but copy
        ("copy", r"and_cache|kv_indices|store_kv"),
        ("attention", r"flash|fmha|attn|attention|sdpa|sage_fwd"),
        ("conv", r"conv|winograd|im2col|fprop|dgrad|wgrad|implicit_gemm"),
        ("gemm", r"gemm|gemv|matmul|\bbmm|^bmm|_mm_|dot_kernel|splitk"),
        ("reduction", r"reduce|softmax|norm|moments|topk|sort|scan|argmax|sum_"),
        ("copy", r"copy|transpose|cat_?array|gather|scatter|index|permute|memcpy|memset"),
        ("elementwise", r"elementwise|functor|fill|apply_kernel|distribution|act_and_mul"),
    ]
    for kind, pattern in checks:
        if re.search(pattern, low):
            return kind
    return "other"


_LIBRARY_PATTERNS = [
    (r"^nccl|nccl\w*kernel", "NCCL"),
    (r"^rccl|rccl", "RCCL"),
    (r"cask_cudnn|^cudnn|cudnn::|cudnn_|convolve_sgemm|fft2d_|winograd", "cuDNN"),
    (
        r"cublaslt|nvjet|gemvx|gemmsn|gemmk1|gemvnsp|cublas|splitkreduce|scal_kernel|dot_kernel"
        r"|reduce_1block_kernel",
        "cuBLAS",
    ),
    (
        r"^igemm_|naive_conv|im2d2col|subtensorop|transpose_nchw2cnhw|transpose_cnhw2nchw"
        r"|^batched_transpose_|miopen",
        "MIOpen",
    ),
    (r"pytorch_flash|flash_fwd|flash_bwd|flash::", "FlashAttention"),
    (r"fmha", "FMHA"),
    (r"^_zn2ck|^_zn7ck_tile|\bck::|ck_tile::", "CK"),
    (r"rocprim", "rocPRIM"),
    (r"\bcub::|at_cuda_detail::cub", "CUB"),
    (
        r"fbgemm|split_embedding|embedding_codegen|bounds_check_indices|permute_pooled_embs",
        "FBGEMM",
    ),
    (r"^_zn5aiter|aiter::", "aiter"),
    (r"vllm::", "vLLM"),
    (r"^at::|^at_cuda_detail|^cunn_", "ATen"),
]


def _library_of(name: str) -> str:
    """Library from the kernel's own qualified name (arguments name other libraries' types)."""
    head = strip_declaration(name).replace("(anonymous namespace)::", "")
    head = re.split(r"[<(]", head, maxsplit=1)[0].lower()
    for pattern, library in _LIBRARY_PATTERNS:
        if re.search(pattern, head):
            return library
    return "other"


#: characters of a name that are parsed (the longest real CUTLASS/Triton names are
#: a few thousand); the parsers walk a name per character in Python, so a 10 MB
#: name in a damaged trace cost 13 s of `explain` before this bound
LONGEST_PARSED = 16384


def decoded(trace: Trace, name: str) -> KernelName:
    """`decode(name)`, once per name of `trace` (see the module docstring)."""
    return trace.memo(_decoded, name)


def _decoded(trace: Trace, name: str) -> KernelName:
    k = decode(name)
    if k.library == "NCCL" and trace.memo(on_rocm):  # RCCL keeps NCCL's kernel names
        return dataclasses.replace(k, library="RCCL", family=k.family.replace("NCCL:", "RCCL:", 1))
    return k


def decode(name: str) -> KernelName:
    """Everything the kernel name says; see the module docstring for the fields."""
    if len(name) > LONGEST_PARSED:
        return dataclasses.replace(decode(name[:LONGEST_PARSED]), raw=name.strip())
    name = name.strip()
    low = name.lower()
    triton = decode_triton(name)
    if triton:
        return triton
    if name.startswith("Cijk_"):
        return decode_tensile(name)
    wrapped = decode_wrapped(strip_declaration(name)) if maybe_wrapped(name) else None
    if wrapped:
        return dataclasses.replace(wrapped, raw=name)
    m3 = CUTLASS3_RE.search(low)
    if m3:
        return decode_cutlass3(name, m3)
    m = re.search(r"(cutlass_\d+_\w+)", name)
    if m and "cutlass" in low:
        return decode_cutlass(name, m.group(1))
    if re.match(r"sm\d{2,3}_xmma_", low):
        return decode_xmma(name)
    if re.match(r"(maxwell|pascal|volta|turing|ampere|hopper)_\w*gemm", low) or low.startswith(
        "nvjet"
    ):
        return decode_prefixed_blas(name, "cuBLAS", "gemm")
    m = TRTLLM_GEN_RE.match(name)
    if m:
        return decode_trtllm_gen(name, m)
    if re.search(r"(?:^|_)scudnn", low):
        return decode_prefixed_blas(name, "cuDNN", "conv")

    library = _library_of(name)
    family = collective_family(name)  # collectives: the library that moves the data
    if family is not None:
        library = family
    if name.startswith("_Z"):
        parts = demangled_parts(name)
        base = parts[-1] if parts else name
        qualified = "::".join(p for p in parts if not p.startswith("_GLOBAL"))
        kind = _kind_of(qualified or base)
        short = base
        dtype = dtype_from_cpp(name)
        arch_text = qualified
    else:
        base = strip_cpp(name)
        head = strip_declaration(name).replace("(anonymous namespace)::", "")
        lt, paren = head.find("<"), head.find("(")
        # template arguments of the kernel itself, not of its parameter types
        op = functor_of(head) if lt >= 0 and (paren < 0 or lt < paren) else None
        short = f"{base}<{op}>" if op else base
        kind = _kind_of(base + " " + (op or ""))
        dtype = dtype_from_cpp(name) if "<" in name or "(" in name else None
        if dtype is None:
            dtype = dtype_from_tokens(name_tokens(base))
        arch_text = base
    if family is not None:
        kind = "collective"
    if library == "MIOpen":
        if name.startswith("igemm_"):  # implicit-GEMM convolutions (fwd, bwd data, wrw)
            kind = "conv"
        tile = re.search(r"_bt(\d+x\d+x\d+)", name)
        return KernelName(
            raw=name,
            short=short,
            family=f"MIOpen:{kind if kind in ('conv', 'gemm') else short}",
            library=library,
            kind=kind,
            dtype=dtype_from_tokens(name_tokens(name)),
            tile=tile.group(1) if tile else None,
            layout=None,
        )
    coarse = kind in ("gemm", "conv", "attention") and library != "other"
    return KernelName(
        raw=name,
        short=short,
        family=f"{library}:{kind if coarse else short}",
        library=library,
        kind=kind,
        arch=arch_of(arch_text),
        dtype=dtype,
        epilogue=epilogue_of(name_tokens(base)) if kind in ("gemm", "conv") else (),
    )
