"""C++ kernel-name surgery: strip namespaces, templates and parameter lists.

ATen, CUB, CK and most hand-written kernels reach the trace as demangled C++
declarations (or, on ROCm, still Itanium-mangled); the op they run hides in a
template argument. These helpers find the function name and that op; they know
nothing about libraries or fields.
"""

from __future__ import annotations

import re


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


DECLARATION_PREFIX_RE = re.compile(r"^(?:void|std::enable_if<.*?>::type|__global__)\s+")
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


def functor_of(text: str, depth: int = 0) -> str | None:
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
            inner = functor_of(arg, depth + 1)
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
    text = DECLARATION_PREFIX_RE.sub("", name.strip())
    text = text.replace("(anonymous namespace)::", "")
    parts = _strip_balanced(_strip_balanced(text, "<", ">"), "(", ")").strip().split("::")
    parts = [p.strip() for p in parts if p.strip()]
    if not parts:
        return name
    if parts[-1] in _GENERIC_BASES and len(parts) > 1:
        return "::".join(parts[-2:])
    return parts[-1]


def demangled_parts(name: str) -> list[str]:
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
