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

Pure string work, no trace needed; `decode` is cached because traces repeat
the same few hundred names thousands of times.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

__all__ = ["KernelName", "decode", "strip_cpp"]


@dataclass(frozen=True)
class KernelName:
    raw: str
    short: str
    family: str
    library: str  # "cuBLAS", "CUTLASS", "cuDNN", "Triton", "ATen", "NCCL", "hipBLASLt", ...
    kind: str  # "gemm", "conv", "attention", "elementwise", "reduction", "copy", "collective", ...
    arch: str | None = None  # "sm80", "sm90", "ampere", "gfx942"
    dtype: str | None = None  # "bf16", "f16", "f32", "tf32", "fp8", ...
    mma: str | None = None  # "s16816", "16x16x16"
    tile: str | None = None  # "128x256" (or MxNxK where the name gives K)
    stages: int | None = None
    layout: str | None = None  # "nn", "tn", "nt", "tt": which operands are read transposed
    epilogue: tuple[str, ...] = ()
    triton_kind: str | None = None  # "pointwise", "reduction", "persistent reduction", ...
    fused_ops: tuple[str, ...] = field(default=())

    def describe(self) -> str:
        """One line: library, kind and the decoded fields that are present."""
        parts = [self.library, self.kind]
        if self.triton_kind:
            parts.append(self.triton_kind)
        for label, value in (
            ("arch", self.arch),
            ("dtype", self.dtype),
            ("mma", self.mma),
            ("tile", self.tile),
            ("stages", self.stages),
            ("layout", self.layout),
        ):
            if value is not None:
                parts.append(f"{label} {value}")
        if self.epilogue:
            parts.append("epilogue " + "+".join(self.epilogue))
        if self.fused_ops:
            parts.append("fuses " + ", ".join(self.fused_ops))
        return ", ".join(parts)


def _named(name: str, library: str, kind: str, **fields) -> KernelName:
    """A `KernelName` whose short name is the raw name and whose family is
    `library:kind`, the common case for library kernels named without C++ syntax."""
    return KernelName(
        raw=name, short=name, family=f"{library}:{kind}", library=library, kind=kind, **fields
    )


# ---------------------------------------------------------------- C++ names
def _strip_balanced(text: str, open_: str, close: str) -> str:
    out = []
    depth = 0
    for ch in text:
        if ch == open_:
            depth += 1
        elif ch == close:
            depth = max(depth - 1, 0)
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def _template_args(text: str) -> list[str]:
    """Top-level arguments of the first template argument list in `text`."""
    start = text.find("<")
    if start < 0:
        return []
    args, depth, current = [], 0, []
    for ch in text[start:]:
        if ch in "<(":
            depth += 1
            if depth == 1:
                continue
        elif ch in ">)":
            depth -= 1
            if depth == 0:
                args.append("".join(current).strip())
                break
        elif ch == "," and depth == 1:
            args.append("".join(current).strip())
            current = []
            continue
        current.append(ch)
    return [a for a in args if a]


_PREFIX_RE = re.compile(r"^(?:void|std::enable_if<.*?>::type|__global__)\s+")
_GENERIC_WRAPPERS = {
    "gpu_kernel_impl",
    "gpu_kernel_impl_nocast",
    "ReduceOp",
    "func_wrapper_t",
    "TensorListMetadata",
    "TensorListScalarListMetadata",
    "OpaqueType",
    "Array",  # at::detail::Array<char*, N>: the kernel's data pointers, not its op
    "AUnaryFunctor",  # binary ops with one scalar operand wrap the real functor
    "BUnaryFunctor",
    "BinaryFunctor",
}
_BUILTIN_TYPES = re.compile(
    r"^(?:(?:unsigned|signed|const|long|short)\s+)*"
    r"(?:(?:float|double|int|long|char|bool|short|unsigned|half)[1-4]?|c10::\w+|__\w+|at::\w+::\w+)$"
)


def _functor(text: str, depth: int = 0) -> str | None:
    """The op a templated ATen kernel applies, e.g. `CUDAFunctor_add` or `GeluCUDAKernelImpl`."""
    if depth > 3:
        return None
    text = text.replace("(anonymous namespace)::", "")
    for arg in _template_args(text):
        if (
            re.fullmatch(r"[-\d\s]+[lu]*", arg)
            or arg in ("true", "false", "nullptr")
            or _BUILTIN_TYPES.match(arg)
        ):
            continue
        head = re.split(r"[<(]", arg, maxsplit=1)[0]
        name = head.split("::")[-1].strip()
        if not name or name.startswith("{lambda") or name == "(anonymous namespace)":
            continue
        if name in _GENERIC_WRAPPERS:
            inner = _functor(arg, depth + 1)
            if inner:
                return inner
            continue
        if re.fullmatch(r"[A-Za-z_]\w*", name):
            return name
    return None


_GENERIC_BASES = {"kernel", "Kernel", "Kernel2", "kentry", "device_kernel", "kernel_impl"}


def strip_cpp(name: str) -> str:
    """`void ns::kern<T, 4>(float*, int)` -> `kern`: the function name alone.

    A generic function name (`kernel`) keeps its enclosing namespace (`gemvx::kernel`).
    """
    text = _PREFIX_RE.sub("", name.strip())
    text = text.replace("(anonymous namespace)::", "")
    parts = _strip_balanced(_strip_balanced(text, "<", ">"), "(", ")").strip().split("::")
    parts = [p.strip() for p in parts if p.strip()]
    if not parts:
        return name
    if parts[-1] in _GENERIC_BASES and len(parts) > 1:
        return "::".join(parts[-2:])
    return parts[-1]


def _demangled_parts(name: str) -> list[str]:
    """Nested-name components of an Itanium-mangled name (`_ZN2ck6device4kernI...`)."""
    m = re.match(r"_ZN?(.*)", name)
    rest = m.group(1) if m else ""
    parts = []
    while rest:
        lm = re.match(r"(\d+)", rest)
        if not lm:
            break
        n = int(lm.group(1))
        start = lm.end()
        parts.append(rest[start : start + n])
        rest = rest[start + n :]
    return parts


# ---------------------------------------------------------------- fields
_DTYPE_TOKENS = [
    ("tf32", "tf32"),
    ("bf16", "bf16"),
    ("bfloat16", "bf16"),
    ("fp16", "f16"),
    ("f16", "f16"),
    ("half", "f16"),
    ("e4m3", "fp8"),
    ("e5m2", "fp8"),
    ("fp8", "fp8"),
    ("mxfp4", "fp4"),
    ("e2m1", "fp4"),
    ("int8", "int8"),
    ("i8", "int8"),
    ("f64", "f64"),
    ("fp32", "f32"),
    ("f32", "f32"),
    ("float", "f32"),
]
_CPP_DTYPES = [
    (re.compile(r"BFloat16|bfloat16|__nv_bfloat16|__hip_bfloat16|DF16b"), "bf16"),
    (re.compile(r"c10::Half|__half\b|\bhalf\b|DF16_"), "f16"),
    (re.compile(r"Float8|fp8|e4m3|e5m2", re.I), "fp8"),
    (re.compile(r"\bdouble\b"), "f64"),
    (re.compile(r"\bfloat\b"), "f32"),
]
_EPILOGUES = {
    "relu": "relu",
    "gelu": "gelu",
    "silu": "silu",
    "swiglu": "swiglu",
    "bias": "bias",
    "biasm": "bias",
    "biasn": "bias",
}


def _tokens(name: str) -> list[str]:
    return [t for t in re.split(r"[_\W]+", name.lower()) if t]


def _dtype_from_tokens(tokens: list[str]) -> str | None:
    for tok in tokens:
        for key, value in _DTYPE_TOKENS:
            if key in tok:
                return value
    return None


def _dtype_from_cpp(name: str) -> str | None:
    """The first element type named in the template/argument lists."""
    best: tuple[int, str] | None = None
    for pattern, value in _CPP_DTYPES:
        m = pattern.search(name)
        if m and (best is None or m.start() < best[0]):
            best = (m.start(), value)
    return best[1] if best else None


def _epilogue(tokens: list[str]) -> tuple[str, ...]:
    found = []
    for tok in tokens:
        value = _EPILOGUES.get(tok)
        if value and value not in found:
            found.append(value)
    return tuple(found)


#: Architecture tags, first match wins: (pattern on the lower-cased name, tag prefix).
_ARCH_PATTERNS = tuple(
    (re.compile(pattern), prefix)
    for pattern, prefix in (
        (r"cutlass_(\d{2,3})", "sm"),
        (r"(?:^|_|\b)sm_?(\d{2,3})[a-z]?(?:_|$|\b)", "sm"),
        (r"sm(\d{2,3})a?kernel", "sm"),
        (r"gfx(\d{2,3}[0-9a-f]?)", "gfx"),
        (r"(?:^|_)isa(\d{2,3}[0-9a-f]?)(?:_|$)", "gfx"),
        (r"(?:^|_)(maxwell|pascal|volta|turing|ampere|hopper|blackwell)(?:_|$)", ""),
    )
)


def _arch(name: str) -> str | None:
    low = name.lower()
    for pattern, prefix in _ARCH_PATTERNS:
        if m := pattern.search(low):
            return prefix + m.group(1)
    return None


def _layout(name: str) -> str | None:
    m = re.search(r"_(nn|nt|tn|tt)(?:_|$)", name, re.I)
    if m:
        return m.group(1).lower()
    return None


# ---------------------------------------------------------------- Triton
_TRITON_RE = re.compile(r"^triton_(poi|red|per|tem|for|mm|bmm|conv)_(.*?)(?:_(\d+))?$")
_TRITON_KINDS = {
    "poi": "pointwise",
    "red": "reduction",
    "per": "persistent reduction",
    "tem": "template",
    "for": "foreach",
    "mm": "template",
    "bmm": "template",
    "conv": "template",
}
#: aten op names that contain underscores, so the fused list splits correctly.
_MULTIWORD_OPS = {
    tuple(op.split("_"))
    for op in [
        "_to_copy",
        "_unsafe_view",
        "_softmax",
        "_log_softmax",
        "native_layer_norm",
        "native_group_norm",
        "native_batch_norm",
        "native_dropout",
        "empty_like",
        "zeros_like",
        "ones_like",
        "full_like",
        "rand_like",
        "randn_like",
        "constant_pad_nd",
        "bitwise_and",
        "bitwise_or",
        "bitwise_not",
        "bitwise_xor",
        "logical_and",
        "logical_or",
        "logical_not",
        "index_put",
        "index_select",
        "scatter_add",
        "masked_fill",
        "as_strided",
        "new_zeros",
        "new_empty",
        "new_ones",
        "avg_pool2d",
        "max_pool2d_with_indices",
        "upsample_nearest2d",
        "upsample_bilinear2d",
        "split_with_sizes",
        "slice_scatter",
        "select_scatter",
        "clamp_min",
        "clamp_max",
        "threshold_backward",
        "gelu_backward",
        "silu_backward",
        "sigmoid_backward",
        "tanh_backward",
        "native_layer_norm_backward",
        "_softmax_backward_data",
        "_log_softmax_backward_data",
        "var_mean",
        "embedding_dense_backward",
        "scalar_tensor",
        "lift_fresh",
        "moe_forward",
        "rsqrt_",
        "convolution_backward",
        "reflection_pad2d",
        "replication_pad2d",
        "index_add",
        "nll_loss_forward",
        "nll_loss_backward",
        "mse_loss",
        "max_pool2d",
        "avg_pool2d_backward",
        "leaky_relu",
        "hardtanh_backward",
    ]
}
_MAX_OP_WORDS = max(len(op) for op in _MULTIWORD_OPS)


def _split_fused_ops(text: str) -> tuple[str, ...]:
    """`_to_copy_add_native_layer_norm` -> (`_to_copy`, `add`, `native_layer_norm`)."""
    parts = text.split("_")
    ops: list[str] = []
    i = 0
    while i < len(parts):
        lead = ""
        while i < len(parts) and parts[i] == "":
            lead = "_"
            i += 1
        if i >= len(parts):
            break
        taken = 1
        for width in range(min(_MAX_OP_WORDS, len(parts) - i), 1, -1):
            words = tuple(([""] if lead else []) + parts[i : i + width])
            if words in _MULTIWORD_OPS:
                taken = width
                break
        ops.append(lead + "_".join(parts[i : i + taken]))
        i += taken
    return tuple(ops)


def _decode_triton(name: str) -> KernelName | None:
    m = _TRITON_RE.match(name)
    if not m:
        return None
    code, body, _index = m.groups()
    ops: tuple[str, ...] = ()
    if body.startswith("fused_"):
        ops = _split_fused_ops(body[len("fused_") :])
    elif body == "fused" or not body:
        ops = ()
    else:
        ops = _split_fused_ops(body)
    triton_kind = _TRITON_KINDS[code]
    kind = {"pointwise": "elementwise", "template": "gemm", "foreach": "elementwise"}.get(
        triton_kind, "reduction"
    )
    key = f"triton_{code}_{body}"
    return KernelName(
        raw=name,
        short=name,
        family=f"Triton:{key}",
        library="Triton",
        kind=kind,
        triton_kind=triton_kind,
        fused_ops=ops,
    )


# ---------------------------------------------------------------- vendors
def _decode_tensile(name: str) -> KernelName:
    """rocBLAS/hipBLASLt kernels generated by Tensile: `Cijk_Ailk_Bljk_BBS_..._MT128x64x32_...`."""
    library = "hipBLASLt" if "_UserArgs" in name else "rocBLAS"
    tokens = name.split("_")
    a = next((t for t in tokens if t.startswith("A") and len(t) == 4), "")
    b = next((t for t in tokens if t.startswith("B") and len(t) == 4 and t != "BBS_"), "")
    layout = None
    if a in ("Ailk", "Alik") and b in ("Bljk", "Bjlk"):
        layout = ("n" if a == "Ailk" else "t") + ("n" if b == "Bljk" else "t")
    dtype = None
    if len(tokens) > 3:
        code = tokens[3]
        dtype = {"S": "f32", "D": "f64", "H": "f16", "B": "bf16", "I": "int8", "F": "fp8"}.get(
            code[:1]
        )
    tile = re.search(r"_MT(\d+x\d+x\d+)", name)
    mma = re.search(r"_MI(\d+x\d+x\d+(?:x\d+)?)", name)
    short = "_".join(tokens[:4]) + (f"_MT{tile.group(1)}" if tile else "")
    return KernelName(
        raw=name,
        short=short,
        family=f"{library}:gemm",
        library=library,
        kind="gemm",
        arch=_arch(name),
        dtype=dtype,
        mma=mma.group(1) if mma else None,
        tile=tile.group(1) if tile else None,
        layout=layout,
        epilogue=("bias",) if "_Bias" in name else (),
    )


def _decode_cutlass(name: str, inner: str) -> KernelName:
    """`cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x6_tn_align8`."""
    low = inner.lower()
    tokens = _tokens(inner)
    m = re.search(r"_(\d+)x(\d+)_(\d+)x(\d+)_", low)
    tile = f"{m.group(1)}x{m.group(2)}" if m else None
    stages = int(m.group(4)) if m else None
    mma = re.search(r"_(s\d{3,6})gemm", low)
    dtype = _dtype_from_tokens(tokens[2:])
    if dtype is None and ("sgemm" in low or (mma and mma.group(1) == "s1688")):
        dtype = "tf32" if mma else "f32"
    kind = "conv" if re.search(r"conv|fprop|dgrad|wgrad", low) else "gemm"
    return KernelName(
        raw=name,
        short=inner,
        family=f"CUTLASS:{kind}",
        library="CUTLASS",
        kind=kind,
        arch=_arch(inner),
        dtype=dtype,
        mma=mma.group(1) if mma else None,
        tile=tile,
        stages=stages,
        layout=_layout(inner),
        epilogue=_epilogue(tokens),
    )


def _decode_xmma(name: str) -> KernelName:
    """`sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_..._cublas`."""
    low = name.lower()
    library = "cuDNN" if "cudnn" in low else "cuBLAS"
    kind = "conv" if re.search(r"fprop|dgrad|wgrad|conv", low) else "gemm"
    m = re.search(r"xmma_\w*?gemm\w*?_([a-z0-9]+)_([a-z0-9]+)_", low)
    dtype = None
    if m:
        types = re.findall(r"tf32|bf16|f16|f32|f64|e4m3|e5m2|i8", m.group(1) + "_" + m.group(2))
        if "tf32" in types:
            dtype = "tf32"
        elif types:
            dtype = _dtype_from_tokens([types[0]])
    tile = re.search(r"tilesize(\d+x\d+x\d+)", low)
    stages = re.search(r"stage(\d+)", low)
    mma = re.search(r"tensor(\d+x\d+x\d+)", low)
    return _named(
        name,
        library,
        kind,
        arch=_arch(name),
        dtype=dtype,
        mma=mma.group(1) if mma else None,
        tile=tile.group(1) if tile else None,
        stages=int(stages.group(1)) if stages else None,
        layout=_layout(name),
        epilogue=_epilogue(_tokens(name)),
    )


_TRTLLM_GEN_RE = re.compile(r"^(bmm|gemm)_\w*?_t(\d+x\d+x\d+)\w*?_s(\d+)_\w*?_m(\d+x\d+x\d+)_")


def _decode_trtllm_gen(name: str, m: re.Match) -> KernelName:
    """TensorRT-LLM's generated GEMMs (trtllm-gen, shipped in FlashInfer):
    `bmm_Bfloat16_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_et128x16_m128x16x32_..._TN_..._sm100f`."""
    tokens = _tokens(name)
    lm = re.search(r"_([TN]{2})_", name)
    return KernelName(
        raw=name,
        short=name,
        family="TensorRT-LLM:gemm",
        library="TensorRT-LLM",
        kind="gemm",
        arch=_arch(name),
        dtype=_dtype_from_tokens(tokens[1:3]),
        mma=m.group(4),
        tile=m.group(2),
        stages=int(m.group(3)),
        layout=lm.group(1).lower() if lm else None,
        epilogue=_epilogue(tokens),
    )


def _decode_prefixed_blas(name: str, library: str, kind: str) -> KernelName:
    """`ampere_sgemm_128x64_tn`, `cudnn_volta_scudnn_128x64_relu_small_nn_v1`, `nvjet_tst_...`."""
    low = name.lower()
    tokens = _tokens(name)
    tile = re.search(r"_(\d+x\d+)(?:_|$)", low)
    mma = re.search(r"_([shi]\d{3,6})gemm", low)
    sm = re.search(r"stages_\d+x(\d+)", low)
    stages = int(sm.group(1)) if sm else None
    layout = _layout(name)
    if low.startswith("nvjet"):
        m = re.search(r"_(\d+x\d+)_(\d+)x(\d+)_", low)
        if m:
            stages = int(m.group(3))
        lm = re.search(r"_([TN]{3})$", name)
        layout = lm.group(1)[:2].lower() if lm else layout
    dtype = None
    if re.search(r"_(?:s|sc|gc)?(?:gemm|scudnn)", low) and not re.search(r"h\d*gemm|hgemm", low):
        dtype = "f32"
    if re.search(r"_h(?:\d+)?gemm|hgemm|hscudnn", low):
        dtype = "f16"
    dtype = _dtype_from_tokens(tokens) or dtype
    return _named(
        name,
        library,
        kind,
        arch=_arch(name),
        dtype=dtype,
        mma=mma.group(1) if mma else None,
        tile=tile.group(1) if tile else None,
        stages=stages,
        layout=layout,
        epilogue=_epilogue(tokens),
    )


_CUTLASS3_RE = re.compile(r"cutlass3x_(sm\d+)_\w*?(gemm|conv)\w*?_(\d+x\d+x\d+)_(\d+x\d+x\d+)_")


def _decode_cutlass3(name: str, m: re.Match) -> KernelName:
    """CUTLASS 3 (Hopper+) names, e.g. from Inductor's CUTLASS backend:
    `cutlass3x_sm90_tensorop_gemm_bf16_bf16_f32_bf16_bf16_128x256x64_1x2x1_0_tnn_align8_...`."""
    low = name.lower()
    kind = "conv" if m.group(2) == "conv" else "gemm"
    lm = re.search(r"_([tn]{3})_align", low)
    return KernelName(
        raw=name,
        short=strip_cpp(name) if "(" in name or "<" in name else name,
        family=f"CUTLASS:{kind}",
        library="CUTLASS",
        kind=kind,
        arch=m.group(1),
        dtype=_dtype_from_tokens(_tokens(low.split(m.group(2), 1)[1])),
        tile=m.group(3),
        layout=lm.group(1)[:2] if lm else None,
        epilogue=_epilogue(_tokens(name)),
    )


def _kind_of(text: str) -> str:
    low = text.lower()
    checks = [
        ("collective", r"nccl|rccl|all_?reduce|all_?gather|reduce_?scatter|sendrecv|alltoall"),
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
    head = _PREFIX_RE.sub("", name.strip()).replace("(anonymous namespace)::", "")
    head = re.split(r"[<(]", head, maxsplit=1)[0].lower()
    for pattern, library in _LIBRARY_PATTERNS:
        if re.search(pattern, head):
            return library
    return "other"


@lru_cache(maxsize=16384)
def decode(name: str) -> KernelName:
    """Everything the kernel name says; see the module docstring for the fields."""
    name = name.strip()
    low = name.lower()
    triton = _decode_triton(name)
    if triton:
        return triton
    if name.startswith("Cijk_"):
        return _decode_tensile(name)
    m3 = _CUTLASS3_RE.search(low)
    if m3:
        return _decode_cutlass3(name, m3)
    m = re.search(r"(cutlass_\d+_\w+)", name)
    if m and "cutlass" in low:
        return _decode_cutlass(name, m.group(1))
    if re.match(r"sm\d{2,3}_xmma_", low):
        return _decode_xmma(name)
    if re.match(r"(maxwell|pascal|volta|turing|ampere|hopper)_\w*gemm", low) or low.startswith(
        "nvjet"
    ):
        return _decode_prefixed_blas(name, "cuBLAS", "gemm")
    m = _TRTLLM_GEN_RE.match(name)
    if m:
        return _decode_trtllm_gen(name, m)
    if re.search(r"(?:^|_)scudnn", low):
        return _decode_prefixed_blas(name, "cuDNN", "conv")

    library = _library_of(name)
    if name.startswith("_Z"):
        parts = _demangled_parts(name)
        base = parts[-1] if parts else name
        qualified = "::".join(p for p in parts if not p.startswith("_GLOBAL"))
        kind = _kind_of(qualified or base)
        short = base
        dtype = _dtype_from_cpp(name)
        arch_text = qualified
    else:
        base = strip_cpp(name)
        head = _PREFIX_RE.sub("", name).replace("(anonymous namespace)::", "")
        lt, paren = head.find("<"), head.find("(")
        # template arguments of the kernel itself, not of its parameter types
        op = _functor(head) if lt >= 0 and (paren < 0 or lt < paren) else None
        short = f"{base}<{op}>" if op else base
        kind = _kind_of(base + " " + (op or ""))
        dtype = _dtype_from_cpp(name) if "<" in name or "(" in name else None
        if dtype is None:
            dtype = _dtype_from_tokens(_tokens(base))
        arch_text = base
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
            dtype=_dtype_from_tokens(_tokens(name)),
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
        arch=_arch(arch_text),
        dtype=dtype,
        epilogue=_epilogue(_tokens(base)) if kind in ("gemm", "conv") else (),
    )
