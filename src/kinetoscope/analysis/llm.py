"""The LLM view: prefill and decode passes of a generation, their latency and cost.

An LLM generates in two phases with different costs. The *prefill* runs the
whole prompt through the model once (large matrices: S tokens per sequence)
and yields the first token; every *decode* pass then feeds one new token per
sequence (S = 1), reusing the keys and values cached for the earlier ones.
Decode passes run the full layer stack on tiny matrices, so on a GPU they are
usually bound by the host launching kernels, not by the device.

Passes are found from what the trace itself records, in this order:

1. serving-engine annotations: vLLM/SGLang-style `execute_N_context_C(sq..sk..)
   _generation_G(sq..sk..)` (C prefill and G decode requests in one scheduled
   step; older vLLM: `execute_context_C(T_..)_generation_G(T)`) or SGLang's
   `step[DECODE bs=N]` / `step[EXTEND bs=N]`;
2. model forwards (plain `model.generate()`): every forward of a language model
   starts by embedding its input ids (`aten::embedding`, whose second input is
   `[batch, tokens]`); with record_shapes the token count names the phase
   (1: decode, more: prefill). 1-D ids are a serving engine's flattened batch,
   where many tokens can be many decode requests: their phase stays unknown.
   Without shapes, the first forward inside each enclosing annotation or step
   is the prefill (generate always runs the prompt first), the later ones decode.

Each pass's host window runs from its start to the next pass of the same group
(the last one to the end of its annotation or step); its device work is what
that window launched (`analysis.steps.device_anchor`), and the pass ends when
both are done (a token exists once the device has computed it). A decode pass's
duration is therefore the time between two tokens. KV-cache traffic per pass: concatenations
that grow a cache along the sequence dimension (transformers' DynamicCache:
`aten::cat([past, new], dim=-2)`, a copy of the whole cache per layer and token),
in-place cache writes (`index_copy_`, paged-cache kernels such as vLLM's
`reshape_and_cache` or SGLang's `store_kvcache`) and device-to-device copies.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..trace import Cat, Trace
from .intervals import merge, union_length
from .stats import Spread
from .steps import device_anchor, host_activity_mask
from .syncs import BLOCKING_CALLS

SERVING_RE = re.compile(
    r"^execute_(\d+)_context_(\d+)\(sq(\d+)sk(\d+)[^)]*\)_generation_(\d+)\(sq(\d+)sk(\d+)"
)
#: The older form: `execute_context_C(T_SQSK)_generation_G(T)`, T tokens of each kind.
SERVING_OLD_RE = re.compile(r"^execute_context_(\d+)\((\d+)_\d+\)_generation_(\d+)\((\d+)\)")
SGLANG_RE = re.compile(r"^step\[(DECODE|EXTEND|PREFILL|MIXED)\s+bs=(\d+)")
#: Ops whose presence between two embeddings says a new forward began (GPT-2 embeds
#: tokens and positions back to back: one forward, two embeddings).
MATMUL_OPS = frozenset({"aten::linear", "aten::mm", "aten::addmm", "aten::matmul", "aten::bmm"})
#: transformers' KV-cache module, as it appears in with_stack Python frames.
CACHE_FRAME = "transformers/cache_utils.py"
GRAPH_LAUNCHES = frozenset({"cudaGraphLaunch", "hipGraphLaunch", "cuGraphLaunch"})
#: Device kernels that write new keys/values into a preallocated (paged) cache.
KV_WRITE_KERNEL_RE = re.compile(r"reshape_and_cache|store_kvcache|kv_cache", re.IGNORECASE)
DTYPE_BYTES = {
    "float": 4,
    "double": 8,
    "c10::Half": 2,
    "c10::BFloat16": 2,
    "c10::Float8_e4m3fn": 1,
    "c10::Float8_e4m3fnuz": 1,
}


@dataclass(frozen=True)
class Pass:
    """One forward pass (or one scheduled engine step) of the model."""

    label: str
    #: "prefill", "decode", "mixed" (prefill and decode requests in one step) or
    #: "unknown" (a flat list of tokens from several requests, no annotation to split it)
    phase: str
    index: int  # event index of what marks it (the embedding op or the annotation)
    start: float  # absolute us
    end: float
    #: query tokens in the pass (batch x new tokens), None without shapes/annotations
    tokens: int | None
    batch: int | None
    device_busy_us: float
    kernels: int
    graph_launches: int
    blocked_us: float  # host time inside blocking runtime calls (syncs)
    kv_appends: int  # cache-growing concatenations
    kv_append_bytes: int  # bytes those concatenations wrote (0 when the dtype is unknown)
    kv_writes: int  # in-place cache writes (index_copy_, paged-cache kernels)
    dtod_copies: int
    dtod_bytes: int

    @property
    def dur(self) -> float:
        return self.end - self.start


@dataclass(frozen=True)
class LlmView:
    source: str  # "annotations", "shapes" or "order"
    passes: list[Pass]

    def phase(self, name: str) -> list[Pass]:
        return [p for p in self.passes if p.phase == name]

    @property
    def ttft_us(self) -> float | None:
        """Time to first token: the first prefill pass (prompt in, first token out)."""
        prefill = self.phase("prefill")
        return prefill[0].dur if prefill else None

    @property
    def decode_latency(self) -> Spread | None:
        """Per-token decode latency: the spread of decode pass durations."""
        decode = self.phase("decode")
        return Spread.of([p.dur for p in decode]) if decode else None


def llm_view(trace: Trace) -> LlmView | None:
    """The passes of the generation(s) in the trace, None when it holds no LLM passes."""
    return _view_cached(trace)


@lru_cache(maxsize=8)
def _view_cached(trace: Trace) -> LlmView | None:
    found = _annotated(trace)
    source = "annotations"
    if not found:
        found, shaped = _forwards(trace)
        source = "shapes" if shaped else "order"
    if not found:
        return None
    costs = _Costs(trace)
    passes = [costs.measure(*spec) for spec in found]
    if source != "annotations" and not _generates(trace, passes):
        return None  # a plain forward (an encoder such as BERT): no generation to read
    return LlmView(source, passes)


def _generates(trace: Trace, passes: list[Pass]) -> bool:
    """Whether forwards belong to a generation: only incremental decoding runs a forward
    on one new token per sequence (without shapes: a second forward in the same step or
    annotation), and only a generation keeps a KV cache (cache ops in the passes, or
    transformers' cache module in the recorded Python stacks)."""
    if any(p.phase == "decode" for p in passes):
        return True
    if any(p.kv_appends or p.kv_writes for p in passes):
        return True
    return any(CACHE_FRAME in name for name in trace.names)


# ---- finding the passes ---------------------------------------------------


def _annotated(trace: Trace) -> list[tuple]:
    """(label, phase, index, start, end, tokens, batch) per engine-step annotation."""
    ann = np.flatnonzero(trace.mask(Cat.USER_ANNOTATION) & (trace.lane_kind == 1))
    serving, sglang = [], []
    for i in ann[np.argsort(trace.ts[ann], kind="stable")].tolist():
        name = trace.name(i)
        start, end = float(trace.ts[i]), float(trace.end[i])
        if m := SERVING_RE.match(name):
            prefill_reqs, prefill_tok, decode_reqs, decode_tok = (
                int(m[2]),
                int(m[3]),
                int(m[5]),
                int(m[6]),
            )
            phase = _phase(prefill_reqs > 0, decode_reqs > 0)
            tokens = prefill_tok + decode_tok
            serving.append((name, phase, i, start, end, tokens, prefill_reqs + decode_reqs))
        elif m := SERVING_OLD_RE.match(name):
            prefill_reqs, prefill_tok, decode_reqs, decode_tok = (int(g) for g in m.groups())
            phase = _phase(prefill_reqs > 0, decode_reqs > 0)
            tokens = prefill_tok + decode_tok
            serving.append((name, phase, i, start, end, tokens, prefill_reqs + decode_reqs))
        elif m := SGLANG_RE.match(name):
            phase = {"DECODE": "decode", "MIXED": "mixed"}.get(m[1], "prefill")
            batch = int(m[2])
            sglang.append((name, phase, i, start, end, batch if phase == "decode" else None, batch))
    return serving or sglang


def _phase(prefill: bool, decode: bool) -> str:
    if prefill and decode:
        return "mixed"
    return "prefill" if prefill else "decode"


def _forwards(trace: Trace) -> tuple[list[tuple], bool]:
    """Model forwards from `aten::embedding`; whether token counts came from shapes."""
    host = trace.mask(Cat.CPU_OP) & (trace.lane_kind == 1)
    emb_id = trace.name_index.get("aten::embedding")
    if emb_id is None:
        return [], False
    emb = np.flatnonzero(host & (trace.name_id == emb_id))
    emb = emb[np.argsort(trace.ts[emb], kind="stable")]
    mm_ids = trace.name_ids_matching(lambda n: n in MATMUL_OPS)
    mm_ts = np.sort(trace.ts[np.flatnonzero(host & np.isin(trace.name_id, mm_ids))])
    if not len(mm_ts):
        return [], False  # embeddings without matrix products: not a transformer
    starts: list[int] = []
    for i in emb.tolist():
        if starts:
            between = np.searchsorted(mm_ts, [trace.ts[starts[-1]], trace.ts[i]])
            if between[1] == between[0]:
                continue  # a second embedding of the same forward (positions)
        starts.append(i)
    shapes = [_ids_shape(trace.input_dims.get(i)) for i in starts]
    shaped = all(s is not None for s in shapes)
    groups = [_group(trace, i) for i in starts]
    out = []
    for k, i in enumerate(starts):
        group, group_end = groups[k]
        same_next = k + 1 < len(starts) and groups[k + 1][0] == group
        end = float(trace.ts[starts[k + 1]]) if same_next else group_end
        first_in_group = k == 0 or groups[k - 1][0] != group
        if shaped:
            batch, seq = shapes[k]
            phase, tokens = ("decode" if seq == 1 else "prefill"), (batch or 1) * seq
            if batch is None and seq > 1:
                phase = "unknown"  # one flat token list (a serving engine's batch): any mix
        else:
            batch = tokens = None
            phase = "prefill" if first_in_group else "decode"
        start = float(trace.ts[i])
        out.append((f"forward {k + 1}", phase, i, start, end, tokens, batch))
    return out, shaped


def _ids_shape(dims_json: str | None) -> tuple[int, int] | None:
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


# ---- what each pass cost --------------------------------------------------


class _Costs:
    """Per-window sums over the trace's events, sorted once."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        work = np.flatnonzero(trace.device_work)
        anchor = device_anchor(trace)[work]
        order = np.argsort(anchor, kind="stable")
        self.work, self.anchor = work[order], anchor[order]
        host = trace.mask(Cat.RUNTIME, Cat.DRIVER) & (trace.lane_kind == 1)
        graph_ids = trace.name_ids_matching(lambda n: n in GRAPH_LAUNCHES)
        self.graph_ts = np.sort(trace.ts[np.flatnonzero(host & np.isin(trace.name_id, graph_ids))])
        block_ids = trace.name_ids_matching(lambda n: n in BLOCKING_CALLS)
        block = np.flatnonzero(host & np.isin(trace.name_id, block_ids))
        self.block_s, self.block_e = merge(trace.ts[block], trace.end[block])
        ops = np.flatnonzero(host_activity_mask(trace) & trace.mask(Cat.CPU_OP))
        wanted = trace.name_ids_matching(lambda n: n in ("aten::cat", "aten::index_copy_"))
        self.cache_ops = ops[np.isin(trace.name_id[ops], wanted)]
        self.cache_ops = self.cache_ops[np.argsort(trace.ts[self.cache_ops], kind="stable")]
        self.kv_kernel = np.array(
            [bool(KV_WRITE_KERNEL_RE.search(n)) for n in trace.names] or [False]
        )

    def measure(self, label, phase, index, start, end, tokens, batch) -> Pass:
        t = self.trace
        lo, hi = np.searchsorted(self.anchor, [start, end])
        mine = self.work[lo:hi]
        kernels = mine[t.cat[mine] == int(Cat.KERNEL)]
        memcpy = mine[t.cat[mine] == int(Cat.MEMCPY)]
        dtod = [i for i in memcpy.tolist() if "DtoD" in t.name(i)]
        s, e = np.searchsorted(t.ts[self.cache_ops], [start, end])
        elem_bytes = DTYPE_BYTES.get(_first_type(t, index), 0)
        appends = writes = append_bytes = 0
        for i in self.cache_ops[s:e].tolist():
            kind, elements = _cache_op(t, i)
            if kind == "append":
                appends += 1
                append_bytes += elements * elem_bytes
            elif kind == "write":
                writes += 1
        writes += int(self.kv_kernel[t.name_id[kernels]].sum()) if len(kernels) else 0
        bs, be = _cut(self.block_s, self.block_e, start, end)
        # a token exists once the device has run the work that computes it
        device_end = float(t.end[mine].max()) if len(mine) else end
        return Pass(
            label=label,
            phase=phase,
            index=int(index),
            start=start,
            end=max(end, device_end),
            tokens=tokens,
            batch=batch,
            device_busy_us=union_length(t.ts[mine], t.end[mine]),
            kernels=len(kernels),
            graph_launches=int(np.diff(np.searchsorted(self.graph_ts, [start, end]))[0]),
            blocked_us=union_length(bs, be),
            kv_appends=appends,
            kv_append_bytes=append_bytes,
            kv_writes=writes,
            dtod_copies=len(dtod),
            dtod_bytes=sum(t.copy_bytes.get(i, 0) for i in dtod),
        )


def _cut(starts: np.ndarray, ends: np.ndarray, lo: float, hi: float):
    return np.clip(starts, lo, hi), np.clip(ends, lo, hi)


def _first_type(trace: Trace, index: int) -> str | None:
    """The dtype of an embedding's weight (the model's dtype, which its KV cache shares)."""
    types = trace.input_types.get(index)
    if not types:
        return None
    try:
        first = json.loads(types)[0]
    except (ValueError, IndexError, TypeError):
        return None
    return first if isinstance(first, str) else None


def _cache_op(trace: Trace, i: int) -> tuple[str | None, int]:
    """("append", elements written) for a cat that grows a cache along the sequence
    dimension, ("write", 0) for an in-place index_copy_ into a cache, else (None, 0)."""
    try:
        dims = json.loads(trace.input_dims.get(i) or "null")
    except ValueError:
        return None, 0
    if not isinstance(dims, list) or not dims:
        return None, 0
    if trace.name(i) == "aten::index_copy_":
        target = dims[0]
        return ("write", 0) if isinstance(target, list) and len(target) >= 3 else (None, 0)
    tensors = dims[0]
    if not isinstance(tensors, list) or len(tensors) != 2:
        return None, 0
    past, new = tensors
    if not (isinstance(past, list) and isinstance(new, list)) or len(new) < 3:
        return None, 0
    if past == [0]:  # transformers' DynamicCache starts from an empty tensor
        return "append", int(np.prod(new))
    if len(past) != len(new) or past[-2] == new[-2]:
        return None, 0
    if past[:-2] != new[:-2] or past[-1] != new[-1]:
        return None, 0
    out = list(past)
    out[-2] = past[-2] + new[-2]
    return "append", int(np.prod(out))
