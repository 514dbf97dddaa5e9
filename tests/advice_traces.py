"""CPU recordings for the "advice fits the run" tests, recorded once per test run.

Each is a few steps of a tiny model in the test process (`record_here`), one thread:

- "infer": an MLP's forward under torch.inference_mode(), with profile_memory: no
  backward, so no saved activations;
- "train": the same MLP trained (backward + SGD), with profile_memory;
- "sdpa": F.scaled_dot_product_attention on CPU tensors, is_causal: the CPU flash kernel;
- "sdpa_dropout": the same with dropout_p=0.5: the CPU flash kernel has no dropout, so
  SDPA falls back to the math backend;
- "cat_cache": a hand-written one-layer decoder whose KV cache grows by torch.cat along
  the sequence (prefill of 5 tokens, 3 one-token decodes), with shapes and stacks;
- "gpt2_stack": a random 1-layer GPT-2 generate() (transformers' DynamicCache), with
  shapes and stacks (with_stack=True records transformers/cache_utils.py frames);
  only where transformers is installed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .capture_helpers import record_here
from .conftest import recorded_once

NAMES = ("infer", "train", "sdpa", "sdpa_dropout", "cat_cache", "gpt2_stack")

SCRIPT = r"""
import sys

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile, schedule

out = sys.argv[1]
torch.manual_seed(0)
torch.set_num_threads(1)
CPU = [ProfilerActivity.CPU]


def steps(name, body, n=3, **kw):
    with profile(
        activities=CPU, schedule=schedule(wait=0, warmup=1, active=n, repeat=1),
        on_trace_ready=lambda p: p.export_chrome_trace(f"{out}/{name}.json"), **kw,
    ) as prof:
        for _ in range(1 + n):
            body()
            prof.step()


mlp = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 8))
x = torch.randn(32, 64)
sgd = torch.optim.SGD(mlp.parameters(), lr=0.01)


def infer():
    with torch.inference_mode():
        mlp(x).argmax(-1)


def train():
    sgd.zero_grad()
    mlp(x).square().mean().backward()
    sgd.step()


steps("infer", infer, profile_memory=True)
steps("train", train, profile_memory=True)

q = torch.randn(2, 4, 64, 32)


def sdpa():
    F.scaled_dot_product_attention(q, q, q, is_causal=True)


steps("sdpa", sdpa, record_shapes=True)


def sdpa_dropout():
    F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)


steps("sdpa_dropout", sdpa_dropout, record_shapes=True)


class Decoder(torch.nn.Module):
    # one attention layer with a KV cache grown by torch.cat along the sequence

    def __init__(self, vocab=100, dim=32, heads=2):
        super().__init__()
        self.heads = heads
        self.emb = torch.nn.Embedding(vocab, dim)
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.out = torch.nn.Linear(dim, vocab)

    def forward(self, ids, cache):
        b, t = ids.shape
        q, k, v = self.qkv(self.emb(ids)).view(b, t, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        if cache is not None:
            k, v = torch.cat([cache[0], k], dim=-2), torch.cat([cache[1], v], dim=-2)
        h = F.scaled_dot_product_attention(q, k, v, is_causal=cache is None)
        return self.out(h.transpose(1, 2).reshape(b, t, -1)), (k, v)


decoder = Decoder().eval()
prompt = torch.randint(1, 100, (2, 5))


def generate():
    with torch.inference_mode():
        logits, cache = decoder(prompt, None)
        for _ in range(3):
            token = logits[:, -1:].argmax(-1)
            logits, cache = decoder(token, cache)


steps("cat_cache", generate, record_shapes=True, with_stack=True)

try:
    import transformers
except ImportError:
    sys.exit(0)
config = transformers.GPT2Config(
    n_layer=1, n_embd=32, n_head=2, vocab_size=100, n_positions=64, bos_token_id=0,
    eos_token_id=None,
)
gpt2 = transformers.GPT2LMHeadModel(config).eval()


def gpt2_generate():
    with torch.no_grad():
        gpt2.generate(
            prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=4,
            min_new_tokens=4, do_sample=False, pad_token_id=0,
        )


steps("gpt2_stack", gpt2_generate, n=1, record_shapes=True, with_stack=True)
"""


@pytest.fixture(scope="session")
def advice_traces(tmp_path_factory) -> dict[str, Path]:
    """Recorded trace name -> path (gpt2_stack may be missing: no transformers)."""
    pytest.importorskip("torch")

    def record(out: Path) -> None:
        record_here(SCRIPT, out)

    out = recorded_once(tmp_path_factory, "advice_traces", record)
    return {name: out / f"{name}.json" for name in NAMES}
