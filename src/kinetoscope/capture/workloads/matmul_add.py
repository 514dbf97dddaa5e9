"""`matmul_add` (01): `torch.add(torch.matmul(x, w), b)` inside `record_function("matmul_add")`.

What it teaches: the whole dispatch chain of one tiny computation
(ProfilerStep -> matmul_add -> aten::matmul -> aten::mm -> kernel) and, at
small sizes, the overhead-bound regime, where the host's Python, dispatch and
launch time exceed the kernels' time; grow `--size` until the device time
dominates. `--batched` makes the inputs 3-D (a batch of 4), so matmul
dispatches to `aten::bmm` instead of `aten::mm`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from . import Context

NAME = "matmul_add"
FOLDER = "01_matmul_add"
BATCH = 4


@dataclass(frozen=True)
class Params:
    size: int = 64
    batched: bool = False


def tag(p: Params) -> str:
    return f"{p.size}"


def knobs(p: Params) -> list[str]:
    """Suffixes after the series' `<size>_<dtype>_<warm>_<mode>` stem."""
    return ["batched"] if p.batched else []


def build(p: Params, ctx: Context):
    shape = (BATCH, p.size, p.size) if p.batched else (p.size, p.size)
    x = torch.randn(shape, device=ctx.device, dtype=ctx.dtype)
    w = torch.randn(shape, device=ctx.device, dtype=ctx.dtype)
    b = torch.randn(p.size, device=ctx.device, dtype=ctx.dtype)
    matmul_add = ctx.compile(lambda x, w, b: torch.add(torch.matmul(x, w), b))

    def step() -> None:
        with torch.profiler.record_function("matmul_add"):
            matmul_add(x, w, b)

    return step
