"""Where the passes of a generation are, from what the trace itself records.

In this order (the first that finds anything wins):

1. engine-step annotations: vLLM/SGLang-style `execute_N_context_C(sq..sk..)
   _generation_G(sq..sk..)` (C prefill and G decode requests in one scheduled step,
   with their query and key token counts; older vLLM:
   `execute_context_C(T_..)_generation_G(T)`) or SGLang's `step[DECODE bs=N]` /
   `step[EXTEND bs=N]`. Each names its phase and tokens.
2. engine forward ranges: one model-runner call is one pass, however many
   launches it makes. vLLM's `execute_model` Python frame (with_stack) or its
   `gpu_model_runner: forward` annotation, SGLang's `model_runner.py: forward`, TGI's
   `generate_token`. With piecewise CUDA graphs a decode pass is dozens of
   `cudaGraphLaunch` calls (one per piece between attention layers) under one
   such range, so graph launches are grouped by the range that encloses them, never
   counted one pass each. A range records no phase: it comes from the input ids'
   shape when an `aten::embedding` ran eagerly inside it, else from the passes'
   order and device time (`analysis.llm`). Tokens come from those ids, else from
   vLLM's eager attention op between graph pieces (its query's first dimension).
3. model forwards (plain `model.generate()`): every forward of a language model
   starts by embedding its input ids (`aten::embedding`, whose second input is
   `[batch, tokens]`); with record_shapes the token count names the phase
   (1: decode, more: prefill). 1-D ids are a serving engine's flattened batch, where
   many tokens can be many decode requests: their phase stays unknown. Without
   shapes, the first forward inside each enclosing annotation or step is the prefill
   (generate always runs the prompt first), the later ones decode.
"""

from __future__ import annotations

import json
import re
from collections import Counter

import numpy as np

from ..trace import Cat, Trace
from .compile import REGION_RE
from .llm_passes import PassSpec

SERVING_RE = re.compile(
    r"^execute_(\d+)_context_(\d+)\(sq(\d+)sk(\d+)[^)]*\)_generation_(\d+)\(sq(\d+)sk(\d+)"
)
#: The older form: `execute_context_C(T_X)_generation_G(T)`, T query tokens of each kind
#: and X the sum over prefill requests of query x key tokens.
SERVING_OLD_RE = re.compile(r"^execute_context_(\d+)\((\d+)_(\d+)\)_generation_(\d+)\((\d+)\)")
SGLANG_RE = re.compile(r"^step\[(DECODE|EXTEND|PREFILL|MIXED)\s+bs=(\d+)")
#: One model-runner call per scheduled step: (pattern, engine). Python frames are
#: `path(line): function`; the vLLM annotation comes from its custom profiling scopes.
ENGINE_RANGES = (
    (re.compile(r"vllm/.*model_runner\.py\(\d+\): execute_model$"), "vLLM"),
    (re.compile(r"^gpu_model_runner: forward$"), "vLLM"),
    (re.compile(r"sglang/srt/model_executor/model_runner\.py\(\d+\): forward$"), "SGLang"),
    (re.compile(r"text_generation_server/models/\w+\.py\(\d+\): generate_token$"), "TGI"),
)
#: vLLM's attention op, run eagerly between piecewise graph pieces: its first input is the
#: query, [tokens, heads, head size], the step's flattened tokens (padded to the captured
#: graph's size when graphs replay).
ATTENTION_TOKEN_OPS = frozenset({"vllm::unified_attention", "vllm::unified_attention_with_output"})
#: Ops that choose the next token from a forward's logits (greedy, sampling, beam search).
TOKEN_CHOICE_OPS = frozenset({"aten::argmax", "aten::multinomial", "aten::topk"})
#: Ops whose presence between two embeddings says a new forward began (GPT-2 embeds
#: tokens and positions back to back: one forward, two embeddings).
MATMUL_OPS = frozenset({"aten::linear", "aten::mm", "aten::addmm", "aten::matmul", "aten::bmm"})


def annotated(trace: Trace) -> list[PassSpec]:
    """One pass per engine-step annotation (vLLM-style first, else SGLang's steps)."""
    ann = np.flatnonzero(trace.mask(Cat.USER_ANNOTATION) & (trace.lane_kind == 1))
    serving, sglang = [], []
    for i in ann[np.argsort(trace.ts[ann], kind="stable")].tolist():
        name = trace.name(i)
        start, end = float(trace.ts[i]), float(trace.end[i])
        if m := SERVING_RE.match(name):
            prefill_reqs, prefill_q, prefill_k = int(m[2]), int(m[3]), int(m[4])
            decode_reqs, decode_q = int(m[5]), int(m[6])
            phase = _phase(prefill_reqs, decode_reqs, chunked=prefill_k > prefill_q)
            tokens, batch = prefill_q + decode_q, prefill_reqs + decode_reqs
            serving.append(PassSpec(name, phase, i, start, end, tokens, batch, "annotation"))
        elif m := SERVING_OLD_RE.match(name):
            prefill_reqs, prefill_q, q_times_k, decode_reqs, decode_q = (int(g) for g in m.groups())
            # one request: its keys are q_times_k / q; more than its queries means cached ones
            chunked = prefill_reqs == 1 and q_times_k > prefill_q * prefill_q
            phase = _phase(prefill_reqs, decode_reqs, chunked=chunked)
            tokens, batch = prefill_q + decode_q, prefill_reqs + decode_reqs
            serving.append(PassSpec(name, phase, i, start, end, tokens, batch, "annotation"))
        elif m := SGLANG_RE.match(name):
            phase = {"DECODE": "decode", "MIXED": "mixed"}.get(m[1], "prefill")
            batch = int(m[2])
            tokens = batch if phase == "decode" else None
            from_ = "annotation" if tokens else None
            sglang.append(PassSpec(name, phase, i, start, end, tokens, batch, from_))
    return serving or sglang


def _phase(prefill_reqs: int, decode_reqs: int, chunked: bool) -> str:
    """A step's phase from its request counts; a prefill whose queries attend to more
    keys than they are continues a prompt already partly cached (a later chunk of a
    chunked prefill, or a prefix-cache hit)."""
    if prefill_reqs and decode_reqs:
        return "mixed"
    if prefill_reqs:
        return "chunked prefill" if chunked else "prefill"
    return "decode"


def engine_ranges(trace: Trace) -> tuple[list[PassSpec], str | None]:
    """One pass per outermost model-runner range, and the engine that ran them; phase
    None where the range's input ids carry no [batch, tokens] shape."""
    host = trace.mask(Cat.PYTHON, Cat.USER_ANNOTATION) & (trace.lane_kind == 1)
    found: dict[int, str] = {}
    for name_id, name in enumerate(trace.names):
        for pattern, engine in ENGINE_RANGES:
            if pattern.search(name):
                found[name_id] = engine
                break
    if not found:
        return [], None
    idx = np.flatnonzero(host & np.isin(trace.name_id, list(found)) & ~trace.is_instant)
    idx = idx[np.argsort(trace.ts[idx], kind="stable")]
    kept: list[int] = []
    for i in idx.tolist():
        if kept and trace.ts[i] < trace.end[kept[-1]]:
            continue  # nested inside (or overlapping) the previous range: the same step
        kept.append(i)
    engine = found[int(trace.name_id[kept[0]])] if kept else None
    embeddings = ops_named(trace, frozenset({"aten::embedding"}))
    attention = ops_named(trace, ATTENTION_TOKEN_OPS)
    out = []
    for k, i in enumerate(kept):
        start, end = float(trace.ts[i]), float(trace.end[i])
        lo, hi = np.searchsorted(trace.ts[embeddings], [start, end])
        shape = _ids_shape(trace.input_dims.get(int(embeddings[lo]))) if hi > lo else None
        phase = tokens = batch = from_ = None
        if shape is not None:
            batch, seq = shape
            tokens, from_ = (batch or 1) * seq, "input ids' shape"
            if batch is not None:  # [batch, tokens]: one new token per sequence is a decode
                phase = "decode" if seq == 1 else "prefill"
        else:
            lo, hi = np.searchsorted(trace.ts[attention], [start, end])
            tokens = _query_tokens(trace.input_dims.get(int(attention[lo]))) if hi > lo else None
            from_ = "the attention op's query [tokens, heads, head size]" if tokens else None
        label = f"{engine} step {k + 1}"
        out.append(PassSpec(label, phase, i, start, end, tokens, batch, from_))
    return out, engine


def ops_named(trace: Trace, names: frozenset[str]) -> np.ndarray:
    """Host ops with one of `names`, by start time."""
    ids = trace.name_ids_matching(lambda n: n in names)
    ops = np.flatnonzero(
        trace.mask(Cat.CPU_OP) & (trace.lane_kind == 1) & np.isin(trace.name_id, ids)
    )
    return ops[np.argsort(trace.ts[ops], kind="stable")]


def _query_tokens(dims_json: str | None) -> int | None:
    """Tokens of an attention op's query `[tokens, heads, head size]`."""
    try:
        query = json.loads(dims_json or "null")[0]
    except (ValueError, IndexError, TypeError):
        return None
    if isinstance(query, list) and len(query) == 3 and all(isinstance(d, int) for d in query):
        return query[0]
    return None


def forwards(trace: Trace) -> tuple[list[PassSpec], int, bool]:
    """Model forwards from `aten::embedding` and from compiled forwards (see
    `compiled_forwards`); how many carry their input ids' shape, and whether compiled
    regions were used. A pass with a shape takes its phase from it, one without from
    its order in its step or annotation."""
    starts = _embedding_forwards(trace)
    regions = compiled_forwards(trace)
    if len(regions):
        inside = np.zeros(len(starts), dtype=bool)
        for r in regions.tolist():
            ts = trace.ts[starts] if starts else np.zeros(0)
            inside |= (ts >= trace.ts[r]) & (ts < trace.end[r])
        kept = [i for i, drop in zip(starts, inside.tolist(), strict=True) if not drop]
        starts = sorted(kept + regions.tolist(), key=lambda i: (trace.ts[i], i))
    if not starts:
        return [], 0, False
    region_set = set(regions.tolist())
    shapes = [None if i in region_set else _ids_shape(trace.input_dims.get(i)) for i in starts]
    groups = [_group(trace, i) for i in starts]
    out = []
    for k, i in enumerate(starts):
        group, group_end = groups[k]
        same_next = k + 1 < len(starts) and groups[k + 1][0] == group
        end = float(trace.ts[starts[k + 1]]) if same_next else group_end
        first_in_group = k == 0 or groups[k - 1][0] != group
        batch = tokens = None
        if shapes[k] is not None:
            batch, seq = shapes[k]
            phase, tokens = ("decode" if seq == 1 else "prefill"), (batch or 1) * seq
            if batch is None and seq > 1:
                phase = "unknown"  # one flat token list (a serving engine's batch): any mix
        else:
            phase = "prefill" if first_in_group else "decode"
        label = f"forward {k + 1}" + (f" ({trace.name(i)})" if i in region_set else "")
        from_ = "input ids' shape" if tokens is not None else None
        out.append(PassSpec(label, phase, i, float(trace.ts[i]), end, tokens, batch, from_))
    return out, sum(s is not None for s in shapes), bool(region_set)


def _embedding_forwards(trace: Trace) -> list[int]:
    """The first `aten::embedding` of each eager forward: a second one with no matrix
    product since the first is the same forward (GPT-2 embeds tokens, then positions)."""
    emb = ops_named(trace, frozenset({"aten::embedding"}))
    if not len(emb):
        return []
    host = trace.mask(Cat.CPU_OP) & (trace.lane_kind == 1)
    mm_ids = trace.name_ids_matching(lambda n: n in MATMUL_OPS)
    mm_ts = np.sort(trace.ts[np.flatnonzero(host & np.isin(trace.name_id, mm_ids))])
    if not len(mm_ts):
        return []  # embeddings without matrix products: not a transformer
    starts: list[int] = []
    for i in emb.tolist():
        if starts:
            between = np.searchsorted(mm_ts, [trace.ts[starts[-1]], trace.ts[i]])
            if between[1] == between[0]:
                continue  # a second embedding of the same forward (positions)
        starts.append(i)
    return starts


def compiled_forwards(trace: Trace) -> np.ndarray:
    """Forwards of a torch.compile'd model: its calls of one compiled frame.

    Compiled code hides the forward's ops (Inductor fuses the embedding into its own
    kernels; a CUDA graph replays the whole forward from one launch), but Dynamo marks
    every call of a compiled frame with a `Torch-Compiled Region: K/M` range (frame K,
    its M-th compilation). A forward with graph breaks calls several frames in turn,
    each once, so the frame called most often (the first compiled, on a tie) starts
    each forward, and a graph replayed inside it belongs to that forward. Generation
    is told from any other loop over a compiled model (diffusion steps, training) by
    what happens between two calls: the next token is chosen from the logits
    (`aten::argmax` greedy, `aten::multinomial` sampling, `aten::topk` beam search) on
    the host, outside the compiled code; every pair of successive calls in a step or
    annotation must have one between them, and at least one pair must exist."""
    region_ids = {
        i: int(m[1]) for i, n in enumerate(trace.names) if (m := REGION_RE.match(n)) and m[1]
    }
    if not region_ids:
        return np.zeros(0, dtype=np.int64)
    host = (trace.lane_kind == 1) & ~trace.is_instant
    idx = np.flatnonzero(host & np.isin(trace.name_id, list(region_ids)))
    idx = idx[np.argsort(trace.ts[idx], kind="stable")]
    top: list[int] = []
    for i in idx.tolist():
        if not top or trace.ts[i] >= trace.end[top[-1]]:
            top.append(i)  # regions nested in another are part of its call
    frames = Counter(region_ids[int(trace.name_id[i])] for i in top)
    frame = min(frames, key=lambda f: (-frames[f], f))
    calls = np.array([i for i in top if region_ids[int(trace.name_id[i])] == frame])
    choices = ops_named(trace, TOKEN_CHOICE_OPS)
    choice_ts = trace.ts[choices]
    starts, ends = trace.ts[np.array(top)], trace.end[np.array(top)]
    outside = choice_ts[np.searchsorted(ends, choice_ts, side="right") >= np.searchsorted(
        starts, choice_ts, side="right")]  # fmt: skip
    pairs = 0
    for a, b in zip(calls[:-1].tolist(), calls[1:].tolist(), strict=True):
        if _group(trace, a)[0] != _group(trace, b)[0]:
            continue
        pairs += 1
        lo, hi = np.searchsorted(outside, [trace.end[a], trace.ts[b]])
        if hi == lo:
            return np.zeros(0, dtype=np.int64)  # two calls with no token chosen between
    return calls if pairs else np.zeros(0, dtype=np.int64)


def _ids_shape(dims_json: str | None) -> tuple[int | None, int] | None:
    """(batch, tokens) of the input ids of an `aten::embedding` call; batch is None for
    1-D ids, a serving engine's requests flattened into one token list."""
    if not dims_json:
        return None
    try:
        ids = json.loads(dims_json)[1]
    except (ValueError, IndexError, TypeError):
        return None
    if not isinstance(ids, list) or not ids or not all(isinstance(d, int) for d in ids):
        return None
    return (int(np.prod(ids[:-1])) if len(ids) > 1 else None), ids[-1]


def _group(trace: Trace, i: int) -> tuple[int, float]:
    """The innermost enclosing annotation or step of event `i` (its index, its end);
    (-1, end of the trace's host activity) when nothing encloses it."""
    parent = trace.parent
    p = int(parent[i])
    while p >= 0:
        if trace.cat[p] == int(Cat.USER_ANNOTATION):
            return p, float(trace.end[p])
        p = int(parent[p])
    for s in trace.steps:
        if s.start <= trace.ts[i] < s.end:
            return s.index, s.end
    return -1, trace.end_time


def graph_replays(trace: Trace) -> list[PassSpec]:
    """Decode passes replayed as whole CUDA/HIP graphs, with nothing else to find them by:
    each `cudaGraphLaunch`/`hipGraphLaunch` followed on the host, before the next, by the
    next token's choice (`aten::argmax` over `[batch, vocab]` logits, multinomial, topk).
    A captured graph has static shapes, and engines and static-cache generation capture
    the one-token decode step (a prompt's length varies: it runs eagerly), so each such
    replay is a decode of `batch` tokens. [] unless every launch is followed by a choice."""
    host = trace.mask(Cat.RUNTIME, Cat.DRIVER) & (trace.lane_kind == 1)
    ids = trace.name_ids_matching(lambda n: n in ("cudaGraphLaunch", "hipGraphLaunch"))
    launches = np.flatnonzero(host & np.isin(trace.name_id, ids))
    launches = launches[np.argsort(trace.ts[launches], kind="stable")]
    choices = ops_named(trace, TOKEN_CHOICE_OPS)
    if not len(launches) or not len(choices):
        return []
    bounds = [*trace.ts[launches[1:]].tolist(), np.inf]
    out = []
    for k, (i, nxt) in enumerate(zip(launches.tolist(), bounds, strict=True)):
        lo, hi = np.searchsorted(trace.ts[choices], [trace.ts[i], nxt])
        if hi == lo:
            return []  # a replay with no token chosen after it: not a decode step
        choice = int(choices[lo])
        tokens = _choice_rows(trace.input_dims.get(choice))
        start = float(trace.ts[_outermost(trace, i)])
        out.append(
            PassSpec(
                f"graph replay {k + 1}", "decode", i, start, float(trace.end[choice]),
                tokens, tokens, "the token choice's logits [batch, vocab]" if tokens else None,
            )
        )  # fmt: skip
    return out


def _choice_rows(dims_json: str | None) -> int | None:
    """Sequences of a token choice's logits `[batch, vocab]` (or `[batch, 1, vocab]`)."""
    try:
        logits = json.loads(dims_json or "null")[0]
    except (ValueError, IndexError, TypeError):
        return None
    if isinstance(logits, list) and len(logits) >= 2 and all(isinstance(d, int) for d in logits):
        return int(np.prod(logits[:-1]))
    return None


def _outermost(trace: Trace, i: int) -> int:
    """The outermost host event enclosing event `i` (itself when nothing does), below any
    annotation or ProfilerStep."""
    while (p := int(trace.parent[i])) >= 0 and trace.cat[p] != int(Cat.USER_ANNOTATION):
        i = p
    return i
