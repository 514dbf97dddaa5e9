"""Kernel identity for matching across runs, from the decoded kernel name.

The match key is the full name: a different layout (`_nn_` vs `_tn_`), dtype
or tile is a different kernel, the dispatcher took another branch. Inductor's
Triton kernels are the exception: their trailing graph-order index changes
between compilations of the same code, so they match by kind and fused ops
(the decoder's `family`). A kernel gone and one new of the same family are one
decision changed (`variant_change` says what changed: layout nn -> tn, ...).
"""

from __future__ import annotations

from ..analysis.kernel_name_record import KernelName
from ..analysis.kernel_names import decoded
from ..analysis.kernel_types import kernel_type_in
from ..trace import Trace

#: Decoded fields that name a dispatch choice, in the order they are reported. Not the
#: architecture in a library kernel's name (`volta_sgemm...`, `sm80_xmma...`): that is the
#: target the kernel was built for, which a library also runs on newer GPUs, never the GPU
#: it ran on; the GPU's architecture comes from the trace's device properties
#: (`environment`).
VARIANT_FIELDS = ("library", "dtype", "mma", "tile", "stages", "layout", "epilogue")


def identify_kernel(trace: Trace, name: str) -> tuple[str, str]:
    """(match key, display name) of a raw kernel name of `trace`."""
    k = decoded(trace, name)
    extras = [v for v in (k.dtype, k.layout, k.tile) if v]
    display = k.short + (f" [{' '.join(extras)}]" if extras else "")
    if k.library == "Triton":
        return k.family, display
    return name, display


def identify_kind(trace: Trace, name: str) -> tuple[str, str]:
    """(type, type) of a kernel: gemm, attention, elementwise, ... (comparable across vendors;
    the types `explain` and `summary` show, from `analysis.kernel_types`)."""
    kind = kernel_type_in(trace, name)
    return kind, kind


def _show(value: object) -> str:
    if isinstance(value, tuple):
        return "+".join(value) or "-"
    return "-" if value is None else str(value)


def family(trace: Trace, name: str) -> str:
    return decoded(trace, name).family


def variant_change(a: KernelName, b: KernelName) -> str:
    """Decoded fields that differ between two kernels of one family ("" when only the name does).

    E.g. `layout nn -> tn, tile 128x128 -> 128x32`.
    """
    changes = []
    for field_name in VARIANT_FIELDS:
        x, y = getattr(a, field_name), getattr(b, field_name)
        if x != y:
            changes.append(f"{field_name} {_show(x)} -> {_show(y)}")
    return ", ".join(changes)
