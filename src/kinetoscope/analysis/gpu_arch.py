"""The GPU's architecture, from the device properties the profiler recorded.

Kineto writes `deviceProperties` (name, computeMajor, computeMinor) for every
device; the compute capability is the architecture (8.0 Ampere, 9.0 Hopper,
10.0 Blackwell; on ROCm 9.4 is gfx94x, CDNA3). A kernel name's architecture
is something else: the target the library built that kernel for. cuBLAS runs
`volta_sgemm_*` on a Turing T4 or an RTX 2080 Ti and `sm80_xmma_*` on an H100,
because one build serves several generations; reading the GPU from those names
calls a T4 a Volta. So the GPU's architecture comes only from here, and
`KernelName.arch` is only ever the kernel's build target.

Where a trace has no compute capability (old traces), the device name is the
fallback (`"NVIDIA A100-SXM4"` -> Ampere), and `source` says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..trace import Trace

#: NVIDIA compute capability (major, minor) -> architecture; minor None: every minor.
_NVIDIA_CC = (
    ((3, None), "Kepler"),
    ((5, None), "Maxwell"),
    ((6, None), "Pascal"),
    ((7, 0), "Volta"),
    ((7, 2), "Volta"),
    ((7, 5), "Turing"),
    ((8, 9), "Ada Lovelace"),
    ((8, None), "Ampere"),
    ((9, None), "Hopper"),
    ((10, None), "Blackwell"),
    ((11, None), "Blackwell"),
    ((12, None), "Blackwell"),
)
#: AMD gfx9 minor -> CDNA generation (computeMajor.computeMinor is the gfx ISA's major.minor).
_AMD_CC = {(9, 0): "CDNA/CDNA2 (gfx90x)", (9, 4): "CDNA3 (gfx94x)", (9, 5): "CDNA4 (gfx950)"}
#: Device-name fallback for traces without compute capability, first match wins.
_BY_NAME = (
    (r"B200|B100|GB200|B300", "Blackwell", "NVIDIA", "10.0"),
    (r"RTX 50\d0|RTX PRO 6000", "Blackwell", "NVIDIA", "12.0"),
    (r"H100|H200|H800|H20\b|GH200", "Hopper", "NVIDIA", "9.0"),
    (r"L40|L4\b|RTX 40\d0|RTX 6000 Ada|\bL20\b", "Ada Lovelace", "NVIDIA", "8.9"),
    (r"A100|A800|A30\b", "Ampere", "NVIDIA", "8.0"),
    (r"A10\b|A10G|A40\b|A6000|A5000|A4000|RTX 30\d0|A2\b", "Ampere", "NVIDIA", "8.6"),
    (r"T4\b|RTX 20\d0|Quadro RTX|TITAN RTX|GTX 16\d0", "Turing", "NVIDIA", "7.5"),
    (r"V100|TITAN V\b", "Volta", "NVIDIA", "7.0"),
    (r"P100", "Pascal", "NVIDIA", "6.0"),
    (r"P40\b|P4\b|GTX 10\d0", "Pascal", "NVIDIA", "6.1"),
    (r"MI300|MI325", "CDNA3 (gfx94x)", "AMD", "9.4"),
    (r"MI355|MI350", "CDNA4 (gfx950)", "AMD", "9.5"),
    (r"MI250|MI210", "CDNA2 (gfx90a)", "AMD", "9.0"),
    (r"MI100", "CDNA (gfx908)", "AMD", "9.0"),
)


@dataclass(frozen=True)
class GpuArch:
    """The architecture of the trace's (first) GPU and how it was read."""

    name: str  # "Ampere", "Hopper", "CDNA3 (gfx94x)"
    vendor: str | None
    compute_capability: str | None  # "8.0"
    device: str  # the device name as recorded
    source: str  # "deviceProperties compute capability" or "device name"

    @property
    def major(self) -> int | None:
        if not self.compute_capability:
            return None
        return int(self.compute_capability.split(".")[0])

    @property
    def has_tf32_tensor_cores(self) -> bool:
        """NVIDIA Ampere (compute capability 8.0) and newer run fp32 matmuls on tensor cores
        in TF32 when PyTorch allows it (torch.backends.cuda.matmul.allow_tf32)."""
        return self.vendor == "NVIDIA" and self.major is not None and self.major >= 8

    def is_target(self, target: str | None) -> bool:
        """Whether a kernel's build target (`KernelName.arch`: "ampere", "sm80", "gfx942")
        names this GPU exactly; an sm80 kernel on an sm86 or sm90 GPU is not."""
        if not target:
            return False
        target = target.lower().replace("_", "")
        own = {self.name.split()[0].lower()}
        if self.compute_capability and self.vendor == "NVIDIA":
            own.add("sm" + self.compute_capability.replace(".", ""))
        return target in own

    def describe(self) -> str:
        cc = f", compute capability {self.compute_capability}" if self.compute_capability else ""
        return f"{self.device}: {self.name}{cc} (from {self.source})"


def _from_cc(vendor: str | None, cc: str) -> str | None:
    major, minor = (int(x) for x in cc.split(".")[:2])
    if vendor == "AMD":
        return _AMD_CC.get((major, minor))
    for (ma, mi), name in _NVIDIA_CC:
        if ma == major and mi in (None, minor):
            return name
    return None


def gpu_arch(trace: Trace) -> GpuArch | None:
    """The GPU's architecture from `deviceProperties`, None without a named device."""
    if not trace.devices:
        return None
    dev = trace.devices[0]
    if dev.compute_capability:
        name = _from_cc(dev.vendor, dev.compute_capability)
        if name:
            return GpuArch(
                name, dev.vendor, dev.compute_capability, dev.name,
                "deviceProperties compute capability",
            )  # fmt: skip
    for pattern, name, vendor, cc in _BY_NAME:
        if re.search(pattern, dev.name or ""):
            return GpuArch(name, vendor, dev.compute_capability or cc, dev.name, "device name")
    return None
