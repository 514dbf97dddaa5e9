"""Peak dense FLOP/s per dtype and peak memory bandwidth of common GPUs, each figure sourced.

A roofline needs the ceiling: achieved FLOP/s means little without it.

What a figure means. Peaks are the vendor's dense figures: datasheets print the
2:4-sparse tensor rate (marked "with sparsity"), and those are halved here as
their footnotes say. `fp32` is what an fp32 GEMM reaches without TF32: the
non-tensor FP32 rate on NVIDIA (PyTorch leaves TF32 off for matmuls by
default), the FP32 matrix rate on AMD CDNA. `fp64` on A100/H100/H200/B200 is the
FP64 tensor-core rate (cuBLAS DGEMM runs on it). GeForce cards are listed at the
FP32-accumulate tensor rate, which is what PyTorch's fp16/bf16 GEMMs use. An
MI250/MI250X package holds two GCDs and each is its own HIP device (its own
`deviceProperties` entry and its own kernels), so those rows are per GCD: half
the package figure.

How the figures were checked (2026-11-23). Each row's `url` is the page the
figures were read from. A figure is kept when a vendor document says it (AMD's
ROCm architecture pages), when a page reproduces the vendor's table with its
footnotes, or, failing that, when two independent pages agree; a few are
derived from sourced counts (cores x 2 FLOP per FMA x boost clock), said so in
the row. What could not be confirmed was left out rather than kept from memory:

- H100 NVL: no row (the corpus has an "NVIDIA H100 NVL" trace). NVIDIA's NVL
  datasheet was not found; only approximate third-party tables were.
- MI250X: no row (only a pre-launch news report of its figures was found), so a
  name with "MI250X" in it, including "MI250X / MI250", gets no peak.
- V100 PCIe: the FP16 tensor rate. RTX 2080 Ti: the FP16 tensor rate and the
  bandwidth. L4: FP16/BF16 and FP8. RTX 4090: FP8 (two tables disagree by 2x).
- The Tesla V100-DGXS (DGX Station) and any device not below: no row.

The trace names the device (`deviceProperties[].name`, e.g. "NVIDIA H100 80GB
HBM3", "AMD Instinct MI300X VF"); `device_peaks` matches it against the
patterns below, first match wins. A device that matches none has no peak, and
share-of-peak is not reported rather than guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class DevicePeaks:
    device: str  # the row's name
    tflops: dict[str, float]  # dtype -> dense peak TFLOP/s
    bandwidth_gbs: float | None  # peak device memory bandwidth, GB/s; None where unsourced
    source: str  # the document the numbers come from, short enough for a finding's evidence
    url: str  # where it was read

    def peak_flops(self, dtype: str) -> float | None:
        """FLOP/s (not TFLOP/s) for `dtype`, None when the row has no figure for it."""
        tf = self.tflops.get(dtype)
        return tf * 1e12 if tf else None


_A100 = {"fp64": 19.5, "fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0}
_A100_SRC = "NVIDIA A100 datasheet"
# A100 compute per the datasheet (as tabulated with its URL on this page); memory
# bandwidth per form factor from the second.
_A100_URL = (
    "https://glennklockwood.com/garden/processors/A100 ; "
    "https://www.thundercompute.com/blog/nvidia-a100-specs-full-guide"
)
_H100_SXM = {"fp64": 67.0, "fp32": 67.0, "tf32": 494.5, "bf16": 989.5, "fp16": 989.5, "fp8": 1979.0}
# NVIDIA's H100 datasheet table (SXM and PCIe columns, "* Shown with sparsity").
_H100_URL = "https://archive-lib.hpctech.co.jp/gpuproduct/nvidia-h100.html"
# CDNA2 per-GCD figures: half the MI250 OAM table (two GCDs per package).
_ROCM_MI250_URL = "https://rocm.docs.amd.com/en/latest/conceptual/gpu-arch/mi250.html"
_MI250_GCD = {"fp64": 45.25, "fp32": 45.25, "bf16": 181.05, "fp16": 181.05}

#: (pattern on the trace's device name, peaks). First match wins: specific rows first.
PEAKS: tuple[tuple[re.Pattern, DevicePeaks], ...] = tuple(
    (re.compile(pattern, re.I), peaks)
    for pattern, peaks in (
        (
            r"V100.*SXM",
            DevicePeaks(
                "Tesla V100 SXM2",
                {"fp64": 7.8, "fp32": 15.7, "fp16": 125.0},
                900.0,  # HBM2, per the Volta whitepaper
                "NVIDIA Tesla V100 datasheet and Volta whitepaper",
                "https://developer.nvidia.com/programming-tensor-cores-cuda-9-0 (125 tensor "
                "TFLOPS) ; https://github.com/avensun/deep-learning-benchmark (15.7 FP32, 125) ; "
                "https://fudzilla.com/news/ai/50832-nvidia-unveils-the-a100-tensor-core-gpu "
                "(7.8 FP64) ; https://gist.github.com/wolfram77/a42aeb021a2fec7b7e85ceb71b398772 "
                "(900 GB/s)",
            ),
        ),
        (
            r"V100.*PCI",
            DevicePeaks(
                "Tesla V100 PCIe",
                {"fp64": 7.0, "fp32": 14.0},
                900.0,
                "NVIDIA Volta launch figures (PCIe) and Volta whitepaper",
                "https://gist.github.com/yue82/9422393262e22241e5f2db8a13d43f7e ; "
                "https://gist.github.com/wolfram77/a42aeb021a2fec7b7e85ceb71b398772",
            ),
        ),
        (
            r"A100.*80GB.*PCI",
            DevicePeaks("A100 80GB PCIe", _A100, 1935.0, _A100_SRC, _A100_URL),
        ),
        (
            r"A100.*SXM.*80GB",
            DevicePeaks("A100 80GB SXM", _A100, 2039.0, _A100_SRC, _A100_URL),
        ),
        (
            # other A100s (40GB, OEM boards such as A100-PG509-200): same SMs and clocks,
            # memory differs (1555 to 2039 GB/s), so no bandwidth figure
            r"A100",
            DevicePeaks("A100 (40GB or OEM variant)", _A100, None, _A100_SRC, _A100_URL),
        ),
        (
            r"H100.*PCI",
            DevicePeaks(
                "H100 PCIe",
                {
                    "fp64": 51.0,
                    "fp32": 51.0,
                    "tf32": 378.0,
                    "bf16": 756.5,
                    "fp16": 756.5,
                    "fp8": 1513.0,
                },
                2000.0,
                "NVIDIA H100 datasheet",
                _H100_URL,
            ),
        ),
        (
            # "NVIDIA H100 80GB HBM3" is the SXM5 part; other H100 names get no row
            r"H100.*(SXM|HBM3)",
            DevicePeaks("H100 SXM", _H100_SXM, 3350.0, "NVIDIA H100 datasheet", _H100_URL),
        ),
        (
            # the H200 NVL (600 W) has lower peaks than the SXM part, and a GH200 superchip
            # ("NVIDIA GH200 480GB") has other memory
            r"(?<!G)H200(?!.*NVL)",
            DevicePeaks(
                "H200 SXM",
                _H100_SXM,  # the same GH100 compute as the H100 SXM, HBM3e memory
                4800.0,
                "NVIDIA H200 datasheet (compute as H100 SXM)",
                "https://itkb.uw.cz/2026/06/nvidia-h200-vs-b300-precisions-cores.html (dense: "
                "FP8 1979, BF16 989, FP64 tensor 67, 4.8 TB/s) ; "
                "https://aiwiki.ai/wiki/nvidia_h200 (same GH100 compute, 4.8 TB/s)",
            ),
        ),
        (
            r"(?<!G)B200",  # a GB200's GPUs run at 1200 W, with other peaks
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
                7700.0,
                "NVIDIA HGX B200 datasheet, sparse tensor figures halved",
                "https://zdszero.github.io/Computer/Artificial_Intelligence/Hardware.html "
                "(datasheet table: FP8 9 PF, FP16 4.5 PF, TF32 2.2 PF sparse; FP32 75 TF; "
                "FP64 37 TF; 7.7 TB/s) ; https://glennklockwood.com/garden/processors/B200 "
                "(dense = half)",
            ),
        ),
        (
            r"\bL4\b",
            DevicePeaks(
                "L4",
                {"fp32": 30.3, "tf32": 60.0},  # fp32: 7424 cores x 2 x 2.04 GHz
                300.0,
                "NVIDIA L4 datasheet (TF32 120 with sparsity)",
                "https://store.sourcecode.com/en-us/bg-bucket-compare/125/9820 ; "
                "https://fpsbench.com/compare/gpu/nvidia-l4-vs-nvidia-tesla-m40",
            ),
        ),
        (
            r"2080 Ti",
            DevicePeaks(
                "GeForce RTX 2080 Ti (reference clocks)",
                {"fp32": 13.4},  # 4352 CUDA cores x 2 FLOP x 1545 MHz reference boost
                None,
                "NVIDIA Turing reference specs (cores, boost clock)",
                "https://www.bit-tech.net/features/tech/graphics/nvidias-turing-architecture-explained/1/",
            ),
        ),
        (
            r"4090",
            DevicePeaks(
                "GeForce RTX 4090",
                {"fp32": 82.6, "tf32": 82.6, "bf16": 165.2, "fp16": 165.2},
                1008.0,
                "RTX 4090 spec tables (FP32-accumulate tensor rate)",
                "https://waredb.com/processor/nvidia-geforce-rtx-4090 ; "
                "https://gigagpu.com/?p=34220",
            ),
        ),
        (
            r"MI210",
            DevicePeaks(
                "AMD Instinct MI210",
                # CDNA2 matrix BF16 runs at the FP16 rate (ROCm MI250 table: 1024 FLOPS/clock/CU)
                {"fp64": 45.3, "fp32": 45.3, "bf16": 181.0, "fp16": 181.0},
                1638.4,  # 3.2 Gbps HBM2e x 4096-bit bus / 8
                "AMD Instinct MI210 launch specifications",
                "https://www.anandtech.com/show/17326/amd-releases-instinct-mi210-accelerator-cdna-2-on-a-pcie-card",
            ),
        ),
        (
            r"^(?!.*MI250X).*MI250\b",
            DevicePeaks(
                "AMD Instinct MI250 (per GCD)",
                _MI250_GCD,
                1600.0,
                "AMD ROCm MI250 microarchitecture table, per GCD",
                _ROCM_MI250_URL,
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
                "AMD ROCm MI300 microarchitecture table",
                "https://rocm.docs.amd.com/en/latest/conceptual/gpu-arch/mi300.html",
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
