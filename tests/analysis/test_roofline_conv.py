"""Roofline of convolutions: FLOPs from recorded shapes and stride/padding, checked by hand.

Forward: 2 * N * Cout * prod(output spatial) * (Cin/groups) * prod(kernel); the
output size from the input, stride, padding and dilation (Concrete Inputs).
Backward: one forward's FLOPs per gradient computed (output_mask).
"""

from __future__ import annotations

import pytest

from kinetoscope.analysis.conv_flops import BACKWARD, FORWARD
from kinetoscope.analysis.roofline import NO_CPU_PEAK, rated_ops, roofline
from kinetoscope.rules.engine import run_rules
from kinetoscope.trace import load

from ..capture_helpers import record_here, record_judged
from ..conftest import corpus

MI300_RESNET = "gpu/tracelens_mi300__resnet_act_checkpoint.json.gz"


#: a CPU run gets a verdict like a GPU run (compute- or overhead-bound; host-only without
#: any math op): the roofline evidence rides on whichever verdict fired
REGIME_RULES = ["compute-bound", "overhead-bound", "mixed", "host-only"]


def _call(trace, external_id):
    ops, _ = rated_ops(trace)
    return next(o for o in ops if trace.external_id[o.index] == external_id)


def test_one_mi300_forward_conv_by_hand():
    # tracelens_mi300 ResNet, read with `zcat | python -m json.tool`: the first aten::conv2d
    # (External id 378, the stem) has Input Dims [[10, 3, 224, 224], [64, 3, 7, 7], [], ...],
    # c10::BFloat16, Concrete Inputs stride [2, 2], padding [3, 3], dilation [1, 1], groups 1,
    # no bias. Output: floor((224 + 2*3 - 1*(7-1) - 1) / 2) + 1 = 112 per side. Its five
    # kernels (MIOpen layout transposes around igemm_fwd_gtcx3_nhwc_bf16): 7.279 + 5.479 +
    # 5.559 + 26.199 + 14.439 us.
    trace = load(corpus(MI300_RESNET))
    call = _call(trace, 378)
    assert trace.name(call.index) == "aten::conv2d"
    assert (call.op_class, call.dtype, call.backward) == ("conv", "bf16", False)
    assert call.flops == 2 * 10 * 64 * 112 * 112 * 3 * 7 * 7 == 2_360_279_040
    assert call.device_us == pytest.approx(7.279 + 5.479 + 5.559 + 26.199 + 14.439)
    # input + weight read, output written, 2 bytes each
    assert call.bytes == (10 * 3 * 224 * 224 + 64 * 3 * 7 * 7 + 10 * 64 * 112 * 112) * 2


def test_one_mi300_backward_conv_by_hand():
    # the first aten::convolution_backward (External id 1277): grad_output [10, 512, 7, 7],
    # input [10, 512, 7, 7], weight [512, 512, 3, 3], transposed False, output_mask
    # [True, True, False]: grad input and grad weight, each one forward's FLOPs.
    trace = load(corpus(MI300_RESNET))
    call = _call(trace, 1277)
    forward = 2 * 10 * 512 * 7 * 7 * 512 * 3 * 3  # 2,312,110,080
    assert call.backward and call.flops == 2 * forward == 4_624_220_160
    assert len(call.kernels) == 11  # transposes, igemm_bwd (grad input), ck bwd_weight, ...
    # grad_output read; weight read + grad input written; input read + grad weight written
    grad_out, inp, weight = 10 * 512 * 49, 10 * 512 * 49, 512 * 512 * 9
    assert call.bytes == (grad_out + 2 * (weight + inp)) * 2


def test_pre_concrete_inputs_trace_rates_backward_only():
    # ResNet-50 on a V100 (2021, torch 1.8): Input Dims but no Concrete Inputs. Forward convs
    # cannot be sized (no stride/padding): counted, not rated. cudnn_convolution_backward
    # has grad_output, and its _input/_weight children say which gradients ran.
    trace = load(corpus("gpu/resnet50_dataloader_workers0.pt.trace.json.gz"))
    roof = roofline(trace)
    (row,) = roof.of_class("conv")
    assert row.ops == row.backward == 318
    assert roof.unrated["conv"].calls == 318
    assert set(roof.unrated["conv"].reasons) == {"stride/padding not recorded, no Concrete Inputs"}
    # first backward (External id 2067): self [32, 512, 7, 7], grad_output [32, 2048, 7, 7],
    # weight [2048, 512, 1, 1]; both children ran: 2 x (2 * 32 * 2048 * 49 * 512)
    assert _call(trace, 2067).flops == 2 * (2 * 32 * 2048 * 49 * 512)
    # the stem's backward has no grad input (the image needs none): only _weight ran
    stems = [o for o in rated_ops(trace)[0]
             if o.op_class == "conv" and trace.name(o.index) == "aten::cudnn_convolution_backward"
             and '[64, 3, 7, 7]' in trace.input_dims[o.index]]  # fmt: skip
    assert stems and all(o.flops == 2 * 32 * 64 * 112 * 112 * 3 * 49 for o in stems)


def test_signatures_match_torch_schemas():
    torch = pytest.importorskip("torch")
    for name, sig in FORWARD.items():
        schema = getattr(torch.ops.aten, name.removeprefix("aten::"))
        overload = schema.default if "default" in schema.overloads() else schema.input
        args = [a.name for a in overload._schema.arguments]
        assert args[1] == "weight", name
        for field, expected in (("stride", "stride"), ("padding", "padding"),
                                ("dilation", "dilation"), ("bias", "bias")):  # fmt: skip
            position = getattr(sig, field)
            if position is not None:
                assert args[position] == expected, (name, field)
        if not isinstance(sig.transposed, bool):
            assert args[sig.transposed] == "transposed", name
    for name, sig in BACKWARD.items():
        if name == "aten::cudnn_convolution_backward":
            continue  # removed in torch 1.11; positions from the 2021 corpus trace's dims
        op = getattr(torch.ops.aten, name.removeprefix("aten::"))
        overload = op.output_mask if name == "aten::_slow_conv2d_backward" else op.default
        args = [a.name for a in overload._schema.arguments]
        assert args[sig.grad_output] == "grad_output", name
        assert args[sig.input] in ("input", "self") and args[sig.weight] == "weight", name
        assert args[sig.output_mask] == "output_mask", name
        if sig.transposed is not None:
            assert args[sig.transposed] == "transposed", name


#: A conv net trained for 5 steps under torch.profiler on the CPU (schedule 1 wait,
#: 1 warm-up, 3 active); argv[2] says whether shapes are recorded.
CONV_SCRIPT = r"""
import sys
import torch
from torch.profiler import ProfilerActivity, profile, schedule

torch.manual_seed(0)
torch.set_num_threads(1)
x = torch.randn(2, 3, 32, 32)
net = torch.nn.Sequential(
    torch.nn.Conv2d(3, 8, 3, stride=2, padding=1),  # 32 -> 16
    torch.nn.Conv2d(8, 16, 3, padding=1, groups=2),  # 16 -> 16
    torch.nn.ConvTranspose2d(16, 4, 2, stride=2),  # 16 -> 32
)
with profile(
    activities=[ProfilerActivity.CPU],
    record_shapes=sys.argv[2] == "1",
    schedule=schedule(wait=1, warmup=1, active=3, repeat=1),
    on_trace_ready=lambda p: p.export_chrome_trace(sys.argv[1]),
) as prof:
    for _ in range(5):
        net(x).sum().backward()
        prof.step()
"""


@pytest.fixture(scope="module")
def conv_traces(tmp_path_factory):
    pytest.importorskip("torch")
    out = {}
    for shapes in (True, False):
        path = tmp_path_factory.mktemp("conv") / f"conv_{int(shapes)}.json"
        if shapes:  # judged: its verdict carries the roofline evidence
            out[shapes] = record_judged(CONV_SCRIPT, path, 1)
        else:
            record_here(CONV_SCRIPT, path, 0)
            out[shapes] = load(path)
    return out


def test_cpu_conv_net_is_rated_without_a_peak(conv_traces):
    trace = conv_traces[True]
    roof = roofline(trace)
    assert roof.on_cpu and roof.peak_note == NO_CPU_PEAK
    (row,) = roof.of_class("conv")
    conv1 = 2 * 2 * 8 * 16 * 16 * 3 * 3 * 3  # N=2, Cout 8, 16x16 out, Cin 3, 3x3
    conv2 = 2 * 2 * 16 * 16 * 16 * (8 // 2) * 3 * 3  # groups 2: Cin/groups = 4
    deconv = 2 * (2 * 16 * 16 * 16) * 4 * 2 * 2  # transposed: input elements x Cout x 2x2
    # backward: conv1's input needs no gradient (output_mask [False, True, True]): 1x;
    # conv2 and the transposed conv: grad input and grad weight, 2x each
    per_step = conv1 + conv2 + deconv + conv1 + 2 * conv2 + 2 * deconv
    assert (row.dtype, row.ops, row.backward) == ("fp32", 3 * 6, 3 * 3)
    assert row.flops == 3 * per_step
    assert row.device_us > 0 and row.share_of_peak is None
    (finding,) = run_rules(trace, only=REGIME_RULES).findings  # the one verdict
    line = next(e.text for e in finding.evidence if "convolutions" in e.text)
    assert line.startswith("18 fp32 convolutions (9 of them backward) run at")
    assert "on the CPU" in line and NO_CPU_PEAK in line


def test_cpu_conv_net_without_shapes_is_counted_not_rated(conv_traces):
    roof = roofline(conv_traces[False])
    assert roof.of_class("conv") == []
    lost = roof.unrated["conv"]
    assert lost.calls == 18 and dict(lost.reasons) == {"no shapes recorded": 18}


def test_same_padding_and_missing_output_mask():
    from kinetoscope.analysis.conv_flops import backward_cost, forward_cost
    from kinetoscope.analysis.recorded_args import RecordedArgs

    # conv2d(x, w, padding="same"): the output keeps the input's 20x20
    same = RecordedArgs([[1, 4, 20, 20], [6, 4, 5, 5], [], [], [], [], []],
                        ["float", "float", "", "ScalarList", "str", "ScalarList", "Scalar"],
                        ["", "", "", "[1, 1]", "same", "[1, 1]", "1"])  # fmt: skip
    assert forward_cost("aten::conv2d", same).flops == 2 * 1 * 6 * 20 * 20 * 4 * 5 * 5
    # no Concrete Inputs: stride unknown, so the forward is not rated
    bare = RecordedArgs(same.dims, same.types, [])
    assert forward_cost("aten::conv2d", bare) is None
    # a backward without output_mask: both gradients assumed, and said
    grads = RecordedArgs([[1, 6, 20, 20], [1, 4, 20, 20], [6, 4, 5, 5]], ["float"] * 3, [])
    cost = backward_cost("aten::convolution_backward", grads, set())
    assert cost.flops == 2 * (2 * 1 * 6 * 20 * 20 * 4 * 5 * 5)
    assert cost.notes == ("output_mask not recorded, grad input and grad weight assumed",)
