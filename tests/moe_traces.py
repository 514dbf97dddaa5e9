"""Tiny mixture-of-experts layers recorded on the CPU once per session (record_shapes).

Recorded in the test process (`record_here`: no cold start is read), 3 profiled steps each,
64 tokens of width 32, 4 experts of 32 -> 64 -> 32:

- "moe_dense": a Switch-Transformer-style layer: gate linear -> softmax -> topk(1),
  a one-hot mask scattered from the topk, then every expert runs on all 64 tokens
  and the mask weights the stacked results (what the Switch reference code does);
- "moe_topk": a Mixtral-style layer with k=2: gate linear (+ a fixed routing bias
  that favours experts 0 and 1) -> softmax -> topk(2), then each expert runs on the
  tokens routed to it only (`torch.where` on the expert ids, `index_select`) and
  `index_add_` puts the weighted results back; the seed and bias fix the loads,
  which the script writes to `moe_topk_loads.json` for the tests to compare;
- "mlp_topk_head": not an MoE: an MLP whose classifier head (linear -> softmax ->
  topk(3) over 10 classes) has the gate's shape but no experts after it.

(Transformer encoders without experts are the corpus' BERT and tiny transformer block.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .capture_helpers import record_here
from .conftest import recorded_once

NAMES = ("moe_dense", "moe_topk", "mlp_topk_head")

SCRIPT = r"""
import json, sys
import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, schedule

out = sys.argv[1]
torch.manual_seed(0)
torch.set_num_threads(1)
T, H, F, E = 64, 32, 64, 4


def expert():
    return nn.Sequential(nn.Linear(H, F), nn.GELU(), nn.Linear(F, H))


class DenseMoE(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = nn.Linear(H, E)
        self.experts = nn.ModuleList(expert() for _ in range(E))

    def forward(self, x):
        probs = self.gate(x).softmax(-1)
        top, idx = probs.topk(1, dim=-1)
        mask = torch.zeros_like(probs).scatter_(-1, idx, 1.0)
        outs = torch.stack([e(x) for e in self.experts], -1)  # every expert, every token
        return (outs * (probs * mask).unsqueeze(1)).sum(-1)


class TopKMoE(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = nn.Linear(H, E, bias=False)
        self.register_buffer("bias", torch.tensor([2.0, 1.0, 0.0, -1.0]))
        self.experts = nn.ModuleList(expert() for _ in range(E))

    def forward(self, x):
        probs = (self.gate(x) + self.bias).softmax(-1)
        w, idx = probs.topk(2, dim=-1)
        out = torch.zeros_like(x)
        for e, ex in enumerate(self.experts):
            tok, slot = torch.where(idx == e)
            if tok.numel() == 0:
                continue
            y = ex(x.index_select(0, tok)) * w[tok, slot].unsqueeze(-1)
            out.index_add_(0, tok, y)
        return out

    def loads(self, x):
        idx = (self.gate(x) + self.bias).softmax(-1).topk(2, dim=-1).indices
        return [int((idx == e).sum()) for e in range(E)]


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = expert()
        self.head = nn.Linear(H, 10)

    def forward(self, x):
        return self.head(self.mlp(x)).softmax(-1).topk(3, dim=-1)


x = torch.randn(T, H)
models = {
    "moe_dense": DenseMoE(),
    "moe_topk": TopKMoE(),
    "mlp_topk_head": Head(),
}
with open(f"{out}/moe_topk_loads.json", "w") as f:
    with torch.no_grad():
        json.dump(models["moe_topk"].loads(x), f)
for name, model in models.items():
    with torch.no_grad(), profile(
        activities=[ProfilerActivity.CPU],
        record_shapes=True,
        schedule=schedule(wait=0, warmup=1, active=3),
        on_trace_ready=lambda p, name=name: p.export_chrome_trace(f"{out}/{name}.json"),
    ) as prof:
        for _ in range(4):
            model(x)
            prof.step()
"""


@pytest.fixture(scope="session")
def moe_traces(tmp_path_factory) -> dict[str, Path]:
    """Recorded trace name -> path, and "loads" -> the top-k layer's tokens per expert."""
    pytest.importorskip("torch")

    def record(out: Path) -> None:
        record_here(SCRIPT, out)

    out = recorded_once(tmp_path_factory, "moe_traces", record)
    paths = {name: out / f"{name}.json" for name in NAMES}
    paths["loads"] = out / "moe_topk_loads.json"
    return paths
