"""Inductor's Triton kernel names: `triton_<kind>_fused_<op>_<op>_<index>`.

The kind code and the fused aten op list are what stays the same between two
compilations of one graph; the trailing index is graph order and is dropped
from the family.
"""

from __future__ import annotations

import re

from .kernel_name_record import KernelName

_TRITON_RE = re.compile(r"^triton_(poi|red|per|tem|for|mm|bmm|conv)_(.*?)(?:_(\d+))?$")
_TRITON_KINDS = {
    "poi": "pointwise",
    "red": "reduction",
    "per": "persistent reduction",
    "tem": "template",
    "for": "foreach",
    "mm": "template",
    "bmm": "template",
    "conv": "template",
}
#: aten op names that contain underscores, so the fused list splits correctly.
_MULTIWORD_OPS = {
    tuple(op.split("_"))
    for op in [
        "_to_copy",
        "_unsafe_view",
        "_softmax",
        "_log_softmax",
        "native_layer_norm",
        "native_group_norm",
        "native_batch_norm",
        "native_dropout",
        "empty_like",
        "zeros_like",
        "ones_like",
        "full_like",
        "rand_like",
        "randn_like",
        "constant_pad_nd",
        "bitwise_and",
        "bitwise_or",
        "bitwise_not",
        "bitwise_xor",
        "logical_and",
        "logical_or",
        "logical_not",
        "index_put",
        "index_select",
        "scatter_add",
        "masked_fill",
        "as_strided",
        "new_zeros",
        "new_empty",
        "new_ones",
        "avg_pool2d",
        "max_pool2d_with_indices",
        "upsample_nearest2d",
        "upsample_bilinear2d",
        "split_with_sizes",
        "slice_scatter",
        "select_scatter",
        "clamp_min",
        "clamp_max",
        "threshold_backward",
        "gelu_backward",
        "silu_backward",
        "sigmoid_backward",
        "tanh_backward",
        "native_layer_norm_backward",
        "_softmax_backward_data",
        "_log_softmax_backward_data",
        "var_mean",
        "embedding_dense_backward",
        "scalar_tensor",
        "lift_fresh",
        "moe_forward",
        "rsqrt_",
        "convolution_backward",
        "reflection_pad2d",
        "replication_pad2d",
        "index_add",
        "nll_loss_forward",
        "nll_loss_backward",
        "mse_loss",
        "max_pool2d",
        "avg_pool2d_backward",
        "leaky_relu",
        "hardtanh_backward",
    ]
}
_MAX_OP_WORDS = max(len(op) for op in _MULTIWORD_OPS)


def _split_fused_ops(text: str) -> tuple[str, ...]:
    """`_to_copy_add_native_layer_norm` -> (`_to_copy`, `add`, `native_layer_norm`)."""
    parts = text.split("_")
    ops: list[str] = []
    i = 0
    while i < len(parts):
        lead = ""
        while i < len(parts) and parts[i] == "":
            lead = "_"
            i += 1
        if i >= len(parts):
            break
        taken = 1
        for width in range(min(_MAX_OP_WORDS, len(parts) - i), 1, -1):
            words = tuple(([""] if lead else []) + parts[i : i + width])
            if words in _MULTIWORD_OPS:
                taken = width
                break
        ops.append(lead + "_".join(parts[i : i + taken]))
        i += taken
    return tuple(ops)


def decode_triton(name: str) -> KernelName | None:
    m = _TRITON_RE.match(name)
    if not m:
        return None
    code, body, _index = m.groups()
    ops: tuple[str, ...] = ()
    if body.startswith("fused_"):
        ops = _split_fused_ops(body[len("fused_") :])
    elif body == "fused" or not body:
        ops = ()
    else:
        ops = _split_fused_ops(body)
    triton_kind = _TRITON_KINDS[code]
    kind = {"pointwise": "elementwise", "template": "gemm", "foreach": "elementwise"}.get(
        triton_kind, "reduction"
    )
    key = f"triton_{code}_{body}"
    return KernelName(
        raw=name,
        short=name,
        family=f"Triton:{key}",
        library="Triton",
        kind=kind,
        triton_kind=triton_kind,
        fused_ops=ops,
    )
