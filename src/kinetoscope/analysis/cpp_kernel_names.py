"""C++ kernel-name surgery: strip namespaces, templates and parameter lists.

ATen, CUB, CK and most hand-written kernels reach the trace as demangled C++
declarations (or, on ROCm, still Itanium-mangled); the op they run hides in a
template argument. These helpers find the function name and that op; they know
nothing about libraries or fields.
"""

from __future__ import annotations

import re


def _strip_balanced(text: str, open_: str, close: str) -> str:
    """`text` without what `open_` ... `close` enclose (nested), the brackets included; a
    stray `close` is dropped. Only the brackets are visited (a regex finds them): kernel
    names are long and mostly letters, and a loop over every character made the name
    helpers the hottest code of a report."""
    out, depth, last = [], 0, 0
    for found in re.finditer(f"[{re.escape(open_)}{re.escape(close)}]", text):
        if depth == 0:
            out.append(text[last : found.start()])
        depth = depth + 1 if found.group() == open_ else max(depth - 1, 0)
        last = found.end()
    if depth == 0:
        out.append(text[last:])
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


_ANONYMOUS = "(anonymous namespace)"


#: what `_top_level` looks at: the brackets, and the spaces and "(" it reports
_MARKS = re.compile(r"[()<> ]")


def _top_level(text: str):
    """(position, char) of each space and "(" outside every <...> and (...) in `text`.

    A `>` inside parentheses is an operator (`std::enable_if<((8) > (0)), void>`), not the
    end of a template argument list, so angle brackets count only outside parentheses.
    Only brackets and spaces are visited, as in `_strip_balanced`."""
    angle = paren = 0
    for found in _MARKS.finditer(text):
        ch = found.group()
        if ch == "(":
            if not paren and not angle:
                yield found.start(), ch
            paren += 1
        elif ch == ")":
            paren = max(paren - 1, 0)
        elif paren:
            continue
        elif ch == "<":
            angle += 1
        elif ch == ">":
            angle = max(angle - 1, 0)
        elif not angle:
            yield found.start(), ch


def strip_declaration(name: str) -> str:
    """The kernel's qualified name and arguments without its return type: `void f<T>(x)`
    and `std::enable_if<!(false), void>::type ns::f<T>(x)` both give `ns::f<T>(x)`.

    A demangled kernel is a declaration `<return type> <name>(<parameters>)`; the return type
    ends at the last space outside brackets before the parameter list. Names that are not
    declarations (`Memcpy HtoD (Pinned -> Device)`, `fmhaSm100aKernel_...`) come back as
    they are."""
    text = name.strip()
    spaces = []
    # `(anonymous namespace)::` is part of a name, not a parameter list (same length)
    for pos, ch in _top_level(text.replace(_ANONYMOUS, "_anonymous_namespace_")):
        if ch == " ":
            spaces.append(pos)
        elif ch == "(":
            if spaces and spaces[-1] < pos - 1:  # `f(`, not `Memcpy HtoD (`
                return text[spaces[-1] + 1 :]
            return text
    return text


def signature_display(name: str, limit: int = 90) -> str:
    """A C++ kernel name for a table or a title: no return type, no parameter list, cut to
    `limit` characters (`std::enable_if<...>::type ns::gemv<T>(args)` -> `ns::gemv<T>`).
    Callers show `kernel_names.display_name`, which also reads CUTLASS wrappers."""
    text = strip_declaration(name)
    if text.endswith(")"):
        masked = text.replace(_ANONYMOUS, "_anonymous_namespace_")
        opens = [pos for pos, ch in _top_level(masked) if ch == "("]
        if opens and opens[-1] > 0 and text[opens[-1] - 1] != " ":
            text = text[: opens[-1]]
    return text if len(text) <= limit else text[: limit - 1] + "…"


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
    text = strip_declaration(name).replace("(anonymous namespace)::", "")
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
