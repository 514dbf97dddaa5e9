"""The dispatch chain as JSON data: `kinetoscope chain --format json` and the MCP `chain`
tool answer with this one builder, so the two cannot drift apart.

The tree is `analysis.chain.build_tree` over the first `limit` selected device events:
ProfilerStep#N -> annotations -> ops -> launch -> kernel, each node with its host span
and the device time and kernel count under it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..analysis.chain import ChainNode, build_tree
from ..trace import Cat, Trace


def chain_data(trace: Trace, selected: np.ndarray, limit: int) -> dict[str, Any]:
    """How many device events matched, how many are shown (the first `limit` in time),
    their device time, and the tree that launched them."""
    shown = selected[:limit]
    tree = build_tree(trace, shown)
    return {
        "matched": len(selected),
        "shown": len(shown),
        "device_us": tree.device_us,
        "tree": [_node(trace, child) for child in tree.children.values()],
    }


def _node(trace: Trace, node: ChainNode) -> dict[str, Any]:
    i = node.index
    return {
        "name": trace.name(i),
        "category": Cat(int(trace.cat[i])).name.lower(),
        "ts_us": trace.rel(float(trace.ts[i])),
        "dur_us": float(trace.dur[i]),
        "device_us": node.device_us,
        "kernels": node.kernels,
        "children": [_node(trace, child) for child in node.children.values()],
    }
