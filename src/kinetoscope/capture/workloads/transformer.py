"""`transformer` (05_llm): a small decoder-only LLM (Llama architecture) from `transformers`.

Built from a config with random weights (nothing is downloaded), it runs one
forward pass over the prompt (`record_function("forward")`, the prefill) and a
greedy `generate()` of a few tokens (`record_function("generate")`, the decode
loop). What it teaches: a real model's trace; prefill is a few large GEMMs,
while decoding runs the whole layer stack once per token with tiny matrices, so
it is dominated by per-op host overhead and launches, not by FLOPs.
`--mode generate` runs `generate()` alone, so each profiler step is one prompt
and its decode loop: the first forward pass of the step is the prefill, every
later one a decode step (what `analysis.llm` reads as phases).
Needs the `llm` extra (`pip install 'kinetoscope[llm]'`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ...errors import UsageError
from ..deps import require_transformers
from . import Context

NAME = "transformer"
FOLDER = "05_llm"
VOCAB = 1024
HEAD_DIM = 64
MODES = ("forward_generate", "generate")


@dataclass(frozen=True)
class Params:
    layers: int = 2
    hidden: int = 256
    seq: int = 64
    new_tokens: int = 8
    mode: str = "forward_generate"

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise UsageError(
                f"transformer --mode must be one of {', '.join(MODES)}, not {self.mode!r}"
            )


def tag(p: Params) -> str:
    suffix = "_generate" if p.mode == "generate" else ""
    return f"l{p.layers}_h{p.hidden}_s{p.seq}_n{p.new_tokens}{suffix}"


def build(p: Params, ctx: Context):
    transformers = require_transformers()
    heads = max(1, p.hidden // HEAD_DIM)
    config = transformers.LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=p.hidden,
        intermediate_size=p.hidden * 4,
        num_hidden_layers=p.layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=p.seq + p.new_tokens,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
    )
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config).to(device=ctx.device, dtype=ctx.dtype).eval()
    model.forward = ctx.compile(model.forward)
    prompt = torch.randint(3, VOCAB, (1, p.seq), device=ctx.device)

    def generate() -> None:
        with torch.profiler.record_function("generate"):
            model.generate(
                prompt,
                attention_mask=torch.ones_like(prompt),
                max_new_tokens=p.new_tokens,
                min_new_tokens=p.new_tokens,
                do_sample=False,
                pad_token_id=0,
            )

    def step() -> None:
        with torch.no_grad():
            if p.mode == "generate":
                generate()
                return
            with torch.profiler.record_function("forward"):
                model(prompt)
            generate()

    return step
