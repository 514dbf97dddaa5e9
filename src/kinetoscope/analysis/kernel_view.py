"""The kernel view: per kernel name, its calls, time, launch configuration, estimated
occupancy and Tensor Core use, and the summary figures over all kernels.

TensorBoard's profiler plugin showed this pane (grid, block, registers, shared
memory, achieved occupancy, "Tensor Cores used"); its users miss it. The launch
configuration is what Kineto recorded for each kernel (`trace.kernel_args`); the
occupancy is Kineto's "est. achieved occupancy %" where it computed one, and the
calculator's own arithmetic (analysis/occupancy.py) where it recorded 0% for a
kernel it could not compute (shared memory above the 48 KiB default) or recorded
nothing; the Tensor Core answer is read from the name (analysis/tensor_cores.py).
Everything is over the kernels of the active window (`kernel_totals`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..trace import Trace
from .gpu_arch import gpu_arch
from .gpu_lane import kernel_totals
from .kernel_names import decoded
from .occupancy import Occupancy, SmLimits, explain_limiter, occupancy, sm_limits
from .tensor_cores import fp32_without_tf32, tensor_core_use

#: the per-block shared memory Kineto's calculator call allows (no opt-in): above it,
#: a recorded 0% is the calculator refusing, not a measurement
DEFAULT_SMEM_PER_BLOCK = 48 * 1024


@dataclass
class KernelRow:
    name: str  # display name
    raw: str
    calls: int
    total_us: float
    grid: tuple[int, int, int] | None
    block: tuple[int, int, int] | None
    registers: int | None
    shared_memory: int | None
    blocks_per_sm: float | None
    warps_per_sm: float | None
    configs: int  # distinct launch configurations under this name
    est_achieved_occupancy: float | None  # 0..1, time-weighted over its calls
    theoretical_occupancy: float | None
    limiters: tuple[str, ...]
    limiter_note: str | None
    tensor_cores: bool | None
    tensor_core_family: str
    fp32_without_tf32: bool


@dataclass
class KernelView:
    rows: list[KernelRow]
    total_us: float
    device: str | None
    tensor_core_us: float
    unknown_us: float  # kernels whose name cannot tell
    tf32_capable: bool
    fp32_no_tf32_us: float
    est_achieved_occupancy: float | None  # time-weighted mean over kernels with an estimate
    occupancy_covered_us: float
    recomputed_calls: int  # recorded 0% (calculator refused) or absent, computed here
    notes: list[str] = field(default_factory=list)


def _config_positions(trace: Trace, events: np.ndarray) -> np.ndarray:
    """Row in `trace.kernel_args` of each kernel event, -1 where it has none."""
    index = trace.kernel_args.index
    if not len(index):
        return np.full(len(events), -1, np.int64)
    pos = np.searchsorted(index, events).clip(0, len(index) - 1)
    return np.where(index[pos] == events, pos, -1)


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


class _Estimator:
    """Per-call occupancy: Kineto's where it is real, the calculator's where not."""

    def __init__(self, trace: Trace, limits: SmLimits | None):
        self.ka = trace.kernel_args
        self.limits = limits
        self.cache: dict[tuple[int, int, int], Occupancy | None] = {}
        self.recomputed = 0

    def config(self, pos: int) -> Occupancy | None:
        if self.limits is None or pos < 0:
            return None
        ka = self.ka
        key = (
            int(np.prod(ka.block[pos].clip(min=1))),
            int(ka.registers[pos]),
            int(ka.shared_memory[pos]),
        )
        if key not in self.cache:
            self.cache[key] = occupancy(self.limits, *key)
        return self.cache[key]

    def per_call(self, positions: np.ndarray) -> np.ndarray:
        out = np.full(len(positions), np.nan)
        ka = self.ka
        for j, pos in enumerate(positions.tolist()):
            if pos < 0:
                continue
            recorded = float(ka.occupancy[pos])
            if recorded > 0:
                out[j] = recorded / 100
                continue
            # Kineto's calculator call refuses shared memory above 48 KiB (records 0%)
            refused = bool(not recorded >= 0 or ka.shared_memory[pos] > DEFAULT_SMEM_PER_BLOCK)
            occ = self.config(pos)
            if occ is not None and self.limits is not None:
                threads = int(np.prod(ka.block[pos].clip(min=1)))
                out[j] = occ.achieved(_finite(ka.blocks_per_sm[pos]), threads, self.limits)
                self.recomputed += int(refused)
            elif not refused:
                out[j] = 0.0  # a real figure under 0.5%: a grid far smaller than the GPU
        return out


def _row(trace: Trace, total, est: _Estimator) -> KernelRow:
    raw = trace.names[total.name_id]
    k = decoded(trace, raw)
    use = tensor_core_use(k)
    positions = _config_positions(trace, total.instances)
    dur = trace.dur[total.instances]
    occ = est.per_call(positions)
    have = np.isfinite(occ)
    mean = float((occ[have] * dur[have]).sum() / dur[have].sum()) if dur[have].sum() > 0 else None
    ka = trace.kernel_args
    known = positions[positions >= 0]
    if len(known):
        keys = [tuple(ka.grid[p]) + tuple(ka.block[p]) + (int(ka.registers[p]),) for p in known]
        configs = len(set(keys))
        # the configuration that holds the most time under this name
        weight: dict[tuple, float] = {}
        for key, d in zip(keys, dur[positions >= 0].tolist(), strict=True):
            weight[key] = weight.get(key, 0.0) + d
        best = max(weight, key=weight.__getitem__)
        p = int(known[keys.index(best)])
        grid, block = tuple(int(x) for x in ka.grid[p]), tuple(int(x) for x in ka.block[p])
        regs, smem = int(ka.registers[p]), int(ka.shared_memory[p])
        o = est.config(p)
        threads = int(np.prod(np.clip(block, 1, None)))
        row_cfg = dict(
            grid=grid if min(grid) >= 0 else None,
            block=block if min(block) >= 0 else None,
            registers=regs if regs >= 0 else None,
            shared_memory=smem if smem >= 0 else None,
            blocks_per_sm=_finite(ka.blocks_per_sm[p]),
            warps_per_sm=_finite(ka.warps_per_sm[p]),
            theoretical_occupancy=o.theoretical if o else None,
            limiters=o.limiters if o else (),
            limiter_note=explain_limiter(o, threads, regs, smem) if o else None,
        )
    else:
        configs = 0
        row_cfg = dict(
            grid=None, block=None, registers=None, shared_memory=None, blocks_per_sm=None,
            warps_per_sm=None, theoretical_occupancy=None, limiters=(), limiter_note=None,
        )  # fmt: skip
    return KernelRow(
        name=k.short,
        raw=raw,
        calls=total.calls,
        total_us=total.device_us,
        configs=configs,
        est_achieved_occupancy=mean,
        tensor_cores=use.ran,
        tensor_core_family=use.family,
        fp32_without_tf32=fp32_without_tf32(k, use),
        **row_cfg,
    )


def kernel_view(trace: Trace) -> KernelView | None:
    """The kernel view of the active window; None without kernels."""
    totals, total_us = kernel_totals(trace)
    if not totals:
        return None
    arch = gpu_arch(trace)
    dev = trace.devices[0] if trace.devices else None
    limits = sm_limits(arch.vendor if arch else None, arch.compute_capability if arch else None)
    est = _Estimator(trace, limits)
    rows = [_row(trace, t, est) for t in totals]
    tf32 = bool(arch and arch.has_tf32_tensor_cores)
    covered = 0.0
    weighted = 0.0
    for r in rows:
        if r.est_achieved_occupancy is not None:
            covered += r.total_us
            weighted += r.est_achieved_occupancy * r.total_us
    notes = []
    if limits is None:
        why = (
            "ROCm traces record no register or LDS use"
            if arch and arch.vendor == "AMD"
            else f"no occupancy table for {arch.describe() if arch else 'an unknown device'}"
        )
        notes.append(f"occupancy limiters not computed: {why}")
    if est.recomputed:
        notes.append(
            f"{est.recomputed} calls had no usable recorded occupancy (none recorded, or 0% "
            "for shared memory above 48 KiB, which Kineto's calculator call refuses): "
            "estimated here with the opt-in shared memory limit"
        )
    return KernelView(
        rows=rows,
        total_us=total_us,
        device=arch.describe() if arch else (dev.name if dev else None),
        tensor_core_us=sum(r.total_us for r in rows if r.tensor_cores),
        unknown_us=sum(r.total_us for r in rows if r.tensor_cores is None),
        tf32_capable=tf32,
        fp32_no_tf32_us=sum(r.total_us for r in rows if r.fp32_without_tf32) if tf32 else 0.0,
        est_achieved_occupancy=weighted / covered if covered > 0 else None,
        occupancy_covered_us=covered,
        recomputed_calls=est.recomputed,
        notes=notes,
    )
