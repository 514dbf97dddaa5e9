"""FLOPs and minimum bytes of one convolution, from the shapes and scalars the profiler recorded.

Forward: every output element is a dot product over (Cin/groups) x kernel
window, one multiply and one add each, so FLOPs = 2 * N * Cout * prod(output
spatial) * (Cin/groups) * prod(kernel spatial). The weight is
[Cout, Cin/groups, k...], so (Cin/groups) * prod(kernel) is the product of
its trailing sizes and groups need not be known. The output spatial size
comes from the input, stride, padding and dilation (Concrete Inputs, torch >=
2.1): out = floor((in + 2*pad - dil*(k-1) - 1) / stride) + 1. Without them the
forward op is counted but not rated: no stride/padding is assumed, as a
guess would be wrong by 4x for a stride-2 layer. A transposed convolution
does the same products the other way round: 2 * N * Cin * prod(input
spatial) * (Cout/groups) * prod(kernel), the weight being [Cin,
Cout/groups, k...], so it needs no output size.

Backward (`convolution_backward`, and the older cuDNN ops): grad input and
grad weight each cost one forward's FLOPs (the same products, transposed);
the bias gradient (a sum) is not counted. Which gradients ran is
`output_mask` (recorded as a Concrete Input), or, in traces from before
torch 1.11, which of `cudnn_convolution_backward_input` / `_weight` ran
under the call. Where neither is recorded both are assumed, and the cost
says so. grad_output carries the output shape, so no stride is needed.

Bytes are the minimum traffic: input, weight (and bias) read, output
written once. Backward: grad_output read; for grad input the weight read and
grad input written; for grad weight the input read and grad weight written.
Implementations that unfold the input (im2col) move more.
"""

from __future__ import annotations

from dataclasses import dataclass

from .attention_flops import OpCost
from .recorded_args import ITEMSIZE, MISSING, RecordedArgs, numel


@dataclass(frozen=True)
class ConvSignature:
    """Where a forward convolution op keeps its geometry (torch schema positions)."""

    stride: int | None = None
    padding: int | None = None
    dilation: int | None = None
    transposed: int | bool = False  # position of the flag, or the op's fixed kind
    bias: int | None = 2


def _fwd(stride, padding, dilation, transposed=False, bias=2) -> ConvSignature:
    return ConvSignature(stride, padding, dilation, transposed, bias)


#: Forward convolution ops, checked against torch 2.13's schemas (the test compares them).
FORWARD: dict[str, ConvSignature] = {
    **{f"aten::conv{n}d": _fwd(3, 4, 5) for n in (1, 2, 3)},
    **{f"aten::conv_transpose{n}d": _fwd(None, None, None, True) for n in (1, 2, 3)},
    "aten::convolution": _fwd(3, 4, 5, transposed=6),
    "aten::_convolution": _fwd(3, 4, 5, transposed=6),
    "aten::convolution_overrideable": _fwd(3, 4, 5, transposed=6),
    "aten::_convolution_mode": _fwd(3, 4, 5),  # padding is "same" or "valid"
    "aten::cudnn_convolution": _fwd(3, 2, 4, bias=None),
    "aten::cudnn_convolution_transpose": _fwd(None, None, None, True, bias=None),
    "aten::miopen_convolution": _fwd(4, 3, 5),
    "aten::miopen_depthwise_convolution": _fwd(4, 3, 5),
    "aten::miopen_convolution_transpose": _fwd(None, None, None, True),
    "aten::mkldnn_convolution": _fwd(4, 3, 5),
    "aten::_slow_conv2d_forward": _fwd(4, 5, None, bias=3),
    "aten::thnn_conv2d": _fwd(4, 5, None, bias=3),
    "aten::slow_conv3d": _fwd(4, 5, None, bias=3),
    "aten::slow_conv3d_forward": _fwd(4, 5, None, bias=3),
    "aten::slow_conv_dilated2d": _fwd(4, 5, 6, bias=3),
    "aten::slow_conv_dilated3d": _fwd(4, 5, 6, bias=3),
    "aten::_conv_depthwise2d": _fwd(4, 5, 6, bias=3),
    "aten::conv_depthwise3d": _fwd(4, 5, 6, bias=3),
    "aten::slow_conv_transpose2d": _fwd(None, None, None, True, bias=3),
    "aten::slow_conv_transpose3d": _fwd(None, None, None, True, bias=3),
    "aten::_nnpack_spatial_convolution": _fwd(4, 3, None),
}


@dataclass(frozen=True)
class BackwardSignature:
    """Positions of grad_output, input, weight, the transposed flag and output_mask."""

    grad_output: int
    input: int
    weight: int
    transposed: int | None
    output_mask: int | None


#: Backward convolution ops (torch schema positions; cudnn_convolution_backward is torch < 1.11).
BACKWARD: dict[str, BackwardSignature] = {
    "aten::convolution_backward": BackwardSignature(0, 1, 2, 7, 10),
    "aten::convolution_backward_overrideable": BackwardSignature(0, 1, 2, 6, 9),
    "aten::_slow_conv2d_backward": BackwardSignature(0, 1, 2, None, 6),
    "aten::cudnn_convolution_backward": BackwardSignature(1, 0, 2, None, 10),
}
#: Ops under an old-style backward call that say which gradient ran.
GRAD_INPUT_OPS = frozenset(
    {"aten::cudnn_convolution_backward_input", "aten::miopen_convolution_backward_input"}
)
GRAD_WEIGHT_OPS = frozenset(
    {"aten::cudnn_convolution_backward_weight", "aten::miopen_convolution_backward_weight"}
)
#: Every op that makes a call a convolution call.
CONV_OPS = frozenset(FORWARD) | frozenset(BACKWARD) | GRAD_INPUT_OPS | GRAD_WEIGHT_OPS


def _per_dim(value, n: int) -> list[int] | None:
    """A recorded int list broadcast to `n` spatial dims ([1] -> [1, 1])."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, int) for v in value):
        return None
    if len(value) == 1:
        return value * n
    return value if len(value) == n else None


def _output_spatial(args: RecordedArgs, sig: ConvSignature, x: list[int], w: list[int]):
    """Output spatial sizes from the recorded geometry, None where it was not recorded."""
    n = len(x) - 2
    kernel = w[2:]
    padding = args.scalar(sig.padding) if sig.padding is not None else MISSING
    stride = args.scalar(sig.stride) if sig.stride is not None else MISSING
    dilation = args.scalar(sig.dilation) if sig.dilation is not None else [1]
    if padding == "same":
        return x[2:]
    if padding == "valid":
        padding = [0]
    if MISSING in (padding, stride, dilation):
        return None
    p, s, d = (_per_dim(v, n) for v in (padding, stride, dilation))
    if p is None or s is None or d is None or 0 in s:
        return None
    out = [
        (i + 2 * pi - di * (k - 1) - 1) // si + 1
        for i, k, pi, si, di in zip(x[2:], kernel, p, s, d, strict=True)
    ]
    return out if all(o > 0 for o in out) else None


def _transposed(args: RecordedArgs, flag: int | bool | None) -> bool:
    if isinstance(flag, bool) or flag is None:
        return bool(flag)
    return args.scalar(flag) is True


def forward_cost(name: str, args: RecordedArgs) -> OpCost | None:
    """FLOPs and minimum bytes of a forward convolution op; None without shapes or geometry."""
    sig = FORWARD.get(name)
    x, w, dtype = args.shape(0), args.shape(1), args.dtype(0)
    if sig is None or not x or not w or dtype is None or len(x) != len(w) or len(x) < 3:
        return None
    per_output = numel(w[1:])  # (C/groups) * prod(kernel)
    bias = args.shape(sig.bias) if sig.bias is not None else None
    read = numel(x) + numel(w) + (numel(bias) if bias else 0)
    if _transposed(args, sig.transposed):
        # each input element scatters to (Cout/groups) x kernel outputs; the output size
        # needs output_padding too, so its bytes are left out (the minimum is lower still)
        notes = ("transposed, output bytes not counted",)
        return OpCost(2.0 * numel(x) * per_output, read * ITEMSIZE[dtype], dtype, notes=notes)
    spatial = _output_spatial(args, sig, x, w)
    if spatial is None:
        return None
    output = x[0] * w[0] * numel(spatial)
    return OpCost(2.0 * output * per_output, (read + output) * ITEMSIZE[dtype], dtype)


def backward_cost(name: str, args: RecordedArgs, children: set[str]) -> OpCost | None:
    """FLOPs and minimum bytes of a backward convolution op; `children`: op names under it."""
    sig = BACKWARD.get(name)
    if sig is None:
        return None
    g, x, w = args.shape(sig.grad_output), args.shape(sig.input), args.shape(sig.weight)
    dtype = args.dtype(sig.grad_output)
    if not (g and x and w and dtype) or not len(g) == len(x) == len(w) or len(g) < 3:
        return None
    transposed = _transposed(args, sig.transposed)
    # the side whose channels are weight[0]: the output (Cout), or a transposed conv's input
    side = x if transposed else g
    if side[1] != w[0]:
        return None
    forward = 2.0 * numel(side) * numel(w[1:])
    notes: tuple[str, ...] = ()
    mask = args.scalar(sig.output_mask) if sig.output_mask is not None else MISSING
    if isinstance(mask, list) and len(mask) >= 2:
        grad_input, grad_weight = bool(mask[0]), bool(mask[1])
    elif children & (GRAD_INPUT_OPS | GRAD_WEIGHT_OPS):
        grad_input, grad_weight = bool(children & GRAD_INPUT_OPS), bool(children & GRAD_WEIGHT_OPS)
    else:
        grad_input = grad_weight = True
        notes = ("output_mask not recorded, grad input and grad weight assumed",)
    if not (grad_input or grad_weight):
        return None
    elements = numel(g)
    if grad_input:
        elements += numel(w) + numel(x)
    if grad_weight:
        elements += numel(x) + numel(w)
    flops = forward * (int(grad_input) + int(grad_weight))
    return OpCost(flops, elements * ITEMSIZE[dtype], dtype, backward=True, notes=notes)
