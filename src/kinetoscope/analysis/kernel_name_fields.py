"""The single fields a kernel name may encode: dtype, epilogue, architecture, layout.

Every library spells them in its own tokens (`bf16`, `BFloat16`, `DF16b`;
`sm90`, `gfx942`, `ampere`); the per-library decoders share these readers so
that one spelling maps to one value everywhere.
"""

from __future__ import annotations

import re

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


def name_tokens(name: str) -> list[str]:
    return [t for t in re.split(r"[_\W]+", name.lower()) if t]


def dtype_from_tokens(tokens: list[str]) -> str | None:
    for tok in tokens:
        for key, value in _DTYPE_TOKENS:
            if key in tok:
                return value
    return None


def dtype_from_cpp(name: str) -> str | None:
    """The first element type named in the template/argument lists."""
    best: tuple[int, str] | None = None
    for pattern, value in _CPP_DTYPES:
        m = pattern.search(name)
        if m and (best is None or m.start() < best[0]):
            best = (m.start(), value)
    return best[1] if best else None


def epilogue_of(tokens: list[str]) -> tuple[str, ...]:
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


def arch_of(name: str) -> str | None:
    low = name.lower()
    for pattern, prefix in _ARCH_PATTERNS:
        if m := pattern.search(low):
            return prefix + m.group(1)
    return None


def layout_of(name: str) -> str | None:
    m = re.search(r"_(nn|nt|tn|tt)(?:_|$)", name, re.I)
    if m:
        return m.group(1).lower()
    return None


def group_of(pattern: str, text: str) -> str | None:
    """The first group of `pattern`'s first match in `text`, None without a match: the
    optional fields (tile, mma shape, stages) that a kernel name may or may not spell."""
    m = re.search(pattern, text)
    return m.group(1) if m else None
