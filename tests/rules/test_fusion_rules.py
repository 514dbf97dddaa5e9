"""fusion-opportunity and optimizer-unfused on real traces (issue 10, class 3): parameter
updates (an optimizer's per-parameter loop, AccumulateGrad, `_foreach_*`) are not a chain of
one tensor; the optimizer's loop gets its own finding."""

from __future__ import annotations

import pytest

from kinetoscope.analysis.fusion import elementwise_chains
from kinetoscope.analysis.optimizer import optimizer_steps, parameter_update
from kinetoscope.rules.engine import run_rules
from kinetoscope.trace import Cat, load

from ..conftest import corpus
from ..torch_traces import profile_steps

torch = pytest.importorskip("torch")

WORKERS0 = "gpu/resnet50_dataloader_workers0.pt.trace.json.gz"
NCOMPASS = "gpu/ncompass_train_with_stack_h100nvl.pt.trace.json.gz"
ALEXNET = "gpu/alexnet_train.json.gz"


def _findings(trace, rule_id):
    out = run_rules(trace, only=[rule_id])
    return [f for f in out.findings if f.id == rule_id], out.not_checked


def _train(tmp_path, name: str, foreach: bool):
    """4 Linear layers (8 parameters), Adam, 2 micro-batches accumulated per step."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Linear(32, 32) for _ in range(4)])
    opt = torch.optim.Adam(model.parameters(), foreach=foreach)
    x = torch.randn(8, 32)

    def step(_):
        for _ in range(2):  # grad accumulation: the second backward adds into .grad
            model(x).sum().backward()
        opt.step()
        opt.zero_grad()

    return profile_steps(tmp_path / f"{name}.json", step, steps=3, warmup=1)


@pytest.fixture(scope="module")
def adam_loop(tmp_path_factory):
    return _train(tmp_path_factory.mktemp("adam"), "loop", foreach=False)


def test_optimizer_unfused_fires_on_adam_loop(adam_loop):
    # Adam without foreach, per parameter: step += 1 (add_), exp_avg.lerp_, exp_avg_sq.mul_
    # and addcmul_, denom sqrt, div and add_(eps), param.addcdiv_: 8 ops x 8 parameters
    calls = optimizer_steps(adam_loop)
    assert [c.optimizer for c in calls] == ["Adam"] * 3
    assert all(len(c.per_parameter) == 64 and not len(c.batched) for c in calls)
    (f,), _ = _findings(adam_loop, "optimizer-unfused")
    assert f.measured["per_parameter_ops"] == 3 * 64 and f.measured["optimizer_calls"] == 3
    assert "foreach=True or fused=True" in f.title and f.impact_us > 0
    assert "launches_per_step" not in f.measured  # host-only: no device numbers claimed


def test_optimizer_unfused_silent_with_foreach(tmp_path):
    trace = _train(tmp_path, "foreach", foreach=True)
    calls = optimizer_steps(trace)
    assert calls and all(len(c.batched) for c in calls)
    assert _findings(trace, "optimizer-unfused")[0] == []


def test_parameter_updates_are_never_chain_links(adam_loop):
    # every op of the optimizer loop, zero_grad and AccumulateGrad (the accumulating add_ of
    # the second micro-batch) is a parameter update; the forward's ops are not
    t = adam_loop
    names = {
        t.name(i) for i in range(len(t)) if t.cat[i] == int(Cat.CPU_OP) and parameter_update(t, i)
    }
    assert {"aten::addcdiv_", "aten::lerp_", "aten::add_"} <= names
    under_accumulate = [
        i
        for i in range(len(t))
        if t.name(i) == "aten::add_" and "AccumulateGrad" in t.name(int(t.parent[i]))
    ]
    assert under_accumulate and all(parameter_update(t, i) for i in under_accumulate)
    forward = [i for i in range(len(t)) if t.name(i) == "aten::addmm"]
    assert forward and not any(parameter_update(t, i) for i in forward)
    # CPU traces have no kernels: the rule says so instead of guessing
    found, skipped = _findings(t, "fusion-opportunity")
    assert found == [] and skipped[0].reason == "no device activity recorded"


def test_resnet_chains_exclude_accumulate_grad_and_optimizer():
    # ResNet-50 with SGD(momentum) without foreach: 161 parameters x (add_, mul_, add_) per
    # step, and AccumulateGrad add_s in backward. Before, 612 of 714 "chains" were these
    trace = load(corpus(WORKERS0))
    chains = elementwise_chains(trace)
    ops = [int(trace.op_of[k]) for run in chains for k in run]
    assert ops and not any(parameter_update(trace, o) for o in ops)
    # what remains is data flow: the residual add_ feeding the ReLU's clamp_min on one shape
    pairs = {
        (trace.name(int(trace.op_of[r[0]])), trace.name(int(trace.op_of[r[1]]))) for r in chains
    }
    assert ("aten::add_", "aten::clamp_min") in pairs
    (f,), _ = _findings(trace, "fusion-opportunity")
    assert "AccumulateGrad" not in " ".join(e.text for e in f.evidence)
    (o,), _ = _findings(trace, "optimizer-unfused")
    assert o.measured["per_parameter_ops"] == 6 * 483 and o.measured["launches_per_step"] == 483


def test_optimizer_unfused_silent_on_foreach_adam():
    # the H100 training step uses Adam's default foreach path: _foreach_add_/lerp_/... ops
    trace = load(corpus(NCOMPASS))
    assert all(len(c.batched) for c in optimizer_steps(trace))
    assert _findings(trace, "optimizer-unfused")[0] == []


def test_fusion_without_shapes_falls_back_to_order():
    # AlexNet (no record_shapes): the conv's bias add_ is read back by relu_'s clamp_min_
    (f,), _ = _findings(load(corpus(ALEXNET)), "fusion-opportunity")
    assert f.evidence[0].text.startswith("aten::add_ -> aten::clamp_min_")
