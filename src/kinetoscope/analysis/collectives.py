"""Every collective of the window, by family and kind: time, spread, bytes, bandwidth.

A collective is a communication kernel (`kernel_types`' communication type) or, for
Gloo, the `gloo:<collective>` annotation of a CPU collective. Its family is the
library that ran it (`collective_names`: NCCL, RCCL on ROCm, DeepEP, custom
all-reduce, ...). Its kind is what the kernel name says where the library writes
it, else what PyTorch recorded around the launch: `record_param_comms`'s
"Collective name" or the `nccl:<collective>` annotation. NCCL runs all-to-all,
gather and scatter as grouped send/recv, so a `SendRecv` kernel takes the recorded
collective's name. A kernel with no launch in the trace (launched before the profiler
started, or by a process whose host events the file lacks) has no recorded op to ask:
it takes the collective of the `nccl:*`/`rccl:*` `gpu_user_annotation` that encloses it
on its own stream, if any. The profiler draws that annotation on the device from the
kernels run inside the host's `record_function` range, so it covers them exactly; the
host-side `record_param_comms` ran at enqueue time and its interval says nothing of
when the kernel ran, so time never links a kernel to it.

Bytes come only from what the trace records: `record_param_comms`'s element counts
and dtype (torch >= 2.2), else the launching op's recorded input tensor (`Input
Dims`, `Input type`) for collectives whose input is the whole message (all-reduce,
broadcast, reduce, reduce-scatter, all-to-all). Nothing is inferred where neither is
recorded: the row says "bytes not recorded". The message size is the full
(gathered) size, as nccl-tests and TraceLens's NcclAnalyser count it: `Out msg
nelems` for all-gather, `In msg nelems` otherwise.

Algorithm bandwidth is bytes / duration; bus bandwidth multiplies it by
nccl-tests' factor (2(n-1)/n for all-reduce, (n-1)/n for all-gather,
reduce-scatter and all-to-all, 1 for broadcast, reduce and send/recv) with n the
recorded group size. A collective kernel spins until every peer has arrived, so on
one rank's trace its duration includes waiting for the others: bandwidth from it is
a lower bound on what the link delivered (TraceLens takes the shortest duration
across ranks when all ranks are given).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from ..trace import Cat, Trace
from .ancestry import ancestor_of_kind
from .collective_names import ITEMSIZE as COMM_ITEMSIZE
from .collective_names import KINDS, bus_factor, collective_kind
from .intervals import union_length
from .kernel_names import decoded
from .kernel_types import KERNEL_TYPES, type_codes
from .recorded_args import numel, recorded_args
from .stepmap import device_steps, step_numbers
from .streams import compute_unions, hidden_in
from .window import in_window, window_device_work

#: kinds whose recorded input tensor is the whole message
_INPUT_IS_MESSAGE = frozenset({"all_reduce", "broadcast", "reduce", "reduce_scatter", "all_to_all"})


@dataclass(frozen=True)
class Call:
    """One collective: a record_param_comms with the kernels it launched, or one kernel."""

    family: str
    kind: str
    start: float
    dur_us: float
    bytes: int | None
    ranks: int | None
    step: int
    #: device the kernels ran on (None for Gloo's CPU collectives)
    device: int | None
    #: record_param_comms' "Process Group Name" where recorded: ranks match calls within it
    group: str | None = None


@dataclass(frozen=True)
class CollectiveRow:
    family: str
    kind: str
    calls: int
    total_us: float
    median_us: float
    p90_us: float
    min_us: float
    max_us: float
    #: calls whose bytes the trace records, and their bytes
    calls_with_bytes: int
    bytes: int
    #: summed duration of the calls with bytes: the bandwidths' denominator
    bytes_us: float
    #: the recorded group sizes (one value in a normal run)
    ranks: list[int]
    #: bytes over the duration of the calls with bytes, GB/s (1e9 bytes/s)
    algbw_gbps: float | None
    busbw_gbps: float | None
    #: max over median of the calls' durations
    skew: float | None
    #: max over median of this collective's time per step (None under two steps)
    step_skew: float | None


@dataclass(frozen=True)
class FamilyRow:
    family: str
    calls: int
    total_us: float
    #: union of the family's kernels, and the part under compute (None for CPU collectives)
    busy_us: float
    hidden_us: float | None

    @property
    def exposed_us(self) -> float | None:
        return None if self.hidden_us is None else self.busy_us - self.hidden_us


@dataclass(frozen=True)
class Collectives:
    rows: list[CollectiveRow]
    families: list[FamilyRow]
    total_us: float
    calls: list[Call] = field(default_factory=list, repr=False)


def collectives(trace: Trace) -> Collectives:
    """The window's collectives, grouped (see the module docstring)."""
    calls, devices = _device_calls(trace)
    calls += _gloo_calls(trace)
    rows = _rows(calls)
    families = _families(trace, calls, devices)
    return Collectives(rows, families, sum(c.dur_us for c in calls), calls)


def _comm_ops(trace: Trace) -> np.ndarray:
    """For each event, its innermost record_param_comms ancestor-or-self, else -1."""
    mask = np.zeros(len(trace), dtype=bool)
    index = np.fromiter(trace.collective_args.keys(), np.int64, len(trace.collective_args))
    mask[index] = True
    return ancestor_of_kind(trace, mask, outermost=False)


def _device_calls(trace: Trace) -> tuple[list[Call], dict[str, np.ndarray]]:
    work = window_device_work(trace)
    work = work[type_codes(trace, work) == KERNEL_TYPES.index("communication")]
    if not len(work):
        return [], {}
    comm = trace.memo(_comm_ops) if len(trace.collective_args) else None
    launch = trace.launch_of[work]
    owner = np.full(len(work), -1, dtype=np.int64)
    if comm is not None:
        linked = launch >= 0
        owner[linked] = comm[launch[linked]]
    steps = device_steps(trace, work) if trace.steps else np.full(len(work), -1)
    lane_device = [ln.device for ln in trace.lanes]
    # kernels one record_param_comms launched are one collective; an unlinked kernel is one
    groups: dict[int, list[int]] = {}
    for pos, op in enumerate(owner.tolist()):
        groups.setdefault(op if op >= 0 else -1 - pos, []).append(pos)
    calls = []
    by_family: dict[str, list[int]] = {}
    for op, members in groups.items():
        idx = work[members]
        first = int(idx[0])
        family = decoded(trace, trace.name(first)).library
        if family in ("other", None):
            family = "other"
        recorded = json.loads(trace.collective_args[op]) if op >= 0 else {}
        kind = _kind(trace, first, recorded)
        ranks = _int(recorded.get("Group size"))
        calls.append(
            Call(
                family=family,
                kind=kind,
                start=float(trace.ts[idx].min()),
                dur_us=union_length(trace.ts[idx], trace.end[idx]),
                bytes=_bytes(trace, first, kind, recorded),
                ranks=ranks,
                step=int(steps[members[0]]),
                device=lane_device[int(trace.lane[first])],
                group=_group(recorded),
            )
        )
        by_family.setdefault(family, []).extend(idx.tolist())
    return calls, {f: np.array(sorted(v), dtype=np.int64) for f, v in by_family.items()}


def _kind(trace: Trace, kernel: int, recorded: dict) -> str:
    """The kernel name's collective, unless it says none or send/recv (NCCL's grouped
    point-to-point that all-to-all, gather and scatter run as): then the recorded one."""
    named = collective_kind(decoded(trace, trace.name(kernel)).short)
    if named not in (None, "send_recv"):
        return named
    said = recorded.get("Collective name")
    if isinstance(said, str) and collective_kind(said):
        return collective_kind(said)
    op = int(trace.op_of[kernel])
    if op >= 0 and (from_op := collective_kind(trace.name(op))):
        return from_op
    return _annotated_kind(trace, kernel) or named or "unknown"


#: the annotations PyTorch's NCCL process group (and RCCL, its ROCm build) records
_COMM_ANNOTATION = ("nccl:", "rccl:")
#: the profiler's clock resolution (1 ns): float rounding of an enclosure that is exact
_EPS_US = 1e-3


def _annotated_kind(trace: Trace, kernel: int) -> str | None:
    """The collective of the innermost `nccl:*`/`rccl:*` device annotation enclosing
    `kernel` on its own stream (lane); None where none does."""
    lanes, starts, ends, kinds = trace.memo(_comm_annotations)
    on_lane = lanes == trace.lane[kernel]
    inside = on_lane & (starts <= trace.ts[kernel] + _EPS_US)
    inside &= ends >= trace.end[kernel] - _EPS_US
    hits = np.flatnonzero(inside)
    if not len(hits):
        return None
    innermost = hits[np.argmin(ends[hits] - starts[hits])]
    return kinds[innermost]


def _comm_annotations(trace: Trace):
    """(lane, start, end, kind) of the device-lane `nccl:*`/`rccl:*` annotations."""
    ids = trace.name_ids_matching(lambda n: n.startswith(_COMM_ANNOTATION))
    idx = np.flatnonzero(np.isin(trace.name_id, ids) & (trace.cat == int(Cat.GPU_ANNOTATION)))
    kinds = [collective_kind(trace.name(i)) for i in idx.tolist()]
    keep = np.array([k is not None for k in kinds], dtype=bool)
    idx = idx[keep] if len(idx) else idx
    return trace.lane[idx], trace.ts[idx], trace.end[idx], [k for k in kinds if k is not None]


def _group(recorded: dict) -> str | None:
    name = recorded.get("Process Group Name")
    return name if isinstance(name, str) and name else None


def _bytes(trace: Trace, kernel: int, kind: str, recorded: dict) -> int | None:
    itemsize = COMM_ITEMSIZE.get(str(recorded.get("dtype")))
    nelems = _int(recorded.get("Out msg nelems" if kind == "all_gather" else "In msg nelems"))
    if itemsize and nelems is not None:
        return nelems * itemsize
    op = int(trace.op_of[kernel])
    return _input_bytes(trace, op, kind) if op >= 0 else None


def _input_bytes(trace: Trace, op: int, kind: str) -> int | None:
    """Bytes of the op's first recorded input tensor, for kinds whose input is the message."""
    if kind not in _INPUT_IS_MESSAGE:
        return None
    args = recorded_args(trace, op)
    shape = args.shape(0)
    itemsize = COMM_ITEMSIZE.get(args.types[0]) if args.types else None
    return numel(shape) * itemsize if shape and itemsize else None


def _int(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _gloo_calls(trace: Trace) -> list[Call]:
    """CPU collectives: ProcessGroupGloo's `gloo:<collective>` annotations in the window."""
    ids = trace.name_ids_matching(lambda n: n.startswith("gloo:"))
    if not len(ids):
        return []
    idx = np.flatnonzero(np.isin(trace.name_id, ids) & (trace.cat == int(Cat.USER_ANNOTATION)))
    idx = idx[in_window(trace, trace.ts, idx)]
    comm = trace.memo(_comm_ops) if len(trace.collective_args) else None
    steps = step_numbers(trace, trace.ts[idx]) if trace.steps else np.full(len(idx), -1)
    calls = []
    for k, i in enumerate(idx.tolist()):
        op = int(comm[i]) if comm is not None else -1
        recorded = json.loads(trace.collective_args[op]) if op >= 0 else {}
        kind = collective_kind(trace.name(i)) or "unknown"
        calls.append(
            Call(
                "Gloo",
                kind,
                float(trace.ts[i]),
                float(trace.dur[i]),
                _gloo_bytes(trace, i, kind, recorded),
                _int(recorded.get("Group size")),
                int(steps[k]),
                None,
                _group(recorded),
            )
        )
    return calls


def _gloo_bytes(trace: Trace, event: int, kind: str, recorded: dict) -> int | None:
    """From record_param_comms where it was recorded, else the annotation's own input
    tensor (ProcessGroupGloo records it with record_shapes)."""
    itemsize = COMM_ITEMSIZE.get(str(recorded.get("dtype")))
    nelems = _int(recorded.get("Out msg nelems" if kind == "all_gather" else "In msg nelems"))
    if itemsize and nelems is not None:
        return nelems * itemsize
    return _input_bytes(trace, event, kind)


def _rows(calls: list[Call]) -> list[CollectiveRow]:
    groups: dict[tuple[str, str], list[Call]] = {}
    for c in calls:
        groups.setdefault((c.family, c.kind), []).append(c)
    rows = []
    for (family, kind), group in groups.items():
        durs = np.array([c.dur_us for c in group])
        median = float(np.median(durs))
        sized = [c for c in group if c.bytes is not None]
        size = sum(c.bytes for c in sized)
        sized_us = sum(c.dur_us for c in sized)
        algbw = size / sized_us / 1e3 if sized and sized_us > 0 else None
        factors = [bus_factor(kind, c.ranks) for c in sized]
        busbw = None
        if algbw is not None and all(f is not None for f in factors):
            busbw = sum(c.bytes * f for c, f in zip(sized, factors, strict=True)) / sized_us / 1e3
        rows.append(
            CollectiveRow(
                family=family,
                kind=kind,
                calls=len(group),
                total_us=float(durs.sum()),
                median_us=median,
                p90_us=float(np.percentile(durs, 90)),
                min_us=float(durs.min()),
                max_us=float(durs.max()),
                calls_with_bytes=len(sized),
                bytes=size,
                bytes_us=float(sized_us),
                ranks=sorted({c.ranks for c in group if c.ranks is not None}),
                algbw_gbps=algbw,
                busbw_gbps=busbw,
                skew=float(durs.max()) / median if median > 0 else None,
                step_skew=_step_skew(group),
            )
        )
    order = {k: n for n, k in enumerate(KINDS)}
    rows.sort(key=lambda r: (-r.total_us, order.get(r.kind, len(order))))
    return rows


def _step_skew(group: list[Call]) -> float | None:
    """Max over median of the per-step time of one collective, over the steps that ran it."""
    per_step: dict[int, float] = {}
    for c in group:
        if c.step >= 0:
            per_step[c.step] = per_step.get(c.step, 0.0) + c.dur_us
    if len(per_step) < 2:
        return None
    values = np.array(list(per_step.values()))
    median = float(np.median(values))
    return float(values.max()) / median if median > 0 else None


def _families(trace: Trace, calls: list[Call], kernels: dict[str, np.ndarray]) -> list[FamilyRow]:
    """Per family: calls, summed time, and for device families the union of their kernels
    and the part of it under compute kernels on the same device (`analysis.streams`)."""
    compute = None
    out = []
    for family in dict.fromkeys(c.family for c in calls):
        mine = [c for c in calls if c.family == family]
        total = sum(c.dur_us for c in mine)
        idx = kernels.get(family)
        if idx is None:  # CPU collectives: no device time to hide
            out.append(FamilyRow(family, len(mine), total, total, None))
            continue
        if compute is None:
            compute = trace.memo(compute_unions)
        busy = union_length(trace.ts[idx], trace.end[idx])
        out.append(FamilyRow(family, len(mine), total, busy, hidden_in(trace, idx, compute)))
    out.sort(key=lambda f: -f.total_us)
    return out
