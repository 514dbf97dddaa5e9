"""Leftovers of issues 19 and 20: one sync wait is one finding, advice never tells a run to
do what it already does, CPU runs are spoken of as CPU runs.

Expectations come from reading the traces: the SGLang decode trace holds the host 463 ms
of its 474 ms in one blocking `hipMemcpyWithStream` while every device stream idles (the
device runs 9.8 ms in all): a wait on something outside the trace (external-wait), and
host-sync names that copy; DLRM rank 1 blocks 7.51 ms of its one step in 8
`cudaStreamSynchronize` calls, nearly all of it while NCCL and compute kernels run: the
device's time (mixed), and host-sync names the 8 sites with only their idle time as a
saving.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import kinetoscope
from kinetoscope.rules.engine import run_rules

from ..conftest import corpus, kernel, launch, op, write_trace
from ..torch_traces import torch_traces  # noqa: F401 - the fixture

WAITING = [
    ("gpu/tracelens_sglang_decode__sglang_Qwen3-8B_decode.json.gz", "external-wait"),
    ("multirank/dlrm_8ranks/worker1_step_12.1694128201556.pt.trace.json.gz", "mixed"),
]


@pytest.mark.parametrize(("name", "regime"), WAITING, ids=lambda n: n.split("/")[-1][:30])
def test_a_wait_on_a_busy_device_or_elsewhere_is_no_sync_bound(name, regime):
    report = kinetoscope.explain(corpus(name))
    assert report.verdict.regime == regime
    (sync,) = [f for f in report.findings if f.id == "host-sync"]
    # the sites are named, but a sync saves at most its own stall: the time it blocked
    # with every device stream idle and nothing outside the trace to wait for
    stall = report.verdict.account_us["sync_stall"]
    assert sync.measured["stall_us"] <= stall + 1e-3
    assert sync.impact_us <= stall + 1e-3
    assert sync.measured["blocked_us"] > 10 * sync.measured["stall_us"]


def test_host_sync_alone_is_not_merged():
    # FLUX on MI300X: compute-bound, with a few syncs host-sync reports; no sync-bound
    report = kinetoscope.explain(
        corpus("gpu/tracelens_xdit_flux.1_aiter_sage__profile_trace_rank_0.json.gz")
    )
    (f,) = [f for f in report.findings if f.id == "host-sync"]
    assert f.merged == [] and report.verdict.regime == "compute-bound"


def _loader_steps(tmp_path, iterator: str):
    """3 CPU steps, each 8 ms of 9 ms inside the DataLoader's __next__ (`iterator`)."""
    events = []
    for n in range(3):
        base = n * 10_000
        events.append(op(f"ProfilerStep#{n + 1}", base, 9_000, cat="user_annotation"))
        events.append(op(f"enumerate(DataLoader)#{iterator}.__next__", base + 1, 8_000))
        events.append(op("aten::mm", base + 8_100, 800))
    return kinetoscope.load(write_trace(tmp_path / "loader.json", events))


def test_data_bound_with_workers_is_not_told_to_add_workers(tmp_path):
    trace = _loader_steps(tmp_path, "_MultiProcessingDataLoaderIter")
    (f,) = run_rules(trace, only=["data-bound"]).findings
    assert "already loads in worker processes" in f.suggestion
    assert "num_workers > 0)" in f.suggestion  # says why, not "add workers"
    assert "Load batches in background processes" not in f.suggestion
    assert "Workers pay off" not in f.suggestion
    assert "pin_memory" not in f.suggestion  # a CPU-only run


def test_data_bound_without_workers_is_told_to_add_workers(tmp_path):
    trace = _loader_steps(tmp_path, "_SingleProcessDataLoaderIter")
    (f,) = run_rules(trace, only=["data-bound"]).findings
    assert "Load batches in background processes" in f.suggestion
    assert "already loads in worker processes" not in f.suggestion
    # what it is not sure about: workers can be slower (measured on the H100 machine)
    assert "Workers pay off when a batch costs more to build" in f.suggestion
    assert "kinetoscope tune" in f.suggestion


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        # Torch-Compiled Region / CompiledFxGraph rows; overhead-bound
        ("gpu/tracelens_b200__eager_trace.json.gz", "overhead-bound"),
        # triton_poi_* kernels from Inductor beside eager elementwise chains
        (
            "gpu/tracelens_xdit_flux.1_aiter_sage__profile_trace_rank_0.json.gz",
            "fusion-opportunity",
        ),
    ],
    ids=lambda v: v.split("/")[-1][:30],
)
def test_a_compiled_run_is_not_told_to_compile(name, rule):
    report = kinetoscope.explain(corpus(name))
    (f,) = [f for f in report.findings if f.id == rule]
    assert "already uses torch.compile" in f.suggestion
    assert "(torch.compile)" not in f.suggestion and "torch.compile the module" not in f.suggestion


@pytest.mark.parametrize(
    ("name", "rule", "advice"),
    [
        # ResNet-50 eager, data-bound: eager elementwise chains (BN -> ReLU ...), no compile
        (
            "gpu/resnet50_dataloader_workers0.pt.trace.json.gz",
            "fusion-opportunity",
            "torch.compile the module",
        ),
        # a transformer block's eager steps on an H100: overhead-bound, no compile event
        (
            "gpu/tiny_transformer_block_h100.pt.trace.json.gz",
            "overhead-bound",
            "fuse operations (torch.compile)",
        ),
    ],
    ids=lambda v: v.split("/")[-1][:30],
)
def test_an_eager_run_is_told_to_compile(name, rule, advice):
    report = kinetoscope.explain(corpus(name))
    (f,) = [f for f in report.findings if f.id == rule]
    assert advice in f.suggestion
    assert "already uses torch.compile" not in f.suggestion


def _summary_text(path) -> str:
    import io

    from rich.console import Console

    from kinetoscope.analysis.summary import summarize
    from kinetoscope.pipeline.summary_data import summary_document
    from kinetoscope.report.summary_view import render_summary

    out = io.StringIO()
    summary = summarize(kinetoscope.load(path))
    render_summary(summary_document(summary), Console(file=out, width=200, color_system=None))
    return out.getvalue(), summary


def test_summary_calls_a_cpu_run_a_cpu_run(torch_traces):  # noqa: F811
    # matmul 64x64 + Linear on the CPU: aten::mm / addmm are math ops with self time
    text, summary = _summary_text(torch_traces["warm"])
    share = summary.metrics["compute_share"]
    assert share > 0
    (line,) = [ln for ln in text.splitlines() if ln.startswith("device ")]
    assert "CPU only: no device lane" in line and f"compute {100 * share:.1f}%" in line
    assert "host-only" not in line


def test_summary_names_the_gpu_of_a_gpu_run():
    text, _ = _summary_text(corpus("gpu/simple_add_a100.json.gz"))
    (line,) = [ln for ln in text.splitlines() if ln.startswith("device ")]
    assert "A100" in line and "CPU only" not in line


def test_call_count_on_a_cpu_run_speaks_of_no_kernel_launch(torch_traces):  # noqa: F811
    # 150 aten::add per step on 8-element tensors, CPU only
    (f,) = run_rules(kinetoscope.load(torch_traces["loop"]), only=["call-count"]).findings
    assert "kernel launch" not in f.explanation
    assert "the framework code around the op" in f.explanation


def test_call_count_on_a_gpu_run_names_the_kernel_launch():
    # ResNet-50 with 4 workers on a GPU: call-count fires on the many small ops
    report = kinetoscope.explain(corpus("gpu/resnet50_dataloader_workers4.pt.trace.json.gz"))
    (f,) = [f for f in report.findings if f.id == "call-count"]
    assert "a kernel launch" in f.explanation


def _tune_reason(regime, gpu, **shares):
    from kinetoscope.tune.knobs import Facts, choose

    facts = Facts(regime, shares, 0.93, gpu, "cuda" if gpu else "cpu", 8)
    plans, skipped = choose(facts, {"compile": None, "dtype": "fp32", "tf32": False})
    return " ".join(p.why for p in plans) + " " + " ".join(why for _, why in skipped)


def test_tune_gives_a_cpu_run_its_compute_share():
    text = _tune_reason("compute-bound", False, compute_share=0.97, other_share=0.02)
    assert "CPU compute 97% of the window" in text and "device busy" not in text


def test_tune_gives_a_gpu_run_its_device_share():
    text = _tune_reason("compute-bound", True, dispatch_share=0.05)
    assert "device busy 93% of host time" in text


def _decode_step(tmp_path, copy: str):
    """One SGLang decode step: a 500 us kernel, then a `copy` runtime call from 50 us to 600
    us whose device copy (Device -> Pageable) runs after the kernel, at 505-515 us."""
    memcpy = kernel("Memcpy DtoH (Device -> Pageable)", 505, 10, 2)
    memcpy["cat"] = "gpu_memcpy"
    events = [
        op("step[DECODE bs=8]", 0, 700, cat="user_annotation"),
        launch(5, 5, 1),
        kernel("decode_kernel", 10, 495, 1),
        launch(50, 550, 2, name=copy),
        memcpy,
    ]
    return kinetoscope.load(write_trace(tmp_path / "decode.json", events))


def test_a_pass_counts_a_blocking_copy_of_any_name(tmp_path):
    # cudaMemcpyAsync into pageable memory returns only once the copy is done (CUDA's "API
    # synchronization behavior"): analysis.blocking counts it, so the pass does
    from kinetoscope.analysis.llm import llm_view

    (p,) = llm_view(_decode_step(tmp_path, "cudaMemcpyAsync")).passes
    assert p.phase == "decode" and p.blocked_us == pytest.approx(550)


def test_a_pass_counts_no_launch_as_blocking(tmp_path):
    from kinetoscope.analysis.llm import llm_view

    trace = _decode_step(tmp_path, "cudaMemcpyAsync")
    trace_path = trace.path
    # the same step with the copy into pinned memory: an asynchronous copy, no wait
    text = Path(trace_path).read_text().replace("Pageable", "Pinned")
    pinned = tmp_path / "pinned.json"
    pinned.write_text(text)
    (p,) = llm_view(kinetoscope.load(pinned)).passes
    assert p.blocked_us == 0


def _ranks_html(tmp_path, llm: bool) -> str:
    from kinetoscope.ranks.multirank import explain_ranks

    from ..analysis.test_llm import _vllm_piecewise_trace

    folder = tmp_path / ("tp" if llm else "dlrm")
    folder.mkdir()
    if llm:  # rank 1's decode kernels take 110 us instead of 100: slowest in every decode
        for r in range(2):
            _vllm_piecewise_trace(folder, 300.0, f"rank{r}.json", 110.0 if r == 1 else 100.0, r)
    else:
        for r in range(2):
            name = next(corpus("multirank/dlrm_8ranks").glob(f"worker{r}_*.json.gz"))
            (folder / name.name).write_bytes(name.read_bytes())
    return explain_ranks([folder], jobs=1, config={}, fmt="html")


def test_the_ranks_page_lines_up_llm_passes(tmp_path):
    html = _ranks_html(tmp_path, llm=True)
    assert "<h2>LLM passes across ranks</h2>" in html
    assert "10 passes lined up by order across ranks 0, 1; rank 1 is the slowest in 9" in html
    assert "<th>slowest rank</th>" in html and "<td>decode</td>" in html


def test_the_ranks_page_of_training_ranks_has_no_llm_passes(tmp_path):
    html = _ranks_html(tmp_path, llm=False)
    assert "<h2>Ranks</h2>" in html and "LLM passes across ranks" not in html


# ---- chain / memory / table --format json: the data the MCP tools return -------------

MOE = "gpu/switch_transformer_moe_a100.json.gz"  # profile_memory: [memory] events
RESNET = "gpu/resnet_train_ns.pt.trace.json.gz"


def _cli_json(*args: str):
    import json

    from typer.testing import CliRunner

    from kinetoscope.cli import app

    done = CliRunner().invoke(app, list(args), prog_name="kinetoscope")
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout)


def _tool_json(data):
    """What the MCP server sends: the tool's data through JSON."""
    import json

    from kinetoscope.formatting.jsontext import dumps

    return json.loads(dumps(data))


def test_chain_json_is_the_mcp_chain_answer():
    from kinetoscope.agent import tools

    path = corpus(RESNET)
    cli = _cli_json("chain", str(path), "--format", "json", "--limit", "3", "--op", "conv")
    tool = tools.chain(path.parent, path.name, op="conv", limit=3)
    assert cli == _tool_json(tool)
    assert cli["shown"] == 3 and cli["matched"] >= 3 and cli["tree"][0]["children"]


def test_memory_json_is_the_mcp_memory_answer():
    from kinetoscope.agent import tools

    path = corpus(MOE)
    cli = _cli_json("memory", str(path), "--format", "json", "--top", "2")
    tool = tools.memory(path.parent, path.name, top=2, steps=10**6)
    assert cli == _tool_json(tool)
    assert cli["devices"][0]["peak_bytes"] > 0 and len(cli["devices"][0]["largest"]) == 2


def test_table_json_is_the_mcp_table_answer():
    from kinetoscope.agent import tools

    path = corpus(RESNET)
    cli = _cli_json("table", str(path), "--format", "json", "--row-limit", "5")
    tool = tools.table(path.parent, path.name, row_limit=5)
    assert cli == _tool_json(tool)
    assert len(cli["rows"]) == 5 and cli["trimmed"]["rows"] > 0
    assert cli["sort_by"] == "self_device_time_total" and cli["scope"] == "whole trace"


def test_chain_and_memory_text_stay_text():
    from typer.testing import CliRunner

    from kinetoscope.cli import app

    done = CliRunner().invoke(app, ["chain", str(corpus(RESNET)), "--limit", "2"])
    assert done.exit_code == 0 and "dispatch chain" in done.stdout
    done = CliRunner().invoke(app, ["memory", str(corpus(MOE)), "--format", "yaml"])
    # the CLI's entry point turns this UsageError into one line on stderr and exit 2
    assert "choose text or json" in str(done.exception)
