"""Achieved FLOP/s of matrix products, attention and convolutions against the device's peak.

A compute-bound trace keeps the device busy; whether the busy time is well
spent is the next question: how close the heavy ops run to the datasheet peak
for their dtype. Three classes of op are rated, each from the shapes the
profiler recorded (record_shapes=True) on the op that launched the kernels:

- gemm: `aten::mm`, `addmm`, `bmm`, `baddbmm`, 2*M*N*K times the batch
  (`compute_ops.matmul_flops`); the innermost product op owns the kernels.
- attention: SDPA and its backend ops, forward and backward
  (`attention_flops`); the outermost attention op owns every kernel under it,
  the math backend's bmm and softmax kernels included: they are the call's cost.
- conv: convolution ops, forward and backward (`conv_flops`); the outermost
  convolution op owns the kernels.

Time is the summed duration of the kernels the op launched (on a host-only
trace, the op's own duration on the CPU, which has no peak in the table).
Bytes are the minimum traffic, each operand read once and each result written
once, so FLOP/byte is the op's arithmetic intensity, an upper bound on reuse.
dtype is the recorded type of the first operand, promoted to `tf32` where a
kernel name says the op ran on TF32 tensor cores. Kernels of ops without
usable shapes, and attention kernels no recorded op launched (serving
engines' own attention, named by `attention.kernel_family`), are counted per
class but not rated.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from ..trace import Cat, Trace
from .ancestry import ancestor_of_kind
from .attention_flops import ATTENTION_OPS, MATH_OPS, OpCost, attention_cost
from .attention_kernels import has_kernel_family
from .compute_ops import MATMUL_OPERANDS, matmul_flops
from .conv_flops import BACKWARD, CONV_OPS, FORWARD, backward_cost, forward_cost
from .kernel_names import decoded
from .peaks import DevicePeaks, device_peaks
from .recorded_args import DTYPES, ITEMSIZE, RecordedArgs, recorded_args
from .window import device_anchor, in_window

CLASSES = ("gemm", "attention", "conv")
NO_CPU_PEAK = "no peak for CPU: the peak table covers GPUs"


@dataclass
class RooflineRow:
    """The rated ops of one class and dtype in the active window."""

    op_class: str  # gemm, attention or conv
    dtype: str
    ops: int = 0
    backward: int = 0  # of them backward ops (attention and conv)
    flops: float = 0.0
    bytes: float = 0.0
    device_us: float = 0.0  # kernel time (CPU time on a host-only trace)
    peak_flops: float | None = None  # FLOP/s, from the device's row in `peaks`
    notes: Counter = field(default_factory=Counter)  # assumption -> ops it applies to

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


@dataclass
class Unrated:
    """Work of one class that was counted but not rated, and why."""

    calls: int = 0  # ops found without usable shapes
    kernels: int = 0
    device_us: float = 0.0
    reasons: Counter = field(default_factory=Counter)  # reason -> kernels (calls on the CPU)


@dataclass(frozen=True)
class ClassSummary:
    """One class over its dtypes: share of peak = time at peak / time taken, where every
    dtype has a peak."""

    op_class: str
    ops: int
    flops: float
    device_us: float
    share_of_peak: float | None

    @property
    def achieved_flops(self) -> float:
        return self.flops / (self.device_us * 1e-6) if self.device_us > 0 else 0.0


@dataclass(frozen=True)
class Roofline:
    device: str | None
    peaks: DevicePeaks | None
    on_cpu: bool  # a host-only run: ops rated on their CPU time
    rows: list[RooflineRow] = field(default_factory=list)  # most time first
    unrated: dict[str, Unrated] = field(default_factory=dict)

    def of_class(self, op_class: str) -> list[RooflineRow]:
        return [r for r in self.rows if r.op_class == op_class]

    def summary(self, op_class: str) -> ClassSummary | None:
        rows = self.of_class(op_class)
        if not rows:
            return None
        time = sum(r.device_us for r in rows)
        share = None
        if all(r.peak_flops for r in rows) and time > 0:
            share = sum(r.flops / r.peak_flops for r in rows) / (time * 1e-6)
        flops = sum(r.flops for r in rows)
        return ClassSummary(op_class, sum(r.ops for r in rows), flops, time, share)

    @property
    def peak_note(self) -> str | None:
        """Why no share of peak is given, None where the device has a row."""
        if self.on_cpu:
            return NO_CPU_PEAK
        if self.peaks is None:
            return f"{self.device or 'this device'} is not in the peak table"
        return None


@dataclass(frozen=True)
class RatedOp:
    """One op with usable shapes and the kernels it launched."""

    index: int  # the op's event (the call's outermost op for attention and conv)
    op_class: str
    dtype: str
    flops: float
    bytes: float
    device_us: float  # summed duration of its kernels (its CPU time on a host-only trace)
    kernels: tuple[int, ...]
    backward: bool = False
    notes: tuple[str, ...] = ()


def _gemm_dtype(trace: Trace, op: int, kernel_name: str) -> str | None:
    try:
        types = json.loads(trace.input_types.get(op) or "null")
    except ValueError:
        return None
    operand = MATMUL_OPERANDS[trace.name(op)][0]
    if not types or len(types) <= operand:
        return None
    dtype = DTYPES.get(types[operand])
    if dtype == "fp32" and decoded(trace, kernel_name).dtype == "tf32":
        return "tf32"
    return dtype


def _gemm_bytes(trace: Trace, op: int, itemsize: int) -> float:
    dims = json.loads(trace.input_dims[op])
    left, right = (dims[i] for i in MATMUL_OPERANDS[trace.name(op)])
    batch = float(np.prod(left[:-2])) if len(left) > 2 else 1.0
    m, k, n = left[-2], left[-1], right[-1]
    return batch * (m * k + k * n + m * n) * itemsize


def _gemm(trace: Trace, op: int, kernels: list[int], time_us: float) -> RatedOp | None:
    flops = matmul_flops(trace.name(op), trace.input_dims.get(op))
    dtype = _gemm_dtype(trace, op, trace.name(kernels[0]) if kernels else "") if flops else None
    if not flops or dtype is None:
        return None
    nbytes = _gemm_bytes(trace, op, ITEMSIZE[dtype])
    return RatedOp(op, "gemm", dtype, flops, nbytes, time_us, tuple(kernels))


def _recorded(table, ops: np.ndarray) -> set[int]:
    """The events among `ops` that `table` (one of the sparse argument columns) has an entry
    for: one search over its sorted index instead of a lookup per op. A call recorded
    without shapes (most traces) then costs no decoding at all."""
    index = getattr(table, "index", None)
    if isinstance(index, np.ndarray):
        return set(ops[np.isin(ops, index)].tolist())
    return {op for op in ops.tolist() if op in table}


def _call_cost(
    trace: Trace, members: list[int], recorded: tuple[set[int], set[int], set[int]]
) -> tuple[str, OpCost | None, str]:
    """(class, cost, why not rated) of one attention or convolution call: the first of its
    ops (outermost first) whose recorded arguments give a cost. `recorded`: the ops with
    an entry in input_dims, in any argument column, in concrete_inputs."""
    with_dims, with_args, with_concrete = recorded
    names = {trace.name(i) for i in members}
    op_class = "attention" if names & ATTENTION_OPS else "conv"
    math = bool(names & MATH_OPS)
    for op in members:
        name = trace.name(op)
        args = recorded_args(trace, op) if op in with_args else RecordedArgs([], [], [])
        if op_class == "attention":
            cost = attention_cost(name, args, math)
        elif name in FORWARD:
            cost = forward_cost(name, args)
        else:
            cost = backward_cost(name, args, names) if name in BACKWARD else None
        if cost is not None:
            return op_class, cost, ""
    if not any(trace.input_dims.get(i) for i in members if i in with_dims):
        return op_class, None, "no shapes recorded"
    if op_class == "conv" and not any(
        trace.concrete_inputs.get(i) for i in members if i in with_concrete
    ):
        return op_class, None, "stride/padding not recorded, no Concrete Inputs"
    return op_class, None, "shapes not usable (packed, or not recognised)"


def _promote_tf32(trace: Trace, dtype: str, kernels: list[int]) -> str:
    if dtype == "fp32" and any(decoded(trace, trace.name(k)).dtype == "tf32" for k in kernels):
        return "tf32"
    return dtype


def _members(trace: Trace, is_call: np.ndarray, call_of: np.ndarray) -> dict[int, list[int]]:
    """Each call's attention/conv ops, outermost first."""
    ops = np.flatnonzero(is_call)
    order = np.lexsort((-trace.dur[ops], trace.ts[ops]))
    members: dict[int, list[int]] = {}
    for op in ops[order].tolist():
        members.setdefault(int(call_of[op]), []).append(op)
    return members


def ran_on_cpu(trace: Trace) -> bool:
    """A host-only run: no device work, no launch calls, no device in the trace. (A trace
    with launches but no device lane, such as a CUPTI counter run, ran on a GPU that was
    not recorded: its ops' CPU time is not their cost.)"""
    return not trace.has_device and not len(trace.launches) and not trace.devices


def rated_ops(trace: Trace) -> tuple[list[RatedOp], dict[str, Unrated]]:
    """The window's rated ops of every class, and what each class has that was not rated."""
    host_op = trace.mask(Cat.CPU_OP)
    is_call = host_op & np.isin(
        trace.name_id, trace.name_ids_matching((ATTENTION_OPS | CONV_OPS).__contains__)
    )
    is_gemm = np.isin(trace.name_id, trace.name_ids_matching(MATMUL_OPERANDS.__contains__))
    call_of = ancestor_of_kind(trace, is_call, outermost=True)
    gemm_of = ancestor_of_kind(trace, is_gemm, outermost=False)  # innermost product op
    members = _members(trace, is_call, call_of)
    call_ops = np.flatnonzero(is_call)
    with_dims = _recorded(trace.input_dims, call_ops)
    with_concrete = _recorded(trace.concrete_inputs, call_ops)
    recorded = (
        with_dims,
        with_dims | _recorded(trace.input_types, call_ops) | with_concrete,
        with_concrete,
    )
    owned: dict[int, list[int]] = {}  # op (call or product) -> its kernels
    unrated = {c: Unrated() for c in CLASSES}
    on_device = not ran_on_cpu(trace)
    if on_device:
        kernels = trace.kernels
        kernels = kernels[in_window(trace, device_anchor(trace)[kernels])]
        launches = trace.launch_of[kernels]
        safe = np.maximum(launches, 0)
        owner = np.where(call_of[safe] >= 0, call_of[safe], gemm_of[safe])
        owner = np.where(launches >= 0, owner, -1)
        mine = owner >= 0
        for k, op in zip(kernels[mine].tolist(), owner[mine].tolist(), strict=True):
            owned.setdefault(op, []).append(k)
        # kernels of no call: attention by name only (added one by one, in kernel order)
        orphans = kernels[~mine]
        orphans = orphans[has_kernel_family(trace, orphans)]
        if len(orphans):
            lost = unrated["attention"]
            lost.kernels += len(orphans)
            for dur in trace.dur[orphans].tolist():
                lost.device_us += dur
            lost.reasons["no attention op recorded, attention by kernel name only"] += len(orphans)
    else:  # host-only: every call and innermost product in the window, timed on the CPU
        inside = in_window(trace, trace.ts)
        outer_calls = np.flatnonzero(is_call & inside & (call_of == np.arange(len(trace))))
        products = np.flatnonzero(is_gemm & host_op & inside & (call_of < 0))
        parents = trace.parent[products]
        not_innermost = set(gemm_of[parents[parents >= 0]].tolist())
        for op in [*outer_calls.tolist(), *products.tolist()]:
            if op not in not_innermost:
                owned[op] = []
    rated = []
    for op, ks in owned.items():
        time_us = float(trace.dur[ks].sum()) if on_device else float(trace.dur[op])
        if op in members:
            op_class, cost, why = _call_cost(trace, members[op], recorded)
            if cost is None:
                lost = unrated[op_class]
                lost.calls += 1
                lost.kernels += len(ks)
                lost.device_us += time_us
                lost.reasons[why] += len(ks) if on_device else 1
                continue
            dtype = _promote_tf32(trace, cost.dtype, ks)
            rated.append(
                RatedOp(op, op_class, dtype, cost.flops, cost.bytes, time_us, tuple(ks),
                        cost.backward, cost.notes)
            )  # fmt: skip
            continue
        gemm = _gemm(trace, op, ks, time_us)
        if gemm is None:
            lost = unrated["gemm"]
            lost.calls += 1
            lost.kernels += len(ks)
            lost.device_us += time_us
            lost.reasons["no shapes recorded"] += len(ks) if on_device else 1
        else:
            rated.append(gemm)
    return rated, unrated


def roofline(trace: Trace) -> Roofline:
    """Achieved vs peak FLOP/s of the window's GEMMs, attention and convolutions, per dtype."""
    name = trace.devices[0].name if trace.devices else None
    on_cpu = ran_on_cpu(trace)
    peaks = None if on_cpu else device_peaks(name)
    ops, unrated = rated_ops(trace)
    rows: dict[tuple[str, str], RooflineRow] = {}
    for op in ops:
        row = rows.get((op.op_class, op.dtype))
        if row is None:
            peak = peaks.peak_flops(op.dtype) if peaks else None
            row = rows[op.op_class, op.dtype] = RooflineRow(op.op_class, op.dtype, peak_flops=peak)
        row.ops += 1
        row.backward += op.backward
        row.flops += op.flops
        row.bytes += op.bytes
        row.device_us += op.device_us
        row.notes.update(op.notes)
    ordered = sorted(rows.values(), key=lambda r: -r.device_us)
    return Roofline(name, peaks, on_cpu, ordered, unrated)
