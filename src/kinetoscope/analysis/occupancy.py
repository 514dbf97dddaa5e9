"""Occupancy of a kernel launch as the CUDA occupancy calculator computes it.

Kineto writes "est. achieved occupancy %" for each kernel from `cuda_occupancy.h`
(libkineto/src/CudaDeviceProperties.cpp, `kernelOccupancy`): the calculator gives the
resident blocks per SM that registers, shared memory, warp slots and the block
limit allow; Kineto caps them at the grid's blocks per SM (grid blocks / SM count)
and multiplies by the block's threads over the SM's thread limit. It calls the
calculator with the default per-block shared memory limit (48 KiB), so a kernel that
opted in to more (cuBLAS `sm90_xmma`, `nvjet`, FlashAttention on Hopper) is recorded
as 0%: not a real 0%, the calculator refused. Here the limit is the opt-in maximum,
so those launches get an estimate, and the limiter (the smallest of the four block
limits, or the grid where it is smaller) is named.

Per-architecture limits are the CUDA C++ Programming Guide's "Technical
Specifications per Compute Capability" table (resident warps, resident blocks,
32-bit registers and shared memory per SM, shared memory per block) and
`cuda_occupancy.h` (registers allocated per warp in units of 256, 4 sub-partitions
per SM, shared memory allocated in 256-byte units on 7.x and 128 on 8.0 and newer,
1 KiB reserved per block from 8.0). A GPU without a row here is not computed.
ROCm traces (roctracer) record grid and workgroup but no VGPR or LDS use, so AMD
kernels are never computed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: registers per SM is 64K on every architecture listed; registers per thread at most 255
REGISTERS_PER_SM = 65536
MAX_REGISTERS_PER_THREAD = 255
REGISTER_UNIT = 256  # registers are allocated to a warp in units of 256
SUB_PARTITIONS = 4
WARP = 32


@dataclass(frozen=True)
class SmLimits:
    """What one SM of a compute capability holds (CUDA programming guide table)."""

    max_warps: int
    max_blocks: int
    smem_per_sm: int  # bytes, the largest carveout
    smem_per_block: int  # bytes, the opt-in maximum for one block
    smem_unit: int
    smem_reserved: int  # per block, reserved by the driver


_KIB = 1024
SM_LIMITS: dict[str, SmLimits] = {
    "7.0": SmLimits(64, 32, 96 * _KIB, 96 * _KIB, 256, 0),
    "7.2": SmLimits(64, 32, 96 * _KIB, 96 * _KIB, 256, 0),
    "7.5": SmLimits(32, 16, 64 * _KIB, 64 * _KIB, 256, 0),
    "8.0": SmLimits(64, 32, 164 * _KIB, 163 * _KIB, 128, _KIB),
    "8.6": SmLimits(48, 16, 100 * _KIB, 99 * _KIB, 128, _KIB),
    "8.7": SmLimits(48, 16, 164 * _KIB, 163 * _KIB, 128, _KIB),
    "8.9": SmLimits(48, 24, 100 * _KIB, 99 * _KIB, 128, _KIB),
    "9.0": SmLimits(64, 32, 228 * _KIB, 227 * _KIB, 128, _KIB),
    "10.0": SmLimits(64, 32, 228 * _KIB, 227 * _KIB, 128, _KIB),
    "12.0": SmLimits(48, 32, 128 * _KIB, 99 * _KIB, 128, _KIB),
}


def sm_limits(vendor: str | None, compute_capability: str | None) -> SmLimits | None:
    """The table row of an NVIDIA GPU, None for AMD or a capability not in the table."""
    if vendor != "NVIDIA" or not compute_capability:
        return None
    return SM_LIMITS.get(compute_capability)


@dataclass(frozen=True)
class Occupancy:
    """Resident blocks per SM and what limits them, for one launch configuration."""

    theoretical: float  # resident warps / max warps, 0..1
    active_blocks: int
    limiters: tuple[str, ...]  # of "registers", "shared memory", "block size", "blocks per SM"
    block_limits: dict[str, int]  # blocks per SM each resource allows

    def achieved(self, grid_blocks_per_sm: float | None, threads: int, limits: SmLimits) -> float:
        """Kineto's estimate: the resident blocks capped by the grid's blocks per SM."""
        blocks = float(self.active_blocks)
        if grid_blocks_per_sm is not None and math.isfinite(grid_blocks_per_sm):
            blocks = min(blocks, grid_blocks_per_sm)
        return blocks * threads / (limits.max_warps * WARP)


def occupancy(
    limits: SmLimits, threads: int, registers: int, shared_bytes: int
) -> Occupancy | None:
    """`cudaOccMaxActiveBlocksPerMultiprocessor` for one block shape; None where the
    inputs are absent (negative) or the block cannot launch at all."""
    if threads <= 0 or registers < 0 or shared_bytes < 0:
        return None
    warps = -(-threads // WARP)
    by_warps = limits.max_warps // warps
    if registers > MAX_REGISTERS_PER_THREAD:
        return None
    per_warp = -(-registers * WARP // REGISTER_UNIT) * REGISTER_UNIT
    if per_warp:
        warps_per_part = (REGISTERS_PER_SM // SUB_PARTITIONS) // per_warp
        by_registers = warps_per_part * SUB_PARTITIONS // warps
    else:
        by_registers = limits.max_blocks
    smem = shared_bytes + limits.smem_reserved
    smem = -(-smem // limits.smem_unit) * limits.smem_unit
    if smem > limits.smem_per_block + limits.smem_reserved:
        return None
    by_smem = limits.smem_per_sm // smem if shared_bytes else limits.max_blocks
    block_limits = {
        "registers": by_registers,
        "shared memory": by_smem,
        "block size": by_warps,
        "blocks per SM": limits.max_blocks,
    }
    active = min(block_limits.values())
    if active <= 0:
        return None
    # every resource at the minimum limits it, as the calculator's limitingFactors bits say
    limiters = tuple(k for k, v in block_limits.items() if v == active)
    return Occupancy(active * warps / limits.max_warps, active, limiters, block_limits)


def explain_limiter(occ: Occupancy, threads: int, registers: int, shared_bytes: int) -> str:
    """Why no more blocks fit, as the calculator reads it: each limiting resource."""
    n = occ.active_blocks
    blocks = f"{n} block{'s' if n != 1 else ''} of {threads} threads per SM"
    what = {
        "registers": f"{registers} registers/thread",
        "shared memory": f"{shared_bytes:,} B shared memory/block",
        "block size": f"the warp slots ({-(-threads // WARP)} warps/block)",
        "blocks per SM": "the SM's resident-block limit",
    }
    return " and ".join(what[k] for k in occ.limiters) + f" allow {blocks}"
