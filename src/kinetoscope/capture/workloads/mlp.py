"""`mlp` (03): a GeGLU MLP block as in modern LLMs, forward only.

`down(gelu_tanh(gate(x)) * up(x))`. What it teaches: eager mode runs the
element-wise tail (GeLU, multiply) as separate kernels that each read and write
the whole activation, so they cost memory bandwidth and launches out of
proportion to their FLOPs; `--compile` fuses them into one generated kernel
(compare the two traces: fewer kernels, `Torch-Compiled Region`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from . import Context

NAME = "mlp"
FOLDER = "03_mlp"


@dataclass(frozen=True)
class Params:
    batch: int = 2
    seq: int = 64
    dim: int = 256
    hidden: int = 512


def tag(p: Params) -> str:
    return f"b{p.batch}_s{p.seq}_d{p.dim}_h{p.hidden}"


class GeGLU(torch.nn.Module):
    def __init__(self, dim: int, hidden: int, device, dtype) -> None:
        super().__init__()
        kw = {"bias": False, "device": device, "dtype": dtype}
        self.gate = torch.nn.Linear(dim, hidden, **kw)
        self.up = torch.nn.Linear(dim, hidden, **kw)
        self.down = torch.nn.Linear(hidden, dim, **kw)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.gelu(self.gate(x), approximate="tanh") * self.up(x))


def build(p: Params, ctx: Context):
    block = GeGLU(p.dim, p.hidden, ctx.device, ctx.dtype)
    x = torch.randn(p.batch, p.seq, p.dim, device=ctx.device, dtype=ctx.dtype)
    forward = ctx.compile(block)

    def step() -> None:
        with torch.no_grad(), torch.profiler.record_function("mlp"):
            forward(x)

    return step
