"""Dispatch-chain rules on CPU traces recorded here with the installed torch, and on the corpus."""

from __future__ import annotations

import pytest

from kinetoscope.analysis.chain import build_tree, chain_text, select_device_events
from kinetoscope.errors import UsageError
from kinetoscope.rules.engine import run_rules
from kinetoscope.trace import load

from ..conftest import corpus
from ..torch_traces import profile_steps

torch = pytest.importorskip("torch")


def _record(path, fn):
    """Profile `fn()` for 3 ProfilerSteps on the CPU, one warmup step before."""
    return profile_steps(path, lambda _i: fn(), steps=3, warmup=1)


@pytest.fixture(scope="module")
def eager(tmp_path_factory):
    """Three small eager workloads, each recorded in its own trace."""
    base = tmp_path_factory.mktemp("dispatch")
    x, w, b = torch.randn(64, 64), torch.randn(64, 64), torch.randn(64)
    lin = torch.nn.Linear(64, 64)
    xb = torch.randn(4, 64, 64)

    def mm_add():
        return x @ w + b

    def metadata():
        y = x
        for _ in range(20):
            y = y.t().view(64, 64).transpose(0, 1).reshape(64, 64).unsqueeze(0).squeeze(0)
        return y + 1

    with torch.no_grad():
        return {
            "linear": _record(base / "linear.json", lambda: lin(x)),
            "mm_add": _record(base / "mm_add.json", mm_add),
            "bmm": _record(base / "bmm.json", lambda: xb @ xb),
            "folded": _record(base / "folded.json", lambda: xb @ w),
            "metadata": _record(base / "metadata.json", metadata),
        }


def _findings(trace, rule_id):
    return [f for f in run_rules(trace, only=[rule_id]).findings if f.id == rule_id]


def test_addmm_from_linear_is_info(eager):
    (f,) = _findings(eager["linear"], "addmm-epilogue")
    assert f.severity == "info" and f.measured["addmm_calls"] == 3
    assert any(e.name == "aten::addmm" for e in f.evidence)


def test_mm_then_add_suggests_addmm(eager):
    (f,) = _findings(eager["mm_add"], "addmm-epilogue")
    assert f.severity == "warn" and f.measured["mm_add_pairs"] == 3
    assert f.evidence[0].name == "aten::add" and f.evidence[0].step is not None
    assert f.impact_us > 0  # the add's CPU time per step on a host-only trace


def test_addmm_silent_without_gemm(eager):
    assert _findings(eager["metadata"], "addmm-epilogue") == []


def test_matmul_dispatch_batched_vs_2d(eager):
    (bmm,) = _findings(eager["bmm"], "matmul-dispatch")
    assert bmm.measured == {"aten::bmm": 3}
    assert "batched path" in bmm.explanation
    # 3D @ 2D: matmul folds the batch into rows and runs one mm, with reshapes around it
    (folded,) = _findings(eager["folded"], "matmul-dispatch")
    assert folded.measured == {"aten::mm": 3}
    assert "_unsafe_view" in folded.evidence[0].text or "reshape" in folded.evidence[0].text
    (mm,) = _findings(eager["mm_add"], "matmul-dispatch")
    assert mm.measured == {"aten::mm": 3}
    assert _findings(eager["linear"], "matmul-dispatch") == []  # linear goes straight to addmm


def test_metadata_only_ops_counted_per_step(eager):
    (f,) = _findings(eager["metadata"], "metadata-only-ops")
    # 20 iterations x 6 view-like calls per step, nothing else but one add
    assert f.measured["calls_per_step"] == pytest.approx(120)
    assert f.measured["share_of_host"] >= 0.05
    assert "aten::transpose" in f.evidence[0].text
    assert [e.step for e in f.evidence[1:]] == [1, 2, 3]


def test_metadata_only_ops_on_corpus():
    # BERT inference: 155 pure view/transpose calls, 12% of host busy time
    trace = load(corpus("gpu/tracelens_h100__gaunernst_bert-small-uncased__1016001.json.gz"))
    (f,) = _findings(trace, "metadata-only-ops")
    assert f.measured["share_of_host"] == pytest.approx(0.124, abs=0.005)
    # ResNet training: 0.8% of host time, under the 5% threshold
    assert (
        _findings(load(corpus("gpu/resnet_train_ns.pt.trace.json.gz")), "metadata-only-ops") == []
    )


def test_matmul_and_addmm_on_gpu_corpus():
    trace = load(corpus("gpu/sampled_rank1.json.gz"))
    (f,) = _findings(trace, "addmm-epilogue")
    assert f.severity == "warn" and f.measured["mm_add_pairs"] == 2
    (m,) = _findings(trace, "matmul-dispatch")
    assert m.measured == {"aten::mm": 72, "aten::bmm": 13}
    silent = load(corpus("gpu/tracelens_mi210__gpu_only_trace.json.gz"))
    assert _findings(silent, "matmul-dispatch") == [] and _findings(silent, "addmm-epilogue") == []


def test_chain_reconstruction_and_selection():
    trace = load(corpus("gpu/tiny_transformer_block_h100.pt.trace.json.gz"))
    picked = select_device_events(trace, kernel="softmax", step=2)
    assert len(picked) == 1
    text = chain_text(trace, int(picked[0]))
    assert text.startswith("ProfilerStep#2 > Model Forward Pass > Self-Attention > ")
    assert "aten::_softmax > cudaLaunchKernel > " in text
    tree = build_tree(trace, select_device_events(trace, op="Self-Attention", step=2))
    (step_node,) = tree.children.values()
    assert trace.name(step_node.index) == "ProfilerStep#2"
    assert step_node.kernels == tree.kernels and step_node.device_us == pytest.approx(
        tree.device_us
    )
    with pytest.raises(UsageError):
        select_device_events(trace, kernel="(")
    with pytest.raises(UsageError):
        select_device_events(trace, step=42)


def test_addmm_bias_copy_on_gpu_corpus():
    # MI250: aten::addmm runs a copy kernel (the bias seeding the output), then the GEMM
    trace = load(corpus("gpu/amd_mi250_minitoy_train.json.gz"))
    (f,) = _findings(trace, "addmm-epilogue")
    assert f.severity == "info" and f.measured == {"addmm_calls": 1, "bias_copies": 1}
    assert "direct_copy_kernel_cuda" in f.explanation
    assert f.evidence[0].step == 1


def test_metadata_only_counts_outermost_views_and_skips_copying_reshapes(tmp_path):
    from kinetoscope.analysis.dispatch import metadata_only

    from ..conftest import op, write_trace

    events = [
        op("ProfilerStep#1", 0, 100, cat="user_annotation"),
        op("aten::transpose", 1, 10),  # pure: counted once, with its as_strided inside
        op("aten::as_strided", 2, 3),
        op("aten::reshape", 20, 20),  # copies: not metadata-only
        op("aten::clone", 22, 15),
        op("aten::_unsafe_view", 38, 1),  # a view after the copy: pure on its own
        op("aten::view", 50, 2),
    ]
    trace = load(write_trace(tmp_path / "views.json", events))
    assert sorted(trace.name(i) for i in metadata_only(trace)) == [
        "aten::_unsafe_view",
        "aten::transpose",
        "aten::view",
    ]
