"""`attention` (04): causal self-attention, naive vs `scaled_dot_product_attention`.

What it teaches: the naive version materialises the `seq x seq` score matrix and
runs matmul, scale, mask, softmax and matmul as separate kernels (memory traffic
grows with seq^2); `--impl sdpa` lets PyTorch pick a fused kernel (flash or
memory-efficient attention on GPU), one op in the trace instead of five.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ...errors import UsageError
from . import Context

NAME = "attention"
FOLDER = "04_attention"
IMPLS = ("naive", "sdpa")


@dataclass(frozen=True)
class Params:
    impl: str = "sdpa"
    batch: int = 2
    seq: int = 128
    heads: int = 4
    head_dim: int = 64

    def __post_init__(self) -> None:
        if self.impl not in IMPLS:
            raise UsageError(
                f"attention --impl must be one of {', '.join(IMPLS)}, not {self.impl!r}"
            )


def tag(p: Params) -> str:
    return f"{p.impl}_b{p.batch}_s{p.seq}_h{p.heads}_d{p.head_dim}"


def naive_causal_attention(q, k, v, mask):
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(mask, float("-inf"))
    return torch.matmul(torch.softmax(scores, dim=-1), v)


def build(p: Params, ctx: Context):
    shape = (p.batch, p.heads, p.seq, p.head_dim)
    q, k, v = (torch.randn(shape, device=ctx.device, dtype=ctx.dtype) for _ in range(3))
    if p.impl == "naive":
        mask = torch.ones(p.seq, p.seq, device=ctx.device, dtype=torch.bool).triu(1)
        attend = ctx.compile(lambda q, k, v: naive_causal_attention(q, k, v, mask))
    else:
        attend = ctx.compile(
            lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)
        )
    label = f"attention_{p.impl}"

    def step() -> None:
        with torch.no_grad(), torch.profiler.record_function(label):
            attend(q, k, v)

    return step
