"""What one pass of a generation cost: device work, graph replays, syncs, KV-cache traffic.

A pass is a host window (from the op or range that starts it to the next pass of
the same group, or the end of its range). Its device work is what that window
launched (`analysis.steps.device_anchor`: a kernel belongs to the launch call that
queued it, a graph-replayed kernel to its `cudaGraphLaunch`), and the pass ends
when both sides are done (a token exists once the device has computed it).
KV-cache traffic per pass: concatenations that grow a cache along the sequence
dimension (transformers' DynamicCache: `aten::cat([past, new], dim=-2)`, a copy of
the whole cache per layer and token), in-place cache writes (`index_copy_`,
paged-cache kernels such as vLLM's `reshape_and_cache` or SGLang's
`store_kvcache`) and device-to-device copies.

A cache grows: what one append writes is the past the next one reads. So a cat is
an append only where its past is empty (a cache's first fill) or links to another
cat of the trace (its past is what another cat wrote, or what it writes is another
cat's past). A vision transformer's class token joined to its patches
(`cat([cls [1, 1, D], patches [1, P, D]], dim=1)`) has the shape of an append but
never grows: the same [1, 1, D] every forward, so it is no cache.

Tokens, where nothing names them, come from the pass's host-to-device copies: a
serving engine copies per-token arrays for every step, vLLM its input ids as int32
(4 B a token) and positions and slot mapping as int64 (8 B a token). The largest N
whose N x 4 B and N x 8 B copies both occur in the pass is its token count (the
corpus' vLLM traces hold 888 x 4 B and 888 x 8 B copies in their 888-token step).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..trace import Cat, Trace
from ..trace.categories import GRAPH_LAUNCHES
from .blocking import blocking_calls
from .intervals import merge, union_length
from .kernel_types import kernel_type_in
from .steps import device_anchor, host_activity_mask

#: Device kernels that write new keys/values into a preallocated (paged) cache.
KV_WRITE_KERNEL_RE = re.compile(r"reshape_and_cache|store_kvcache|kv_cache", re.IGNORECASE)
#: How a token count read from copies is said (see the module docstring).
COPIED = "copies (N x 4 B int32 ids and N x 8 B int64 positions, dtypes assumed)"
DTYPE_BYTES = {
    "float": 4,
    "double": 8,
    "c10::Half": 2,
    "c10::BFloat16": 2,
    "c10::Float8_e4m3fn": 1,
    "c10::Float8_e4m3fnuz": 1,
}


class PassSpec(NamedTuple):
    """Where a pass is and what the trace says about it, before measuring its cost."""

    label: str
    phase: str
    index: int  # event index of what marks it (an embedding op, an annotation, a range)
    start: float  # absolute us
    end: float  # end of its host window
    tokens: int | None  # query tokens (batch x new tokens), None when not recorded
    batch: int | None  # sequences (requests), None when not recorded
    #: what the token count was read from ("annotation", "input ids' shape", ...)
    tokens_from: str | None = None


@dataclass(frozen=True)
class Pass:
    """One forward pass (or one scheduled engine step) of the model."""

    label: str
    #: "prefill", "chunked prefill" (prompt chunks attending to earlier cached ones),
    #: "decode", "mixed" (prefill and decode requests in one step) or "unknown" (a flat
    #: list of tokens from several requests, nothing to split it by)
    phase: str
    index: int
    start: float  # absolute us
    end: float  # the later of the host window's end and its device work's end
    host_end: float  # end of the host window
    tokens: int | None
    batch: int | None
    device_busy_us: float
    kernels: int
    graph_launches: int  # cudaGraphLaunch / hipGraphLaunch calls: CUDA-graph replays
    blocked_us: float  # host time inside blocking runtime calls (syncs)
    kv_appends: int  # cache-growing concatenations
    kv_append_bytes: int  # bytes those concatenations wrote (0 when the dtype is unknown)
    kv_writes: int  # in-place cache writes (index_copy_, paged-cache kernels)
    dtod_copies: int
    dtod_bytes: int
    #: where `tokens` came from, in words (None when there are none)
    tokens_from: str | None = None
    #: device time of communication kernels (analysis.kernel_types), their union
    comm_busy_us: float = 0.0
    #: device time of every other kernel and copy: the pass's own compute
    compute_busy_us: float = 0.0
    #: CPU ops that started in the host window (a pass on a CPU-only trace launches these)
    host_ops: int = 0
    #: when the pass's own work was done (host window and device work), before tiling
    #: cut `end` at the next pass's start: its token exists from here
    done: float = 0.0

    @property
    def dur(self) -> float:
        return self.end - self.start

    @property
    def host_us(self) -> float:
        """The host side of the pass: from its start to the end of its host window."""
        return self.host_end - self.start


class Costs:
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
        # every call that waited for the device, whatever its name (analysis.blocking)
        block = blocking_calls(trace)
        self.block_s, self.block_e = merge(trace.ts[block], trace.end[block])
        ops = np.flatnonzero(host_activity_mask(trace) & trace.mask(Cat.CPU_OP))
        wanted = trace.name_ids_matching(lambda n: n in ("aten::cat", "aten::index_copy_"))
        self.cache_ops = ops[np.isin(trace.name_id[ops], wanted)]
        self.cache_ops = self.cache_ops[np.argsort(trace.ts[self.cache_ops], kind="stable")]
        self.cache_kinds = _cache_kinds(trace, self.cache_ops)
        self.op_ts = np.sort(trace.ts[ops])
        # by name id, typing only the kernels' names (kernel_types: "communication")
        self.comm_name = np.zeros(max(len(trace.names), 1), dtype=bool)
        for name_id in np.unique(trace.name_id[trace.cat == int(Cat.KERNEL)]).tolist():
            self.comm_name[name_id] = kernel_type_in(trace, trace.names[name_id]) == "communication"
        self.kv_kernel = np.array(
            [bool(KV_WRITE_KERNEL_RE.search(n)) for n in trace.names] or [False]
        )

    def measure(self, spec: PassSpec) -> Pass:
        t = self.trace
        start, end = spec.start, spec.end
        lo, hi = np.searchsorted(self.anchor, [start, end])
        mine = self.work[lo:hi]
        kernels = mine[t.cat[mine] == int(Cat.KERNEL)]
        memcpy = mine[t.cat[mine] == int(Cat.MEMCPY)]
        dtod = [i for i in memcpy.tolist() if "DtoD" in t.name(i)]
        s, e = np.searchsorted(t.ts[self.cache_ops], [start, end])
        elem_bytes = DTYPE_BYTES.get(_first_type(t, spec.index), 0)
        appends = writes = append_bytes = 0
        for kind, elements in self.cache_kinds[s:e]:
            if kind == "append":
                appends += 1
                append_bytes += elements * elem_bytes
            elif kind == "write":
                writes += 1
        writes += int(self.kv_kernel[t.name_id[kernels]].sum()) if len(kernels) else 0
        bs, be = np.clip(self.block_s, start, end), np.clip(self.block_e, start, end)
        # a token exists once the device has run the work that computes it
        device_end = float(t.end[mine].max()) if len(mine) else end
        comm = mine[(t.cat[mine] == int(Cat.KERNEL)) & self.comm_name[t.name_id[mine]]]
        rest = np.setdiff1d(mine, comm)
        tokens, tokens_from = spec.tokens, spec.tokens_from
        if tokens is None:
            tokens = _copied_tokens(t, memcpy)
            tokens_from = (
                "copies (N x 4 B int32 ids and N x 8 B int64 positions)" if tokens else None
            )
        return Pass(
            label=spec.label,
            phase=spec.phase,
            index=int(spec.index),
            start=start,
            end=max(end, device_end),
            host_end=end,
            tokens=tokens,
            batch=spec.batch,
            device_busy_us=union_length(t.ts[mine], t.end[mine]),
            kernels=len(kernels),
            graph_launches=int(np.diff(np.searchsorted(self.graph_ts, [start, end]))[0]),
            blocked_us=union_length(bs, be),
            kv_appends=appends,
            kv_append_bytes=append_bytes,
            kv_writes=writes,
            dtod_copies=len(dtod),
            dtod_bytes=sum(t.copy_bytes.get(i, 0) for i in dtod),
            tokens_from=tokens_from if tokens is not None else None,
            comm_busy_us=union_length(t.ts[comm], t.end[comm]),
            compute_busy_us=union_length(t.ts[rest], t.end[rest]),
            host_ops=int(np.diff(np.searchsorted(self.op_ts, [start, end]))[0]),
            done=max(end, device_end),
        )


def _copied_tokens(trace: Trace, memcpy: np.ndarray) -> int | None:
    """The pass's tokens from its host-to-device copies (module docstring): the largest
    N copied both as N x 4 B and as N x 8 B; None when no such pair exists."""
    sizes = {trace.copy_bytes.get(i, 0) for i in memcpy.tolist() if "HtoD" in trace.name(i)}
    pairs = [n // 4 for n in sizes if n > 0 and n % 4 == 0 and 2 * n in sizes]
    return max(pairs) if pairs else None


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


def _cache_kinds(trace: Trace, ops: np.ndarray) -> list[tuple[str | None, int]]:
    """Per cache op: ("append", elements written) for a cat that grows a cache (its past
    empty, or linked to another cat: see the module docstring), ("write", 0) for an
    in-place index_copy_ into a cache, else (None, 0)."""
    parsed = [_cache_op(trace, i) for i in ops.tolist()]
    grown = [(p[1], p[2]) for p in parsed if p[0] == "append"]
    pasts = {past for past, _ in grown}
    outs = {out for _, out in grown}
    kinds: list[tuple[str | None, int]] = []
    for kind, past, out in parsed:
        if kind == "append" and not (past is None or past in outs or out in pasts):
            kind = None  # a join that never grows: no cache
        kinds.append((kind, int(np.prod(out)) if kind == "append" else 0))
    return kinds


def _cache_op(trace: Trace, i: int) -> tuple[str | None, tuple | None, tuple]:
    """(kind, past, out) of a cache op: ("append", past shape or None when empty, output
    shape) for a cat of shape [past, new] along dim -2, ("write", None, ()) for an
    in-place index_copy_ into a >= 3-D cache, else (None, None, ())."""
    try:
        dims = json.loads(trace.input_dims.get(i) or "null")
    except ValueError:
        return None, None, ()
    if not isinstance(dims, list) or not dims:
        return None, None, ()
    if trace.name(i) == "aten::index_copy_":
        target = dims[0]
        return ("write" if isinstance(target, list) and len(target) >= 3 else None), None, ()
    tensors = dims[0]
    if not isinstance(tensors, list) or len(tensors) != 2:
        return None, None, ()
    past, new = tensors
    if not (isinstance(past, list) and isinstance(new, list)) or len(new) < 3:
        return None, None, ()
    if past == [0]:  # transformers' DynamicCache starts from an empty tensor
        return "append", None, tuple(new)
    if len(past) != len(new) or past[-2] == new[-2]:
        return None, None, ()
    if past[:-2] != new[:-2] or past[-1] != new[-1]:
        return None, None, ()
    out = list(past)
    out[-2] = past[-2] + new[-2]
    return "append", (None if past[-2] == 0 else tuple(past)), tuple(out)
