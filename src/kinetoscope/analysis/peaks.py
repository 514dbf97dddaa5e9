"""Peak dense FLOP/s per dtype and peak memory bandwidth of common GPUs, from vendors' datasheets.

A roofline needs the ceiling: achieved FLOP/s means little without it. Values
are the vendor's published peaks without structured sparsity (datasheets
often print the 2:4-sparse figure; those are halved here, as the datasheets'
footnotes say). `fp32` is what an fp32 GEMM can reach without TF32: the
non-tensor FP32 rate on NVIDIA (PyTorch leaves TF32 off for matmuls by
default), the FP32 matrix (MFMA) rate on AMD CDNA, which rocBLAS/hipBLASLt use.
`tf32` is NVIDIA's TF32 tensor-core rate (AMD's MI300X XF32 likewise).
GeForce cards (2080 Ti, 4090) are listed at their FP32-accumulate tensor rate,
which is what PyTorch's fp16/bf16 GEMMs use. TFLOP/s and GB/s; None where the
source gives no figure.

The trace names the device (`deviceProperties[].name`, e.g. "NVIDIA H100 80GB
HBM3", "AMD Instinct MI300X VF"); `device_peaks` matches it against the
patterns below, most specific first. A device that matches none has no peak,
and share-of-peak is not reported rather than guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class DevicePeaks:
    device: str  # the row's name
    tflops: dict[str, float]  # dtype -> dense peak TFLOP/s
    bandwidth_gbs: float | None  # peak device memory bandwidth, GB/s
    source: str  # the document the numbers come from

    def peak_flops(self, dtype: str) -> float | None:
        """FLOP/s (not TFLOP/s) for `dtype`, None when the row has no figure for it."""
        tf = self.tflops.get(dtype)
        return tf * 1e12 if tf else None


_NV_A100 = "NVIDIA A100 Tensor Core GPU datasheet (nvidia.com, A100 80GB PCIe/SXM table)"
_NV_H100 = "NVIDIA H100 Tensor Core GPU datasheet (nvidia.com, H100 SXM/PCIe/NVL table)"

#: (pattern on the trace's device name, peaks). First match wins: specific rows first.
PEAKS: tuple[tuple[re.Pattern, DevicePeaks], ...] = tuple(
    (re.compile(pattern, re.I), peaks)
    for pattern, peaks in (
        (
            r"V100.*SXM",
            DevicePeaks(
                "Tesla V100 SXM2",
                {"fp64": 7.8, "fp32": 15.7, "fp16": 125.0},
                900.0,
                "NVIDIA Tesla V100 GPU datasheet (nvidia.com, V100 SXM2 column)",
            ),
        ),
        (
            r"V100.*PCI",
            DevicePeaks(
                "Tesla V100 PCIe",
                {"fp64": 7.0, "fp32": 14.0, "fp16": 112.0},
                900.0,
                "NVIDIA Tesla V100 GPU datasheet (nvidia.com, V100 PCIe column)",
            ),
        ),
        (
            r"A100.*80GB.*PCI",
            DevicePeaks(
                "A100 80GB PCIe",
                {"fp64": 19.5, "fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0},
                1935.0,
                _NV_A100,
            ),
        ),
        (
            r"A100.*SXM.*80GB",
            DevicePeaks(
                "A100 80GB SXM",
                {"fp64": 19.5, "fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0},
                2039.0,
                _NV_A100,
            ),
        ),
        (
            # other A100s (40GB, OEM variants such as A100-PG509-200): same SMs and clocks,
            # memory differs (1555 to 2039 GB/s), so no bandwidth figure
            r"A100",
            DevicePeaks(
                "A100 (40GB or OEM variant)",
                {"fp64": 19.5, "fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0},
                None,
                _NV_A100,
            ),
        ),
        (
            r"H100.*NVL",
            DevicePeaks(
                "H100 NVL",
                {
                    "fp64": 60.0,
                    "fp32": 60.0,
                    "tf32": 417.5,
                    "bf16": 835.5,
                    "fp16": 835.5,
                    "fp8": 1670.5,
                },
                3900.0,
                _NV_H100,
            ),
        ),
        (
            r"H100.*PCI",
            DevicePeaks(
                "H100 PCIe",
                {
                    "fp64": 51.0,
                    "fp32": 51.0,
                    "tf32": 378.0,
                    "bf16": 756.0,
                    "fp16": 756.0,
                    "fp8": 1513.0,
                },
                2000.0,
                _NV_H100,
            ),
        ),
        (
            r"H100",  # "NVIDIA H100 80GB HBM3" is the SXM5 part
            DevicePeaks(
                "H100 SXM",
                {
                    "fp64": 67.0,
                    "fp32": 67.0,
                    "tf32": 494.5,
                    "bf16": 989.5,
                    "fp16": 989.5,
                    "fp8": 1979.0,
                },
                3350.0,
                _NV_H100,
            ),
        ),
        (
            r"H200",
            DevicePeaks(
                "H200 SXM",
                {
                    "fp64": 67.0,
                    "fp32": 67.0,
                    "tf32": 494.5,
                    "bf16": 989.5,
                    "fp16": 989.5,
                    "fp8": 1979.0,
                },
                4800.0,
                "NVIDIA H200 Tensor Core GPU datasheet (nvidia.com, H200 SXM column)",
            ),
        ),
        (
            r"B200",
            DevicePeaks(
                "B200 (HGX B200, per GPU)",
                {
                    "fp64": 37.0,
                    "fp32": 75.0,
                    "tf32": 1100.0,
                    "bf16": 2250.0,
                    "fp16": 2250.0,
                    "fp8": 4500.0,
                },
                8000.0,
                "NVIDIA HGX B200 datasheet (nvidia.com, 8-GPU totals divided by 8)",
            ),
        ),
        (
            r"\bL4\b",
            DevicePeaks(
                "L4",
                {"fp32": 30.3, "tf32": 60.0, "bf16": 121.0, "fp16": 121.0, "fp8": 242.5},
                300.0,
                "NVIDIA L4 Tensor Core GPU datasheet (nvidia.com)",
            ),
        ),
        (
            r"2080 Ti",
            DevicePeaks(
                "GeForce RTX 2080 Ti (reference clocks)",
                {"fp32": 13.4, "fp16": 53.8},
                616.0,
                "NVIDIA Turing GPU Architecture whitepaper, appendix table (RTX 2080 Ti)",
            ),
        ),
        (
            r"4090",
            DevicePeaks(
                "GeForce RTX 4090",
                {"fp32": 82.6, "tf32": 82.6, "bf16": 165.2, "fp16": 165.2, "fp8": 330.3},
                1008.0,
                "NVIDIA Ada Lovelace GPU Architecture whitepaper, appendix table (RTX 4090)",
            ),
        ),
        (
            r"MI210",
            DevicePeaks(
                "AMD Instinct MI210",
                {"fp64": 45.3, "fp32": 45.3, "bf16": 181.0, "fp16": 181.0},
                1638.4,
                "AMD Instinct MI210 accelerator datasheet (amd.com)",
            ),
        ),
        (
            r"MI250X",
            DevicePeaks(
                "AMD Instinct MI250X",
                {"fp64": 95.7, "fp32": 95.7, "bf16": 383.0, "fp16": 383.0},
                3276.8,
                "AMD Instinct MI250X accelerator datasheet (amd.com)",
            ),
        ),
        (
            r"MI250",
            DevicePeaks(
                "AMD Instinct MI250",
                {"fp64": 90.5, "fp32": 90.5, "bf16": 362.1, "fp16": 362.1},
                3276.8,
                "AMD Instinct MI250 accelerator datasheet (amd.com)",
            ),
        ),
        (
            r"MI300X",  # also "MI300X VF", the virtual function of the same part
            DevicePeaks(
                "AMD Instinct MI300X",
                {
                    "fp64": 163.4,
                    "fp32": 163.4,
                    "tf32": 653.7,
                    "bf16": 1307.4,
                    "fp16": 1307.4,
                    "fp8": 2614.9,
                },
                5300.0,
                "AMD Instinct MI300X accelerator datasheet (amd.com)",
            ),
        ),
    )
)


def device_peaks(name: str | None) -> DevicePeaks | None:
    """The table row for a trace's device name, None for devices not in the table."""
    if not name:
        return None
    for pattern, peaks in PEAKS:
        if pattern.search(name):
            return peaks
    return None
