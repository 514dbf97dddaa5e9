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
from .steps import device_anchor, host_activity_mask

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


class PassSpec(NamedTuple):
    """Where a pass is and what the trace says about it, before measuring its cost."""

    label: str
    phase: str
    index: int  # event index of what marks it (an embedding op, an annotation, a range)
    start: float  # absolute us
    end: float  # end of its host window
    tokens: int | None  # query tokens (batch x new tokens), None when not recorded
    batch: int | None  # sequences (requests), None when not recorded


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
        for i in self.cache_ops[s:e].tolist():
            kind, elements = _cache_op(t, i)
            if kind == "append":
                appends += 1
                append_bytes += elements * elem_bytes
            elif kind == "write":
                writes += 1
        writes += int(self.kv_kernel[t.name_id[kernels]].sum()) if len(kernels) else 0
        bs, be = np.clip(self.block_s, start, end), np.clip(self.block_e, start, end)
        # a token exists once the device has run the work that computes it
        device_end = float(t.end[mine].max()) if len(mine) else end
        return Pass(
            label=spec.label,
            phase=spec.phase,
            index=int(spec.index),
            start=start,
            end=max(end, device_end),
            host_end=end,
            tokens=spec.tokens,
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
        )


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
