"""Achieved FLOP/s of the matrix products against the device's peak (a one-point roofline).

A compute-bound trace keeps the device busy; whether the busy time is well
spent is the next question: how close the GEMMs run to the datasheet peak for
their dtype. FLOPs come from the shapes the profiler recorded
(record_shapes=True) on the op that launched the kernels (`aten::mm`, `addmm`,
`bmm`, `baddbmm`: 2*M*N*K times the batch, `compute_ops.matmul_flops`); time
is the summed duration of every kernel launched under that op (split-K
reductions and the bias copy included: it is what the op cost the device).
Bytes are the minimum traffic, each operand read once and the result written
once, so FLOP/byte is the op's arithmetic intensity, an upper bound on reuse.
dtype is the first operand's recorded type, promoted to `tf32` where the kernel
name says the GEMM ran on TF32 tensor cores. Kernels launched under ops
without recorded shapes are counted but not rated.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from ..trace import Trace
from .ancestry import ancestor_of_kind
from .compute_ops import MATMUL_OPERANDS, matmul_flops
from .kernel_names import decode
from .peaks import DevicePeaks, device_peaks
from .window import device_anchor, in_window

_DTYPES = {"float": "fp32", "double": "fp64", "c10::Half": "fp16", "c10::BFloat16": "bf16"}
_BYTES = {"fp32": 4, "tf32": 4, "fp64": 8, "fp16": 2, "bf16": 2}


@dataclass
class DtypeRoofline:
    """The rated matrix products of one dtype in the active window."""

    dtype: str
    ops: int = 0
    flops: float = 0.0
    bytes: float = 0.0
    device_us: float = 0.0
    peak_flops: float | None = None  # FLOP/s, from the device's row in `peaks`

    @property
    def achieved_flops(self) -> float:
        return self.flops / (self.device_us * 1e-6) if self.device_us > 0 else 0.0

    @property
    def share_of_peak(self) -> float | None:
        return self.achieved_flops / self.peak_flops if self.peak_flops else None

    @property
    def intensity(self) -> float | None:
        """FLOP per byte of minimum traffic."""
        return self.flops / self.bytes if self.bytes else None


@dataclass(frozen=True)
class Roofline:
    device: str | None
    peaks: DevicePeaks | None
    by_dtype: list[DtypeRoofline] = field(default_factory=list)  # most device time first
    unrated_kernels: int = 0  # GEMM-op kernels whose op had no usable shapes


def _dtype(trace: Trace, op: int, kernel_name: str) -> str | None:
    try:
        types = json.loads(trace.input_types.get(op) or "null")
    except ValueError:
        return None
    operand = MATMUL_OPERANDS[trace.name(op)][0]
    if not types or len(types) <= operand:
        return None
    dtype = _DTYPES.get(types[operand])
    if dtype == "fp32" and decode(kernel_name).dtype == "tf32":
        return "tf32"
    return dtype


def _min_bytes(trace: Trace, op: int, itemsize: int) -> float:
    dims = json.loads(trace.input_dims[op])
    left, right = (dims[i] for i in MATMUL_OPERANDS[trace.name(op)])
    batch = float(np.prod(left[:-2])) if len(left) > 2 else 1.0
    m, k, n = left[-2], left[-1], right[-1]
    return batch * (m * k + k * n + m * n) * itemsize


@dataclass(frozen=True)
class RatedOp:
    """One matrix-product op with usable shapes and the kernels it launched."""

    index: int  # the op's event
    dtype: str
    flops: float
    bytes: float
    device_us: float  # summed duration of its kernels
    kernels: tuple[int, ...]


def rated_ops(trace: Trace) -> tuple[list[RatedOp], int]:
    """The window's matrix-product ops with shapes, and the count of GEMM-op kernels without."""
    kernels = trace.kernels
    kernels = kernels[in_window(trace, device_anchor(trace)[kernels])]
    is_gemm = np.isin(trace.name_id, trace.name_ids_matching(MATMUL_OPERANDS.__contains__))
    gemm_op = ancestor_of_kind(trace, is_gemm, outermost=False)  # innermost product op
    launches = trace.launch_of[kernels]
    ops = np.where(launches >= 0, gemm_op[np.maximum(launches, 0)], -1)
    per_op: dict[int, list[int]] = {}
    for k, op in zip(kernels.tolist(), ops.tolist(), strict=True):
        if op >= 0:
            per_op.setdefault(op, []).append(k)
    rated, unrated = [], 0
    for op, ks in per_op.items():
        flops = matmul_flops(trace.name(op), trace.input_dims.get(op))
        dtype = _dtype(trace, op, trace.name(ks[0])) if flops else None
        if not flops or dtype is None:
            unrated += len(ks)
            continue
        device_us = float(trace.dur[ks].sum())
        rated.append(
            RatedOp(op, dtype, flops, _min_bytes(trace, op, _BYTES[dtype]), device_us, tuple(ks))
        )
    return rated, unrated


def roofline(trace: Trace) -> Roofline:
    """Achieved vs peak FLOP/s of the window's matrix products, per dtype."""
    name = trace.devices[0].name if trace.devices else None
    peaks = device_peaks(name)
    ops, unrated = rated_ops(trace)
    rows: dict[str, DtypeRoofline] = {}
    for op in ops:
        row = rows.setdefault(
            op.dtype,
            DtypeRoofline(op.dtype, peak_flops=peaks.peak_flops(op.dtype) if peaks else None),
        )
        row.ops += 1
        row.flops += op.flops
        row.bytes += op.bytes
        row.device_us += op.device_us
    ordered = sorted(rows.values(), key=lambda r: -r.device_us)
    return Roofline(name, peaks, ordered, unrated)
