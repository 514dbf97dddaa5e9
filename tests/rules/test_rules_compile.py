"""torch.compile rules on CPU traces compiled and recorded here, and on the corpus.

One module-scoped fixture compiles twice (about 20 s on a small CPU): a cold
run with a graph break and a shape change inside the profiled window
(aot_eager backend: fast, same Dynamo events), and an Inductor run warmed up
before profiling.
"""

from __future__ import annotations

import pytest

from kinetoscope.analysis.compile import compile_events, region_calls
from kinetoscope.rules.engine import run_rules
from kinetoscope.trace import load

from ..conftest import CPU_RECORDINGS, corpus
from ..torch_traces import profile_steps

torch = pytest.importorskip("torch")

XDIT = "gpu/tracelens_xdit_flux.1_aiter_sage__profile_trace_rank_0.json.gz"
SMALL = "gpu/tracelens_torch_compile_triton__trace.json.gz"
B200 = "gpu/tracelens_b200__eager_trace.json.gz"


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    base = tmp_path_factory.mktemp("compile")
    torch._dynamo.reset()

    def with_break(x):
        y = torch.sin(x) * 2
        torch._dynamo.graph_break()
        return torch.cos(y) + 1

    cold_fn = torch.compile(with_break, backend="aot_eager")
    # not warmed up: compiles in step 0, recompiles when the shape changes in step 2
    cold = profile_steps(
        base / "cold.json", lambda i: cold_fn(torch.randn(16 if i < 2 else 24, 8)), 4
    )

    def small(x):
        return torch.nn.functional.gelu(x) * 2

    warm_fn = torch.compile(small)
    x = torch.randn(8, 8)
    for _ in range(3):
        warm_fn(x)
    warm = profile_steps(base / "warm.json", lambda i: warm_fn(x), 3, warmup=1)

    def loss(x):
        return (x.sin() * 2).sum()

    grad_fn = torch.compile(loss, backend="aot_eager")
    xg = torch.randn(8, 8, requires_grad=True)
    grad_fn(xg).backward()
    grad = profile_steps(base / "grad.json", lambda i: grad_fn(xg).backward(), 2)
    torch._dynamo.reset()
    return {"cold": cold, "warm": warm, "grad": grad}


@pytest.fixture(scope="module")
def xdit():
    return load(corpus(XDIT))


def _findings(trace, rule_id):
    out = run_rules(trace, only=[rule_id])
    return [f for f in out.findings if f.id == rule_id]


def test_region_calls_parsed_from_cpu_trace(compiled):
    calls = region_calls(compiled["warm"])
    # frame ids count every frame Dynamo compiled in this process: compare, do not hard-code
    assert len(calls) == 3 and len({c.label for c in calls}) == 1 and calls[0].compile_id == 0
    assert [c.step for c in calls] == [1, 2, 3]
    assert all(c.graph_hash and c.cache_lookup >= 0 and c.lookup_us > 0 for c in calls)
    cold = region_calls(compiled["cold"])
    first, resumed = cold[0].frame, cold[1].frame  # the graph break starts a new frame
    assert resumed == first + 1
    assert [(c.frame - first, c.compile_id) for c in cold] == [
        (0, 0),
        (1, 0),
        (0, 0),
        (1, 0),
        (0, 1),
        (1, 1),
        (0, 1),
        (1, 1),
    ]


def test_compiled_region(compiled, xdit):
    (f,) = _findings(compiled["warm"], "compiled-region")
    assert f.measured == {"calls": 3, "distinct_regions": 1, "max_per_step": 1}
    assert "no sign of graph breaks" in f.explanation
    # training: autograd runs the compiled backward outside the region
    (g,) = _findings(compiled["grad"], "compiled-region")
    assert g.evidence[-1].text.startswith("2 CompiledFunctionBackward call(s)")
    (x,) = _findings(xdit, "compiled-region")
    assert x.measured["calls"] == 4 and x.evidence[0].step == 3
    assert (
        _findings(
            load(corpus("gpu/tiny_transformer_block_h100.pt.trace.json.gz")), "compiled-region"
        )
        == []
    )


def test_graph_break(compiled, xdit):
    (f,) = _findings(compiled["cold"], "graph-break")
    assert f.severity == "warn" and f.measured["max_regions_per_step"] == 2
    # steps 0 and 2 compile (first call, then a recompile for the new shape): their regions
    # are compilation's evidence; the break shows in steps 1 and 3, resumed inside the caller
    assert f.measured["resumed_inside"] == 2
    assert {e.step for e in f.evidence} == {1, 3}
    a, b = (f"{c.frame}/0" for c in region_calls(compiled["cold"])[:2])
    assert f.evidence[0].step == 1 and f"{a}, {b}" in f.evidence[0].text
    assert any(e.text.startswith(f"break between {a} and {b}") for e in f.evidence)
    # the same region called 4 times in one step is not a break
    assert _findings(xdit, "graph-break") == []
    assert _findings(compiled["warm"], "graph-break") == []


def test_recompile(compiled):
    (f,) = _findings(compiled["cold"], "recompile")
    assert f.severity == "warn" and f.measured["frames_recompiled_in_window"] == 2
    k = region_calls(compiled["cold"])[0].frame
    assert f.evidence[0].text == f"frame {k}: region {k}/0 -> {k}/1" and f.evidence[0].step == 2
    assert f.impact_us > 0  # the recompile's compile time, per step
    # b200 runs compilation #2 of its frame: recompiled before the window
    (b,) = _findings(load(corpus(B200)), "recompile")
    assert b.severity == "info" and "before the profiled window" in b.evidence[0].text
    assert _findings(load(corpus(SMALL)), "recompile") == []


def test_dynamo_guard_cost(compiled, xdit):
    (f,) = _findings(compiled["warm"], "dynamo-guard-cost")
    assert f.measured["share_of_host"] >= 0.05
    assert f.evidence[0].name == "TorchDynamo Cache Lookup"
    # xdit: 1.5 ms of guard checks in a 250 ms step
    assert _findings(xdit, "dynamo-guard-cost") == []


def test_compile_cpu_tax(compiled, xdit):
    (f,) = _findings(compiled["warm"], "compile-cpu-tax")
    assert f.severity == "warn" and f.measured["ratio"] > 1.0
    (b,) = _findings(load(corpus(B200)), "compile-cpu-tax")
    assert b.measured["wrapper_us"] == pytest.approx(559.6, abs=0.5)
    assert b.measured["ops_us"] == pytest.approx(74.4, abs=0.5)
    # xdit: the wrapper costs more than the ops, but 171 ms of device work hides it
    (x,) = _findings(xdit, "compile-cpu-tax")
    assert x.severity == "info" and x.impact_us == 0
    assert _findings(load(corpus(SMALL)), "compile-cpu-tax") == []


def test_compile_cpu_tax_leaves_out_a_cold_first_call(xdit):
    # a recording of the warm fixture (tests/data/cpu_recordings/README.md): region 2/0's
    # first call took 4,252 us (ops 4,102 us), its later calls 141 and 105 us
    recorded = load(CPU_RECORDINGS / "compile_cold_first_call.json")
    (f,) = _findings(recorded, "compile-cpu-tax")
    assert f.severity == "warn"
    assert f.evidence[0].text.startswith("2 region calls:")
    assert f.measured["ops_us"] == pytest.approx(32.8 + 41.2, abs=0.2)
    assert f.measured["ratio"] > 1.0
    left_out = [e for e in f.evidence if e.text.startswith("left out 1 cold first call")]
    assert len(left_out) == 1 and left_out[0].step == 1
    assert "of region 2/0 took 4.27 ms against a median of 147 us" in left_out[0].text
    # xdit's first call of region 0/0 is slower (2.21 ms) but under 2x the later median
    # (1.43 ms): all four calls are the steady tax, none is left out
    (x,) = _findings(xdit, "compile-cpu-tax")
    assert x.evidence[0].text.startswith("4 region calls:")
    assert x.measured["wrapper_us"] == pytest.approx(4841.8, abs=0.5)
    assert not any(e.text.startswith("left out") for e in x.evidence)


def test_compilation_in_window(compiled, xdit):
    cold = compiled["cold"]
    events = compile_events(cold)
    assert [cold.name(i) for i in events] == ["dynamo", "dynamo", "dynamo", "dynamo"]
    (f,) = _findings(cold, "compilation-in-window")
    assert f.severity in ("warn", "critical")
    assert "compile_id 0/0" in f.evidence[0].text and f.evidence[0].step == 0
    assert _findings(compiled["warm"], "compilation-in-window") == []
    assert _findings(xdit, "compilation-in-window") == []


def test_fusion_opportunity_on_eager_gpu_trace(xdit):
    # xdit runs eager GELU (tanh form) as 8 separate elementwise kernels, 24 times
    (f,) = _findings(xdit, "fusion-opportunity")
    assert f.evidence[0].text.startswith(
        "aten::mul -> aten::pow -> aten::mul -> aten::add -> aten::mul -> aten::tanh"
    )
    assert f.impact_us > 10
    assert (
        _findings(
            load(corpus("gpu/tiny_transformer_block_h100.pt.trace.json.gz")), "fusion-opportunity"
        )
        == []
    )


def test_fusion_opportunity_not_checked_on_cpu(compiled):
    out = run_rules(compiled["warm"], only=["fusion-opportunity"])
    assert out.findings == [] and out.not_checked[0].reason == "no device activity recorded"


def test_compiled_function_without_regions(tmp_path):
    """A torch 2.0-style trace: only AOTAutograd's CompiledFunction marks compiled code."""
    from ..conftest import op, write_trace

    path = write_trace(
        tmp_path / "old.json",
        [
            op("ProfilerStep#1", 0, 100, cat="user_annotation"),
            op("CompiledFunction", 10, 30),
            op("aten::sin", 12, 5),
            op("CompiledFunctionBackward", 60, 20),
        ],
    )
    (f,) = _findings(load(path), "compiled-region")
    assert f.measured == {"forward_calls": 1, "backward_calls": 1}
    assert f.evidence[0].name == "CompiledFunction" and f.evidence[0].step == 1
    assert _findings(load(path), "graph-break") == []


def test_separately_compiled_functions_are_not_called_breaks(tmp_path):
    """Two compiled frames one after the other (not nested): maybe breaks, maybe two functions."""
    from ..conftest import op, write_trace

    events = [op("ProfilerStep#1", 0, 200, cat="user_annotation")]
    for k, start in ((0, 10), (1, 100)):
        events += [
            op("TorchDynamo Cache Lookup", start, 5),
            op(f"Torch-Compiled Region: {k}/0", start + 6, 50),
            op("aten::mm", start + 20, 20),
        ]
    events.append(op("aten::relu", 70, 10))
    (f,) = _findings(load(write_trace(tmp_path / "two.json", events)), "graph-break")
    assert f.severity == "info" and f.measured["resumed_inside"] == 0
    assert "aten::relu x1" in f.evidence[1].text


def test_fusion_silent_on_fills_and_gradient_accumulation():
    # param_linear zeroes 42 gradients with back-to-back fill kernels (independent writes),
    # and its backward's "add_, add_, threshold_backward" are two AccumulateGrad add_s (each
    # into a different .grad) before a ReLU backward: no tensor flows through them
    trace = load(corpus("gpu/param_linear_train_2080ti.json.gz"))
    assert _findings(trace, "fusion-opportunity") == []


def test_fusion_patterns_collapse_repeats_and_stay_short():
    from kinetoscope.rules.fusion import _pattern

    assert _pattern(("aten::add_", "aten::add_", "aten::gelu")) == "aten::add_ x2 -> aten::gelu"
    # an optimizer's elementwise chain (resnet50_dataloader_workers0: 481 ops) reads as one line
    chain = ("aten::add_",) + ("aten::mul_", "aten::add_", "aten::add_") * 160
    assert _pattern(chain) == "(aten::add_ -> aten::mul_ -> aten::add_) x160 -> aten::add_"
    assert (
        _pattern(tuple("abcdefghijk")) == "a -> b -> c -> d -> e -> f -> g -> ... (11 ops in all)"
    )


def test_region_evidence_without_steps_names_no_step():
    (f,) = _findings(load(corpus(SMALL)), "compiled-region")
    assert f.evidence[0].text.startswith("1 region call of 0/0, ")
    assert f.title.startswith("1 torch.compile region call, 1 distinct region")


def test_compilation_in_window_ranks_first_and_silences_its_evidence(compiled):
    # the cold trace compiles in steps 0 and 2: every other finding is read after it, and its
    # compiling steps are not reported as graph breaks or wrapper tax
    report = run_rules(compiled["cold"])
    assert report.findings[0].id == "compilation-in-window"
    assert report.findings[0].severity == "critical"
    for f in report.findings:
        if f.id in ("graph-break", "compile-cpu-tax"):
            assert not {e.step for e in f.evidence} & {0, 2}


def test_no_cuda_graph_advice_on_host_only_compiled_traces(compiled):
    # CPU traces of compiled functions: reduce-overhead (CUDA graphs) does not exist there
    for trace in compiled.values():
        for f in run_rules(trace).findings:
            assert "reduce-overhead" not in f.suggestion and "CUDA graph" not in f.suggestion
