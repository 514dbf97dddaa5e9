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

    def _occupancy(self, threads: int, registers: int, smem: int) -> Occupancy | None:
        key = (threads, registers, smem)
        if key not in self.cache and self.limits is not None:
            self.cache[key] = occupancy(self.limits, *key)
        return self.cache.get(key)

    def config(self, pos: int) -> Occupancy | None:
        ka = self.ka
        threads = int(np.prod(ka.block[pos].clip(min=1)))
        return self._occupancy(threads, int(ka.registers[pos]), int(ka.shared_memory[pos]))

    def per_call(self, positions: np.ndarray) -> np.ndarray:
        """Occupancy (0..1) of each call, NaN where none can be given; the calculator
        runs once per distinct (threads, registers, shared memory)."""
        ka = self.ka
        out = np.full(len(positions), np.nan)
        have = np.flatnonzero(positions >= 0)
        pos = positions[have]
        recorded = ka.occupancy[pos]
        real = recorded > 0
        out[have[real]] = recorded[real] / 100
        pos, rows = pos[~real], have[~real]
        if not len(pos):
            return out
        smem = ka.shared_memory[pos]
        # Kineto's calculator call refuses shared memory above 48 KiB (records 0%)
        refused = ~(recorded[~real] >= 0) | (smem > DEFAULT_SMEM_PER_BLOCK)
        estimate = np.where(refused, np.nan, 0.0)  # under 0.5%: a grid far below the GPU
        if self.limits is not None:
            threads = np.prod(ka.block[pos].clip(min=1), axis=1)
            keys = np.stack([threads, ka.registers[pos], smem], axis=1)
            uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
            occs = [self._occupancy(*map(int, u)) for u in uniq]
            active = np.array([o.active_blocks if o else -1 for o in occs])[inverse.ravel()]
            grid = ka.blocks_per_sm[pos]
            blocks = np.where(np.isfinite(grid), np.minimum(active, grid), active)
            computed = active >= 0
            limit = self.limits.max_warps * 32
            estimate = np.where(computed, blocks * threads / limit, estimate)
            self.recomputed += int((refused & computed).sum())
        out[rows] = estimate
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
        cfg = np.concatenate(
            [ka.grid[known], ka.block[known], ka.registers[known][:, None]], axis=1
        )
        uniq, first, inverse = np.unique(cfg, axis=0, return_index=True, return_inverse=True)
        configs = len(uniq)
        # the configuration that holds the most time under this name
        weight = np.bincount(inverse.ravel(), weights=dur[positions >= 0], minlength=configs)
        p = int(known[first[int(np.argmax(weight))]])
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
