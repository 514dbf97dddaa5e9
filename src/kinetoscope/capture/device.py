"""Which device to profile on, which profiler activities that needs, which dtype.

`auto` picks the GPU when torch sees one. ROCm builds of torch expose AMD GPUs
through the same `torch.cuda` API and the same `ProfilerActivity.CUDA`
(Kineto records them with roctracer), so the backend is only a label here.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType

from ..errors import UsageError

DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


@dataclass(frozen=True)
class DeviceChoice:
    type: str  # torch device type: "cpu" or "cuda"
    backend: str  # "cpu", "cuda" (NVIDIA) or "rocm" (AMD)
    name: str  # human-readable device name

    @property
    def is_gpu(self) -> bool:
        return self.type == "cuda"

    def as_meta(self) -> dict:
        return {"type": self.type, "backend": self.backend, "name": self.name}


def resolve_device(torch: ModuleType, requested: str) -> DeviceChoice:
    """Map `auto|cuda|cpu` to a device torch can use here, or raise UsageError (exit 2)."""
    if requested not in ("auto", "cuda", "cpu"):
        raise UsageError(f"unknown device {requested!r} (choose auto, cuda or cpu)")
    gpu = torch.cuda.is_available()
    if requested == "cuda" and not gpu:
        cpu_only = torch.version.cuda is None and torch.version.hip is None
        raise UsageError(
            f"--device cuda was requested but torch {torch.__version__}"
            f"{' (a CPU-only build)' if cpu_only else ''} sees no GPU; use --device cpu or auto"
        )
    if requested == "cpu" or not gpu:
        return DeviceChoice("cpu", "cpu", "CPU")
    backend = "rocm" if torch.version.hip is not None else "cuda"
    return DeviceChoice("cuda", backend, torch.cuda.get_device_name(0))


def activities(torch: ModuleType, device: DeviceChoice) -> list:
    """Profiler activities: always the CPU (host ops), plus the GPU's kernels when used."""
    acts = [torch.profiler.ProfilerActivity.CPU]
    if device.is_gpu:
        acts.append(torch.profiler.ProfilerActivity.CUDA)
    return acts


def resolve_dtype(torch: ModuleType, name: str | None, device: DeviceChoice) -> tuple[str, object]:
    """(short name, torch dtype): bf16 by default on GPU, fp32 on CPU (CPU bf16 matmuls crawl)."""
    short = name or ("bf16" if device.is_gpu else "fp32")
    if short not in DTYPES:
        raise UsageError(f"unknown dtype {short!r} (choose {', '.join(DTYPES)})")
    return short, getattr(torch, DTYPES[short])


def synchronize(torch: ModuleType, device: DeviceChoice) -> None:
    """Wait for queued device work, so warm-up really finishes before profiling starts."""
    if device.is_gpu:
        torch.cuda.synchronize()
