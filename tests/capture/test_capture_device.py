"""Device choice: auto picks the GPU (CUDA or ROCm) when torch sees one, CPU otherwise.

A stand-in `torch` namespace plays the GPU machines this CPU box is not.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kinetoscope.capture.device import activities, resolve_device, resolve_dtype
from kinetoscope.errors import UsageError


def fake_torch(gpu: str | None, hip: str | None = None, cuda: str | None = None):
    return SimpleNamespace(
        __version__="2.13.0",
        cuda=SimpleNamespace(is_available=lambda: gpu is not None, get_device_name=lambda i: gpu),
        version=SimpleNamespace(hip=hip, cuda=cuda),
        profiler=SimpleNamespace(ProfilerActivity=SimpleNamespace(CPU="CPU", CUDA="CUDA")),
        float32="float32",
        bfloat16="bfloat16",
        float16="float16",
    )


def test_auto_picks_rocm_on_an_amd_build():
    torch = fake_torch("AMD Instinct MI300X", hip="6.2")
    choice = resolve_device(torch, "auto")
    assert (choice.type, choice.backend, choice.name) == ("cuda", "rocm", "AMD Instinct MI300X")
    assert activities(torch, choice) == ["CPU", "CUDA"]  # ROCm traces through the CUDA activity
    assert resolve_dtype(torch, None, choice) == ("bf16", "bfloat16")


def test_auto_picks_cuda_on_an_nvidia_build_and_cpu_can_be_forced():
    torch = fake_torch("NVIDIA H100", cuda="12.8")
    assert resolve_device(torch, "auto").backend == "cuda"
    forced = resolve_device(torch, "cpu")
    assert forced.type == "cpu" and activities(torch, forced) == ["CPU"]
    assert resolve_dtype(torch, None, forced) == ("fp32", "float32")


def test_cuda_requested_without_a_gpu_names_the_cpu_only_build():
    with pytest.raises(UsageError, match=r"torch 2\.13\.0 \(a CPU-only build\) sees no GPU"):
        resolve_device(fake_torch(None), "cuda")
    with pytest.raises(UsageError, match=r"torch 2\.13\.0 sees no GPU"):
        resolve_device(fake_torch(None, cuda="12.8"), "cuda")
