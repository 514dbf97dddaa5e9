"""CUTLASS 3 / CuTe kernels named after their wrapper: read the kernel inside it.

CUTLASS 3 launches every kernel through one generic entry point,
`cutlass::device_kernel<Operator>(Operator::Params)` (CUTLASS 2 used
`cutlass::Kernel<Op>`/`Kernel2<Op>`), so the function name is the same for a
FlashAttention-3 forward pass and an FP8 grouped GEMM: what the kernel does is
the template argument. Builds add arch guards around it (FlashAttention-3's and
vLLM's `enable_sm90_or_later<K>`, `enable_sm80_to_sm89<K>`, vLLM's
`enable_sm90_only<K>`), which name nothing either. A display name built from the
function and its first template argument therefore reads
`cutlass::device_kernel<enable_sm90_or_later>` for all of them.

`decode_wrapped(name)` peels the wrapper and the guards and reads the operator:

- FlashAttention-3 (`flash::FlashAttnFwdSm90<Mainloop, Epilogue, Scheduler>`,
  `FlashAttnBwdSm90<...>`, `FlashAttnFwdCombine<...>`, the backward's
  `FlashAttnBwdPreprocess`/`FlashAttnBwdPostprocessConvertdQ`): forward, backward
  or split-KV combine, with the element type and the mainloop's tile (block M x
  block N, head dim), which FA3's launch templates pass as the mainloop's second
  constant shape after the cluster shape;
- CUTLASS 3 GEMMs (`cutlass::gemm::kernel::GemmUniversal<ProblemShape,
  CollectiveMma<Policy<Stages, ClusterShape, Schedule>, TileShape, ElementA, ...>,
  Epilogue>`): grouped when the problem shape is `GroupProblemShape` (one launch
  for many GEMMs of different sizes, as MoE experts need), the element type of A
  (`float_e4m3_t`/`float_e5m2_t`: FP8), the tile, the cluster shape and the
  kernel schedule (pingpong, cooperative). vLLM wraps the same GEMM in its own
  `cutlass_3x_group_gemm<ElementAB, ElementD, ..., TileShape, ClusterShape,
  KernelSchedule, ...>::GemmKernel`, read the same way;
- any other operator: its own name (`FlatKernelTmaWarpSpecializedDeltaRule`).

The display name keeps what tells two such kernels apart (direction, dtype, tile,
cluster, schedule), so three FP8 grouped GEMMs with different tiles are three
rows, not one `device_kernel<GemmKernel>`. Pure string work.
"""

from __future__ import annotations

import re

from .kernel_name_record import KernelName

#: The generic entry points whose template argument is the kernel.
_WRAPPER = re.compile(r"^(?:void\s+)?(?:cutlass::|cute::)?(?:device_kernel|Kernel2?)\s*<")
#: Arch guards that derive from the kernel and add nothing to its name.
_GUARD = re.compile(r"^(?:[\w:]+::)?enable_sm\d+_(?:or_later|only|to_sm\d+)$")
#: CUTLASS element types, most specific first, as (pattern, dtype, shown).
_ELEMENTS = (
    (re.compile(r"float_e4m3_t|float_e4m3|Float8_e4m3"), "fp8", "fp8 e4m3"),
    (re.compile(r"float_e5m2_t|float_e5m2|Float8_e5m2"), "fp8", "fp8 e5m2"),
    (re.compile(r"float_e2m1_t|nv_float4_t|mx_float4_t"), "fp4", "fp4"),
    (re.compile(r"bfloat16_t|BFloat16|__nv_bfloat16"), "bf16", "bf16"),
    (re.compile(r"cutlass::half_t|\bhalf_t\b|c10::Half|__half\b"), "f16", "f16"),
    (re.compile(r"tfloat32_t"), "tf32", "tf32"),
    (re.compile(r"\bint8_t\b|\bint4b_t\b"), "int8", "int8"),
)
#: One compile-time integer inside a CuTe shape: `cute::C<128>`, `C<(int)128>`, `cute::_128`,
#: `_128`, `cute::Int<128>`, `C<128l>`.
_CONSTANT = re.compile(
    r"^(?:cute::)?(?:C<\s*(?:\(\w+\))?\s*(\d+)[lu]*\s*>|_(\d+)|Int<\s*(\d+)[lu]*\s*>)$"
)
_SHAPE = re.compile(r"^(?:cute::)?(?:tuple|Shape)\s*<(.*)>$", re.S)
_SCHEDULES = (("Pingpong", "pingpong"), ("Cooperative", "cooperative"))
_FA3 = re.compile(r"FlashAttn(Fwd|Bwd)Sm(\d+)$")
_FA3_PARTS = {
    "FlashAttnFwdCombine": "split-KV combine",
    "FlashAttnBwdPreprocess": "backward preprocess",
    "FlashAttnBwdPostprocessConvertdQ": "backward dQ convert",
}


def template_args(text: str) -> list[str]:
    """Top-level arguments of the first template argument list in `text`. A `>` inside
    parentheses is an operator (`C<(int)128>` holds none, `enable_if<(8 > 0)>` does), not
    the end of the list."""
    start = text.find("<")
    if start < 0:
        return []
    args, current = [], []
    angle = paren = 0
    for ch in text[start:]:
        if ch == "(":
            paren += 1
        elif ch == ")":
            paren = max(paren - 1, 0)
        elif ch == "<" and not paren:
            angle += 1
            if angle == 1:
                continue
        elif ch == ">" and not paren:
            angle -= 1
            if angle == 0:
                args.append("".join(current).strip())
                break
        elif ch == "," and angle == 1 and not paren:
            args.append("".join(current).strip())
            current = []
            continue
        current.append(ch)
    return [a for a in args if a]


def _head(text: str) -> str:
    """`ns::Name<...>::Member` -> `ns::Name`: the qualified template name of a type."""
    return re.split(r"[<(]", text, maxsplit=1)[0].strip()


def wrapped_operator(name: str) -> str | None:
    """The operator a `device_kernel<...>`/`Kernel2<...>` name runs, guards peeled
    (`flash::FlashAttnFwdSm90<...>`), None for any other name."""
    text = name.strip().replace("(anonymous namespace)::", "")
    if not _WRAPPER.match(text):
        return None
    args = template_args(text)
    if not args:
        return None
    inner = args[0]
    for _ in range(4):  # guards nest at most a couple deep
        if not _GUARD.match(_head(inner)):
            break
        nested = template_args(inner)
        if not nested:
            break
        inner = nested[0]
    return inner


def _ints(args: list[str]) -> tuple[int, ...] | None:
    """The values of a shape's arguments where every one is a compile-time integer."""
    values = []
    for part in args:
        c = _CONSTANT.match(part)
        if not c:
            return None
        values.append(int(next(g for g in c.groups() if g)))
    return tuple(values) or None


def _constants(arg: str) -> tuple[int, ...] | None:
    """(128, 128, 64) for a CuTe shape of compile-time integers, None for anything else."""
    return _ints(template_args(arg)) if _SHAPE.match(arg.strip()) else None


def _shapes(text: str) -> list[tuple[int, ...]]:
    """Every constant CuTe shape in `text`, in order, nested ones included."""
    found = []
    for m in re.finditer(r"(?<!\w)(?:cute::)?(?:tuple|Shape)\s*<", text):
        shape = _ints(template_args(text[m.start() :]))
        if shape:
            found.append(shape)
    return found


def _element(text: str) -> tuple[str, str] | None:
    """(dtype, shown) of the first CUTLASS element type named in `text`."""
    best = None
    for pattern, dtype, shown in _ELEMENTS:
        m = pattern.search(text)
        if m and (best is None or m.start() < best[0]):
            best = (m.start(), dtype, shown)
    return best[1:] if best else None


def _arch(text: str) -> str | None:
    m = re.search(r"(?:arch::Sm|MainloopSm|Sm)(\d{2,3})", text)
    return f"sm{m.group(1)}" if m else None


def _x(shape: tuple[int, ...] | None) -> str | None:
    return "x".join(map(str, shape)) if shape else None


def _fa3(name: str, inner: str, leaf: str) -> KernelName:
    """FlashAttention-3's operators: forward, backward, combine and the backward's helpers."""
    m = _FA3.match(leaf)
    part = ("forward" if m.group(1) == "Fwd" else "backward") if m else _FA3_PARTS[leaf]
    args = template_args(inner)
    mainloop = args[0] if m and args else inner
    shapes = _shapes(mainloop)
    # the launch templates pass ClusterShape before TileShape_MNK (block M, block N, head dim)
    tile = shapes[1] if len(shapes) > 1 else None
    element = _element(inner)
    said = [f"FA3 {part}"]
    if element:
        said.append(element[1])
    if tile and len(tile) == 3:
        said.append(f"tile {tile[0]}x{tile[1]}, hdim {tile[2]}")
    if m and m.group(2) != "90":
        said.append(f"sm{m.group(2)} build")
    return KernelName(
        raw=name,
        short=f"{leaf} ({', '.join(said)})",
        family="FlashAttention:attention",
        library="FlashAttention",
        kind="attention",
        arch=_arch(inner),
        dtype=element[0] if element else None,
        tile=_x(tile[:2]) if tile else None,
    )


def _gemm_parts(inner: str) -> tuple[str | None, tuple | None, tuple | None, str | None]:
    """(text holding the element types, tile, cluster, schedule) of a CUTLASS 3 GEMM."""
    schedule = next((said for key, said in _SCHEDULES if key in inner), None)
    at = inner.find("CollectiveMma<")
    if at >= 0:  # CollectiveMma<Policy<Stages, Cluster, Schedule>, Tile, ElementA, ...>
        args = template_args(inner[at:])
        cluster = next(iter(_shapes(args[0])), None) if args else None
        tile = _constants(args[1]) if len(args) > 1 else None
        return " ".join(args[2:3]) or inner, tile, cluster, schedule
    shapes = [s for s in map(_constants, template_args(inner)) if s]
    if shapes:  # vLLM's cutlass_3x_group_gemm<ElementAB, ElementD, ..., Tile, Cluster, ...>
        return inner, shapes[0], shapes[1] if len(shapes) > 1 else None, schedule
    return inner, None, None, schedule


def _gemm(name: str, inner: str, leaf: str) -> KernelName:
    grouped = "GroupProblemShape" in inner or "group_gemm" in leaf.lower()
    what = "grouped GEMM" if grouped else "GEMM"
    if not grouped and "PtrArray" in inner:
        what = "ptr-array GEMM"
    elements, tile, cluster, schedule = _gemm_parts(inner)
    element = _element(elements or inner) or _element(inner)
    said = [what]
    if element:
        said.append(element[1])
    if tile:
        said.append(f"tile {_x(tile)}")
    if cluster:
        said.append(f"cluster {_x(cluster)}")
    if schedule:
        said.append(schedule)
    return KernelName(
        raw=name,
        short=f"{leaf} ({', '.join(said)})",
        family="CUTLASS:gemm",
        library="CUTLASS",
        kind="gemm",
        arch=_arch(inner),
        dtype=element[0] if element else None,
        tile=_x(tile),
    )


#: A cheap first look (one C regex) before the per-character parse of the declaration.
_MAYBE_WRAPPED = re.compile(r"(?:device_kernel|Kernel2?)\s*<")


def maybe_wrapped(name: str) -> bool:
    """Whether `name` may be a wrapped kernel: callers strip the declaration only then."""
    return _MAYBE_WRAPPED.search(name) is not None


def decode_wrapped(name: str) -> KernelName | None:
    """The `KernelName` of a CUTLASS/CuTe wrapped kernel (see the module docstring), None
    where `name` (a declaration's name, return type stripped) is no such wrapper or its
    operator is one this module does not read (the generic C++ decoding then applies)."""
    inner = wrapped_operator(name)
    if inner is None:
        return None
    head = _head(inner)
    leaf = head.split("::")[-1]
    if head.startswith("flash::") and (_FA3.match(leaf) or leaf in _FA3_PARTS):
        return _fa3(name, inner, leaf)
    if leaf in ("GemmUniversal", "cutlass_3x_group_gemm", "cutlass_3x_gemm") or (
        "GemmUniversal<" in inner and "CollectiveMma<" in inner
    ):
        return _gemm(name, inner, leaf)
    return None
