"""`linear` (02): one `nn.Linear` with bias, forward only.

What it teaches: how a module call decomposes (`aten::linear` -> `aten::addmm`,
bias fused into the GEMM, one kernel on GPU) and what the module layer adds on
the host compared with `matmul_add`'s two explicit ops.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from . import Context

NAME = "linear"
FOLDER = "02_linear"


@dataclass(frozen=True)
class Params:
    batch: int = 64
    in_dim: int = 256
    out_dim: int = 256


def tag(p: Params) -> str:
    return f"{p.batch}x{p.in_dim}x{p.out_dim}"


def build(p: Params, ctx: Context):
    layer = torch.nn.Linear(p.in_dim, p.out_dim, bias=True, device=ctx.device, dtype=ctx.dtype)
    x = torch.randn(p.batch, p.in_dim, device=ctx.device, dtype=ctx.dtype)
    forward = ctx.compile(layer)

    def step() -> None:
        with torch.no_grad(), torch.profiler.record_function("linear"):
            forward(x)

    return step
