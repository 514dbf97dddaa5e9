"""The MoE view (analysis/moe.py, moe_layers.py, moe_names.py) on real traces and built ones.

Expectations come from reading the traces:

- switch_transformer_moe_a100 (CodingPlatelets/SwitchTransformers): each SwitchGate
  runs aten::linear [8, 128, 1024] x [4, 1024] -> aten::softmax [8, 128, 4] ->
  aten::topk [8, 128, 4]; then each of the 4 experts' FeedForward runs aten::linear
  [8, 128, 1024] x [4096, 1024] and [8, 128, 4096] x [1024, 4096] on the full batch
  (python stacks: switch_transformers/model.py(165) <listcomp>), 10 such layers. So
  dispatch is dense, 8 x 128 = 1,024 tokens per expert, and the 80 expert addmm calls
  launch one sgemm each.
- tracelens_b200__eager_trace: vLLM gpt-oss-style serving step, 36 `vllm::moe_forward`
  calls, each launching three `moe::dev::routing::*` kernels (TensorRT-LLM trtllm-gen
  routing, FlashInfer `trtllm_fp4_block_scale_moe`), two `bmm_*E2m1*` batched GEMMs,
  a quantize kernel and `moe::dev::finalize::finalizeKernelVecLoad`.
- moe_traces.py's recordings (see that module).
"""

from __future__ import annotations

import json

import pytest

from kinetoscope.analysis.moe import moe_view
from kinetoscope.analysis.moe_names import DISPATCH, EXPERT_GEMM, PERMUTATION, ROUTING, part_of_name
from kinetoscope.trace import load

from ..conftest import corpus, kernel, launch, op, write_trace
from ..moe_traces import moe_traces  # noqa: F401 - fixture


def _part(view, name):
    return next((p for p in view.parts if p.part == name), None)


def test_switch_transformer_is_a_dense_moe():
    view = moe_view(load(corpus("gpu/switch_transformer_moe_a100.json.gz")))
    assert view is not None and view.dispatch == "dense"
    assert len(view.layers) == 10
    for layer in view.layers:
        assert (layer.tokens, layer.experts, layer.hidden) == (8 * 128, 4, 1024)
        assert layer.rows == (1024,) * 4
        assert layer.imbalance is None
    gemms = _part(view, EXPERT_GEMM)
    assert gemms.kernels == 80 and gemms.ops == 80
    assert "1,024 tokens" in view.dispatch_evidence


def test_vllm_fused_moe_is_sparse_and_hides_loads():
    view = moe_view(load(corpus("gpu/tracelens_b200__eager_trace.json.gz")))
    assert view is not None
    assert view.dispatch == "sparse (fused)" and view.fused
    assert view.layers == []  # no aten expert linears: loads are inside the kernels
    assert view.scope_ops == ["vllm::moe_forward"]
    assert _part(view, ROUTING).kernels == 3 * 36
    assert _part(view, PERMUTATION).kernels == 36  # finalize: unpermute + weighted sum
    assert _part(view, EXPERT_GEMM).kernels == 2 * 36
    assert all(name.startswith("bmm_") for name, _ in _part(view, EXPERT_GEMM).names)


@pytest.mark.parametrize(
    "name",
    [
        "gpu/tracelens_h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",  # topk in its sampler
        "gpu/tracelens_mi300__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
        "gpu/tracelens_h100__gaunernst_bert-small-uncased__1016001.json.gz",
        "gpu/tracelens_sglang_decode__sglang_Qwen3-8B_decode.json.gz",
        "gpu/tiny_transformer_block_h100.pt.trace.json.gz",
        "gpu/resnet_train_ns.pt.trace.json.gz",
        "gpu/tracelens_mi300__resnet_act_checkpoint.json.gz",
    ],
)
def test_dense_models_have_no_moe_view(name):
    assert moe_view(load(corpus(name))) is None


def test_recorded_dense_dispatch(moe_traces):  # noqa: F811
    view = moe_view(load(moe_traces["moe_dense"]))
    assert view is not None and view.dispatch == "dense"
    assert len(view.layers) == 3  # one per profiled step
    assert all(layer.rows == (64,) * 4 and layer.top_k == 1 for layer in view.layers)
    assert _part(view, EXPERT_GEMM).ops == 3 * 4 * 2  # up and down linear per expert
    assert _part(view, EXPERT_GEMM).host_us > 0


def test_recorded_topk_dispatch_and_imbalance(moe_traces):  # noqa: F811
    loads = json.loads(moe_traces["loads"].read_text())  # the script's own count
    assert sum(loads) == 64 * 2 and max(loads) > 64 * 2 / 4  # the bias makes it uneven
    trace = load(moe_traces["moe_topk"])
    view = moe_view(trace)
    assert view is not None and view.dispatch == "sparse"
    assert len(view.layers) == 3
    for layer in view.layers:
        assert layer.top_k == 2 and layer.experts == 4 and layer.tokens == 64
        assert layer.rows == tuple(n for n in loads if n)  # experts with no token never ran
        assert sorted(layer.loads) == sorted(loads)
        assert layer.imbalance == pytest.approx(max(loads) / (64 * 2 / 4))
        moves = {trace.name(i) for i in layer.permutation}
        assert {"aten::where", "aten::index_select", "aten::index_add_"} <= moves
    assert _part(view, PERMUTATION).ops == sum(len(layer.permutation) for layer in view.layers)


def test_recorded_topk_head_is_not_moe(moe_traces):  # noqa: F811
    # linear -> softmax -> topk over 10 classes (the gate's shape), then no experts
    trace = load(moe_traces["mlp_topk_head"])
    topk = [i for i in range(len(trace)) if trace.name(i) == "aten::topk"]
    assert len(topk) == 3  # the gate-like pattern is there, once a step
    assert moe_view(trace) is None


# DeepEP kernels as csrc/kernels/intranode.cu and internode_ll.cu declare them
DEEP_EP = (
    "void deep_ep::intranode::notify_dispatch<8>(int const*, int*, int, int const*)",
    "void deep_ep::intranode::dispatch<8, 768, 6144>(int4*, float*, int*, long*)",
    "void deep_ep::intranode::cached_notify_combine<8>(void**, int*, int, int)",
    "void deep_ep::internode_ll::combine<false, 7168>(void*, void*, int*, void const*)",
)


def _built(tmp_path, names, op_name="aten::empty"):
    events = []
    for k, name in enumerate(names):
        t = 100 + 100 * k
        events += [
            op(op_name, t, 50),
            launch(t + 10, 5, correlation=k + 1),
            kernel(name, t + 20, 30, correlation=k + 1),
        ]
    return load(write_trace(tmp_path / "t.json", events))


def test_deep_ep_kernels_are_dispatch_combine(tmp_path):
    assert {part_of_name(n) for n in DEEP_EP} == {DISPATCH}
    assert part_of_name("void deep_ep::layout::get_dispatch_layout<256, 32, 8>(long const*)") == (
        ROUTING
    )
    view = moe_view(_built(tmp_path, DEEP_EP))
    assert view is not None and _part(view, DISPATCH).kernels == 4


def test_all_to_all_alone_is_not_moe(tmp_path):
    names = ["ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"]
    assert moe_view(_built(tmp_path, names, op_name="c10d::alltoall_base_")) is None


def test_all_to_all_counts_beside_a_grouped_gemm(tmp_path):
    events = [
        op("c10d::alltoall_base_", 100, 50),
        launch(110, 5, correlation=1),
        kernel("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", 120, 30, correlation=1),
        op("aten::empty", 200, 50),
        launch(210, 5, correlation=2),
        kernel("fused_moe_kernel", 220, 30, correlation=2),  # vLLM's Triton kernel name
    ]
    view = moe_view(load(write_trace(tmp_path / "t.json", events)))
    assert view is not None
    assert _part(view, DISPATCH).kernels == 1 and _part(view, EXPERT_GEMM).kernels == 1
