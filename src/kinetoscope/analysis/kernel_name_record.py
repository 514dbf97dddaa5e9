"""The record `decode` fills in for a kernel name.

Kept apart from the decoders so that every per-library decoder module and the
dispatcher in `kernel_names` build the same frozen record without importing
each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .kernel_name_fields import arch_of


@dataclass(frozen=True)
class KernelName:
    raw: str
    short: str
    family: str
    library: str  # "cuBLAS", "CUTLASS", "cuDNN", "Triton", "ATen", "NCCL", "hipBLASLt", ...
    kind: str  # "gemm", "conv", "attention", "elementwise", "reduction", "copy", "collective", ...
    #: the target the kernel was built for ("sm80", "ampere", "gfx942"), never the GPU: cuBLAS
    #: runs volta_sgemm on Turing and sm80_xmma on Hopper (the GPU: `analysis.gpu_arch`)
    arch: str | None = None
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
            ("built for", self.arch),  # the kernel's build target, not the GPU
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


def named_kernel(name: str, library: str, kind: str, **fields) -> KernelName:
    """A `KernelName` whose short name is the raw name and whose family is
    `library:kind`, the common case for library kernels named without C++ syntax; the
    architecture is read from the name (`arch_of`) unless given."""
    fields.setdefault("arch", arch_of(name))
    return KernelName(
        raw=name, short=name, family=f"{library}:{kind}", library=library, kind=kind, **fields
    )
