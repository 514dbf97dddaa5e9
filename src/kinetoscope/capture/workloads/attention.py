"""`attention` (04): causal self-attention, naive vs `scaled_dot_product_attention`.

What it teaches: the naive version materialises the `seq x seq` score matrix and
runs matmul, scale, mask, softmax and matmul as separate kernels (memory traffic
grows with seq^2); `--impl sdpa` lets PyTorch pick a fused kernel (flash or
memory-efficient attention on GPU), one op in the trace instead of five.
`--backend` pins the SDPA backend with `torch.nn.attention.sdpa_kernel`
(`math`, `efficient`, `flash`, `cudnn`; `naive` is `--impl naive`), so one
program can be profiled on each and compared with `kinetoscope diff`. On the
CPU (torch 2.13) only `math` and `flash` (`_scaled_dot_product_flash_attention_for_cpu`)
exist. A pinned backend that cannot run these inputs is found before profiling
by one call on a 1 x 1 x 8 x head_dim slice (same dtype and device), so the
user gets PyTorch's reason as one line instead of a failed run.
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
#: "auto" lets SDPA choose; the others pin one torch.nn.attention.SDPBackend.
BACKENDS = ("auto", "naive", "math", "efficient", "flash", "cudnn")


@dataclass(frozen=True)
class Params:
    impl: str = "sdpa"
    batch: int = 2
    seq: int = 128
    heads: int = 4
    head_dim: int = 64
    backend: str = "auto"

    def __post_init__(self) -> None:
        if self.impl not in IMPLS:
            raise UsageError(
                f"attention --impl must be one of {', '.join(IMPLS)}, not {self.impl!r}"
            )
        if self.backend not in BACKENDS:
            raise UsageError(
                f"attention --backend must be one of {', '.join(BACKENDS)}, not {self.backend!r}"
            )
        if self.backend == "naive":
            object.__setattr__(self, "impl", "naive")
        elif self.backend != "auto" and self.impl == "naive":
            raise UsageError(f"attention --backend {self.backend} needs --impl sdpa, not naive")


def tag(p: Params) -> str:
    name = p.impl if p.backend in ("auto", "naive") else f"sdpa-{p.backend}"
    return f"{name}_b{p.batch}_s{p.seq}_h{p.heads}_d{p.head_dim}"


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
    pinned = _pinned_backend(p, ctx)
    label = f"attention_{p.impl}"

    def step() -> None:
        with torch.no_grad(), pinned(), torch.profiler.record_function(label):
            attend(q, k, v)

    return step


def _pinned_backend(p: Params, ctx: Context):
    """A context-manager factory pinning the chosen SDPA backend (a no-op for auto/naive);
    UsageError with PyTorch's reason when that backend cannot run these inputs here."""
    from contextlib import nullcontext

    if p.backend in ("auto", "naive"):
        return nullcontext
    from torch.nn.attention import SDPBackend, sdpa_kernel

    which = {
        "math": SDPBackend.MATH,
        "efficient": SDPBackend.EFFICIENT_ATTENTION,
        "flash": SDPBackend.FLASH_ATTENTION,
        "cudnn": SDPBackend.CUDNN_ATTENTION,
    }[p.backend]
    probe = torch.randn((1, 1, 8, p.head_dim), device=ctx.device, dtype=ctx.dtype)
    try:
        with torch.no_grad(), sdpa_kernel(which):
            F.scaled_dot_product_attention(probe, probe, probe, is_causal=True)
    except RuntimeError as exc:
        reason = str(exc).strip().splitlines()[0]
        raise UsageError(
            f"attention --backend {p.backend} cannot run on {ctx.device} with "
            f"{str(ctx.dtype).removeprefix('torch.')}, head dim {p.head_dim}: {reason}"
        ) from None
    return lambda: sdpa_kernel(which)
