"""Real CPU recordings of tiny models, for the LLM view's must-fire and must-not-fire cases.

`llm_traces` records, once per run in the test process (`record_here`), with record_shapes:

- `prefill`: a hand-written decoder (embedding of vocab 97, 2 layers, causal attention
  with a `torch.triu` mask and a `torch.cat` KV cache, lm head, argmax) on one prompt
  `[1, 6]`, the cache starting empty: one forward, no decode.
- `prefill_nocache`: the same prompt through the same decoder without a cache (no cat):
  causal attention and the next token chosen over the 97-token vocabulary.
- `decode`: the same decoder, its cache filled by a prefill before profiling; then 3
  decode forwards on `[1, 1]` ids, each appending one token to each layer's keys and
  values.
- `both`: a prefill on `[1, 6]` and 3 decodes, all profiled.
- `encoder`: `nn.TransformerEncoder` (2 layers) on token ids `[2, 7]` run 3 times: an
  encoder, no cache, no token chosen.
- `detector`: a conv stem on a `[1, 3, 32, 32]` image, a ViT's class token joined in front
  of its 64 patches (`cat([[1, 1, 32], [1, 64, 32]], dim=1)`, the shape of a cache
  append), 5 learned object queries read with
  `nn.Embedding` on ids `[1, 5]`, 2 `nn.TransformerDecoderLayer`s, box and class heads
  (11 classes), run 3 times: no language model.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .capture_helpers import record_here
from .conftest import recorded_once

SCRIPT = r"""
import sys
import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile

out = sys.argv[1]
torch.manual_seed(0)
VOCAB, D, HEADS = 97, 32, 2


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv, self.out = nn.Linear(D, 3 * D), nn.Linear(D, D)
        self.mlp = nn.Sequential(nn.Linear(D, 2 * D), nn.GELU(), nn.Linear(2 * D, D))

    def forward(self, x, cache):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, HEADS, D // HEADS).permute(2, 0, 3, 1, 4)
        if cache is not None:
            k = torch.cat([cache[0], k], dim=-2)  # the cache grows along the sequence
            v = torch.cat([cache[1], v], dim=-2)
            cache[0], cache[1] = k, v
        att = q @ k.transpose(-1, -2) / (D // HEADS) ** 0.5
        if t > 1:  # a prompt attends causally: mask the future with a triangle
            past = k.shape[-2] - t
            mask = torch.triu(torch.ones(t, k.shape[-2], dtype=torch.bool), diagonal=past + 1)
            att = att.masked_fill(mask, float("-inf"))
        y = (att.softmax(-1) @ v).transpose(1, 2).reshape(b, t, D)
        x = x + self.out(y)
        return x + self.mlp(x)


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D)
        self.layers = nn.ModuleList(Layer() for _ in range(2))
        self.head = nn.Linear(D, VOCAB)

    def forward(self, ids, caches):
        x = self.emb(ids)
        for layer, cache in zip(self.layers, caches):
            x = layer(x, cache)
        return self.head(x[:, -1])


def empty_cache():
    return [[torch.zeros(1, HEADS, 0, D // HEADS) for _ in range(2)] for _ in range(2)]


def record(name, fn):
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        fn()
    prof.export_chrome_trace(f"{out}/{name}.json")


model = Decoder().eval()
prompt = torch.randint(0, VOCAB, (1, 6))


def decode(caches, token, n):
    for _ in range(n):
        token = model(token.view(1, 1), caches).argmax(-1)
    return token


with torch.no_grad():
    caches = empty_cache()
    record("prefill", lambda: model(prompt, caches).argmax(-1))
    record("prefill_nocache", lambda: model(prompt, [None, None]).argmax(-1))
    caches = empty_cache()
    first = model(prompt, caches).argmax(-1)  # the cache is filled before profiling
    record("decode", lambda: decode(caches, first, 3))
    caches = empty_cache()
    record("both", lambda: decode(caches, model(prompt, caches).argmax(-1), 3))

    layer = nn.TransformerEncoderLayer(D, HEADS, 2 * D, batch_first=True)
    emb, stack = nn.Embedding(VOCAB, D), nn.TransformerEncoder(layer, 2).eval()
    ids = torch.randint(0, VOCAB, (2, 7))
    record("encoder", lambda: [stack(emb(ids)) for _ in range(3)])

    class Detector(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, D, 4, stride=4), nn.ReLU())
            self.cls = nn.Parameter(torch.randn(1, 1, D))
            self.queries = nn.Embedding(5, D)
            dec = nn.TransformerDecoderLayer(D, HEADS, 2 * D, batch_first=True)
            self.decoder = nn.TransformerDecoder(dec, 2)
            self.boxes, self.classes = nn.Linear(D, 4), nn.Linear(D, 11)

        def forward(self, image):
            patches = self.stem(image).flatten(2).transpose(1, 2)  # [1, 64 patches, D]
            memory = torch.cat([self.cls, patches], dim=1)  # a ViT's class token first
            q = self.queries(torch.arange(5).unsqueeze(0))
            h = self.decoder(q, memory)
            return self.boxes(h).sigmoid(), self.classes(h).softmax(-1)

    det = Detector().eval()
    image = torch.randn(1, 3, 32, 32)
    record("detector", lambda: [det(image) for _ in range(3)])
"""

NAMES = ("prefill", "prefill_nocache", "decode", "both", "encoder", "detector")


@pytest.fixture(scope="session")
def llm_traces(tmp_path_factory) -> dict[str, Path]:
    """The recordings by name (module docstring)."""
    pytest.importorskip("torch")

    def record(out: Path) -> None:
        record_here(SCRIPT, out)

    out = recorded_once(tmp_path_factory, "llm_traces", record)
    return {name: out / f"{name}.json" for name in NAMES}
