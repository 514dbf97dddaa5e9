"""Time per nn.Module (analysis/modules.py): the forward tree from `nn.Module: X_N`
ranges, device time by the launch call's module, backward nodes placed by autograd's
`Sequence number`; a trace without module ranges gets the hint and no tree."""

from __future__ import annotations

import gzip
import json

from kinetoscope.analysis.modules import HINT, module_view
from kinetoscope.pipeline.modules_section import modules_section
from kinetoscope.trace.load import load

from ..conftest import corpus, kernel, launch, op, write_trace
from ..module_traces import STEPS, module_trace  # noqa: F401 - fixture

NCOMPASS = "gpu/ncompass_train_with_stack_h100nvl.pt.trace.json.gz"
SWITCH = "gpu/switch_transformer_moe_a100.json.gz"


def _find(roots, path):
    for node in roots:
        if node.path == path:
            return node
        if path.startswith(node.path + "/"):
            return _find(node.children, path)
    return None


def _heaviest(roots):
    names, level = [], roots
    while level:
        top = [n for n in level if n.heaviest]
        assert len(top) == 1  # exactly one marked per level of the path
        names.append(top[0].name)
        level = top[0].children
    return names


def test_recording_tree_and_heavy_module(module_trace):  # noqa: F811
    view = module_view(load(module_trace))
    assert [n.path for n in view.forward] == ["Sequential_0"]
    seq = view.forward[0]
    assert {c.name for c in seq.children} == {"Linear_0", "Head_0", "Linear_2"}
    head = _find(view.forward, "Sequential_0/Head_0")
    assert {c.name for c in head.children} == {"Linear_1", "ReLU_0"}
    assert all(n.calls == STEPS for n in [seq, head, *head.children])
    # no device in a CPU trace: the path follows host time, and the 64x Linear leads it
    assert view.measure == "host_us"
    assert _heaviest(view.forward) == ["Sequential_0", "Head_0", "Linear_1"]
    assert _heaviest(view.backward) == ["Sequential_0", "Head_0", "Linear_1"]
    # each Linear call makes two autograd nodes (TBackward0, AddmmBackward0), ReLU one
    assert _find(view.backward, "Sequential_0/Head_0/Linear_1").calls == 2 * STEPS
    assert _find(view.backward, "Sequential_0/Head_0/ReLU_0").calls == STEPS
    # `.sum()` runs outside every module: its SumBackward0 is counted, not placed
    assert view.backward_unattributed == STEPS


def _kernels_launched_inside(raw, module_name):
    """Read from the file alone: durations of kernels, copies and memsets whose launch
    call lies inside a range named `module_name` on the launch's thread."""
    events = raw["traceEvents"]
    ranges = [e for e in events if e.get("name") == module_name]
    launches = {
        e["args"]["correlation"]: e
        for e in events
        if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})
    }
    total = 0.0
    device = ("kernel", "gpu_memcpy", "gpu_memset")
    for k in (e for e in events if e.get("cat") in device):
        call = launches.get(k["args"].get("correlation"))
        if call and any(
            r["tid"] == call["tid"] and r["ts"] <= call["ts"] <= r["ts"] + r["dur"] for r in ranges
        ):
            total += k["dur"]
    return total


def test_gpu_trace_device_time_under_a_module():
    path = corpus(NCOMPASS)
    view = module_view(load(path))
    raw = json.loads(gzip.decompress(path.read_bytes()))
    assert view.measure == "device_us"
    for name in ("Linear_0", "Linear_1", "Linear_2"):
        node = _find(view.forward, f"SimpleNet_0/{name}")
        expected = _kernels_launched_inside(raw, f"nn.Module: {name}")
        assert expected > 0
        assert abs(node.device_us - expected) < 1e-3, name
        assert node.calls == 10  # ten profiled steps, one call each


def test_gpu_trace_backward_on_the_autograd_thread():
    """Backward runs on the engine's thread (tid 74), forward on tid 71: the nodes are
    placed through their Sequence number, and their kernels count."""
    view = module_view(load(corpus(NCOMPASS)))
    assert view.backward_unattributed == 0 and view.backward_note is None
    roots = {n.path: n for n in view.backward}
    assert set(roots) == {"SimpleNet_0", "CrossEntropyLoss_0"}
    for name in ("Linear_0", "Linear_1", "Linear_2"):
        node = _find(view.backward, f"SimpleNet_0/{name}")
        assert node.calls == 20  # TBackward0 + AddmmBackward0, ten steps
        assert node.device_us > 0
    assert _find(view.backward, "SimpleNet_0/ReLU_0").calls == 20  # ReLU_0 runs twice a step
    assert roots["CrossEntropyLoss_0"].calls == 20  # LogSoftmax + NllLoss backward


def test_forward_only_trace_has_no_backward():
    view = module_view(load(corpus(SWITCH)))
    assert view.backward == [] and view.backward_note is None
    moe = _find(view.forward, "SwitchTransformer_0/SwitchTransformerBlock_0/SwitchMoE_0")
    assert {c.name for c in moe.children} >= {f"FeedForward_{k}" for k in range(4)}
    assert moe.device_us > 0


def test_no_module_ranges_get_the_hint_only():
    trace = load(corpus("gpu/simple_add_a100.json.gz"))
    assert module_view(trace) is None
    assert modules_section(trace) == {"hint": HINT}


def _seq(name, ts, dur, tid, seq, fwd):
    return op(name, ts, dur, tid=tid, **{"Sequence number": seq, "Fwd thread id": fwd})


def test_sequence_number_on_two_threads_is_not_placed(tmp_path):
    """Sequence counters are per thread, and `Fwd thread id` is the profiler's own
    thread id: number 5 on two forward threads cannot say which made the node."""
    module = {"cat": "python_function"}
    events = [
        op("nn.Module: Linear_0", 0, 100, tid=1, **{}) | module,
        _seq("aten::addmm", 10, 50, 1, 5, 0),
        op("nn.Module: Linear_0", 0, 100, tid=2) | module,
        _seq("aten::addmm", 10, 50, 2, 5, 0),
        op("nn.Module: ReLU_0", 200, 100, tid=1) | module,
        _seq("aten::relu", 210, 50, 1, 6, 0),
        _seq("autograd::engine::evaluate_function: AddmmBackward0", 400, 40, 3, 5, 1),
        _seq("autograd::engine::evaluate_function: ReluBackward0", 500, 40, 3, 6, 1),
        launch(505, 5, correlation=9, tid=3),
        kernel("relu_bwd", 520, 7, correlation=9),
    ]
    view = module_view(load(write_trace(tmp_path / "t.json", events)))
    assert view.backward_unattributed == 1
    relu = _find(view.backward, "ReLU_0")
    assert relu.calls == 1 and relu.device_us == 7
    assert _find(view.backward, "Linear_0") is None


def test_backward_without_sequence_numbers_says_so(tmp_path):
    module = {"cat": "python_function"}
    events = [
        op("nn.Module: Linear_0", 0, 100) | module,
        op("aten::addmm", 10, 50),
        op("autograd::engine::evaluate_function: AddmmBackward0", 400, 40, tid=3),
    ]
    view = module_view(load(write_trace(tmp_path / "t.json", events)))
    assert view.backward == [] and "Sequence number" in view.backward_note
