"""What says a model's forwards are a generation: the evidence a language model leaves.

A forward that embeds token ids is not yet a language model generating: BERT embeds
token ids too, and a detector embeds its learned object queries with `nn.Embedding`.
A generation is recognised by what only it does, strongest first:

1. a forward on one new token per sequence (input ids `[batch, 1]`): a decode;
2. a KV cache that grows (`llm_passes`: appends linked from pass to pass, in-place
   cache writes, paged-cache kernels) or transformers' cache module in the stacks;
3. without shapes, a next token chosen on the host (`aten::argmax`, `multinomial`,
   `topk`) between a forward and the next: `generate()`'s loop;
4. a single forward (a prefill alone) on token-shaped ids `[batch, tokens]` whose
   attention is causal (SDPA with `is_causal=True`, or a triangular mask built with
   `aten::triu`/`aten::tril`) and after which a token is chosen over vocabulary-sized
   logits (the chooser's last dimension is the embedding table's row count). Both:
   BERT's fill-mask picks tokens over its vocabulary without a causal mask, and a
   causal model scored on a whole sequence (a seq2seq forward with teacher forcing,
   a perplexity evaluation) chooses no token.

Items 1-3 generate whatever else the model holds (a vision-language model's prompt
runs a vision encoder, then decodes). Item 4 alone is refused when the trace runs a
convolution: pixels went in (a detector's conv stem, OWL-ViT's patch embedding beside
its causal CLIP text tower), and nothing generated. A trace that runs autograd's
backward is training, never a generation.
"""

from __future__ import annotations

import json

import numpy as np

from ..trace import Trace
from .llm_find import TOKEN_CHOICE_OPS, ops_named
from .llm_passes import Pass

#: transformers' KV-cache module, as it appears in with_stack Python frames.
CACHE_FRAME = "transformers/cache_utils.py"
#: autograd's per-node backward ops: `autograd::engine::evaluate_function: MmBackward0`
BACKWARD_PREFIX = "autograd::engine::evaluate_function"
#: Ops that build a causal (triangular) attention mask.
MASK_OPS = frozenset({"aten::triu", "aten::tril", "aten::triu_", "aten::tril_"})
SDPA = "aten::scaled_dot_product_attention"
#: is_causal's position among SDPA's inputs (query, key, value, mask, dropout, is_causal)
IS_CAUSAL_ARG = 5
CONV_OPS = frozenset(
    {"aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::convolution", "aten::_convolution"}
)


def generation_evidence(trace: Trace, passes: list[Pass]) -> str | None:
    """What says these forwards generate, in words; None when nothing does."""
    if any(n.startswith(BACKWARD_PREFIX) for n in trace.names):
        return None
    if any(p.phase == "decode" and p.tokens is not None for p in passes):
        return "forwards on one new token per sequence (input ids [batch, 1])"
    if any(p.kv_appends or p.kv_writes for p in passes):
        return "a KV cache written or grown pass after pass"
    if any(CACHE_FRAME in name for name in trace.names):
        return "transformers' KV-cache module in the recorded Python stacks"
    decodes = [k for k, p in enumerate(passes) if p.phase == "decode"]
    if decodes and all(_chosen_between(trace, passes, k) for k in decodes):
        return "a next token chosen on the host (argmax, multinomial, topk) between forwards"
    shaped = [p for p in passes if p.batch is not None and p.tokens]
    if not shaped or len(ops_named(trace, CONV_OPS)):
        return None  # no token-shaped ids, or pixels went in: not a language model
    if _causal(trace, shaped) and _chooses_from_vocab(trace, shaped):
        return (
            "causal attention on token ids [batch, tokens], then a token chosen from "
            "vocabulary-sized logits"
        )
    return None


def _within(trace: Trace, ops: np.ndarray, passes: list[Pass]) -> list[int]:
    ts = trace.ts[ops]
    out: list[int] = []
    for p in passes:
        lo, hi = np.searchsorted(ts, [p.start, p.end])
        out += ops[lo:hi].tolist()
    return out


def _chosen_between(trace: Trace, passes: list[Pass], k: int) -> bool:
    """Whether a token was chosen after pass k - 1 began and before pass k did."""
    if k == 0:
        return False
    ts = trace.ts[ops_named(trace, TOKEN_CHOICE_OPS)]
    lo, hi = np.searchsorted(ts, [passes[k - 1].start, passes[k].start])
    return bool(hi > lo)


def _causal(trace: Trace, passes: list[Pass]) -> bool:
    if _within(trace, ops_named(trace, MASK_OPS), passes):
        return True
    for i in _within(trace, ops_named(trace, frozenset({SDPA})), passes):
        args = _json(trace.concrete_inputs.get(i))
        causal = isinstance(args, list) and len(args) > IS_CAUSAL_ARG
        if causal and str(args[IS_CAUSAL_ARG]).lower() == "true":
            return True
    return False


def _chooses_from_vocab(trace: Trace, passes: list[Pass]) -> bool:
    """A token choice whose input's last dimension is a row count of an embedding table
    in the passes (the language-model head projects to the vocabulary it embeds)."""
    vocab = set()
    for i in _within(trace, ops_named(trace, frozenset({"aten::embedding"})), passes):
        dims = _json(trace.input_dims.get(i))
        if isinstance(dims, list) and dims and isinstance(dims[0], list) and len(dims[0]) == 2:
            vocab.add(dims[0][0])
    for i in _within(trace, ops_named(trace, TOKEN_CHOICE_OPS), passes):
        dims = _json(trace.input_dims.get(i))
        logits = dims[0] if isinstance(dims, list) and dims else None
        if isinstance(logits, list) and logits and logits[-1] in vocab:
            return True
    return False


def _json(text: str | None):
    try:
        return json.loads(text or "null")
    except ValueError:
        return None
