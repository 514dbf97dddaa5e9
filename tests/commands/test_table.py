"""`table` agrees with the profiler's own key_averages().table() on real CPU runs."""

from __future__ import annotations

import pytest

import kinetoscope
from kinetoscope.analysis.table import key_averages, window_key_averages
from kinetoscope.pipeline.table_data import profiler_table
from kinetoscope.report.table_text import render_table

from ..capture_helpers import run_cli, run_here
from ..conftest import corpus, corpus_files, kernel, launch, op, write_trace
from ..profiler_txt import parse_profiler_table, parse_time

torch = pytest.importorskip("torch")


def _profile_cpu_run(tmp_path, with_stack: bool):
    """Profile a small matmul+add / linear loop with the schedule the series uses."""
    from torch.profiler import ProfilerActivity, profile, record_function, schedule

    x, w, b = torch.randn(48, 48), torch.randn(48, 48), torch.randn(48)
    out = {}

    def handler(prof):
        # the table first: key_averages() after export can read freed event names in torch 2.13
        out["txt"] = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=-1)
        prof.export_chrome_trace(str(tmp_path / "run.json"))

    with profile(
        activities=[ProfilerActivity.CPU],
        schedule=schedule(wait=1, warmup=1, active=3),
        on_trace_ready=handler,
        with_stack=with_stack,
        record_shapes=True,
    ) as prof:
        for _ in range(5):
            with record_function("matmul_add"):
                torch.add(torch.matmul(x, w), b)
                torch.nn.functional.linear(x, w, b).relu_()
                # aten::mean calls aten::mean: the profiler drops the inner one
                # (EventList._remove_dup_nodes); the rebuilt table must too
                x.mean(dim=0)
            prof.step()
    return tmp_path / "run.json", parse_profiler_table(out["txt"])


@pytest.mark.parametrize("with_stack", [False, True], ids=["ops", "with_stack"])
def test_rebuilt_table_matches_profiler_export(tmp_path, with_stack):
    trace_path, expected = _profile_cpu_run(tmp_path, with_stack)
    ours = key_averages(kinetoscope.load(trace_path))
    assert ours.self_cpu_total_us == pytest.approx(expected.self_cpu_total_us, rel=0.01)
    by_name = {}
    for row in ours.rows:
        short = row.name if len(row.name) < 52 else row.name[:52] + "..."  # profiler_util rule
        by_name.setdefault(short, row)
    checked = 0
    for name, cells in expected.rows.items():
        row = by_name[name]
        assert row.calls == int(cells["# of Calls"]), name
        assert row.self_cpu_us == pytest.approx(parse_time(cells["Self CPU"]), rel=0.01, abs=0.01)
        assert row.cpu_total_us == pytest.approx(parse_time(cells["CPU total"]), rel=0.01, abs=0.01)
        checked += 1
    assert checked >= 10
    assert "ProfilerStep*" in expected.rows and by_name["ProfilerStep*"].calls == 3


def test_device_columns_from_launch_links(tmp_path):
    events = [
        op("ProfilerStep#1", 0, 100, cat="user_annotation"),
        op("aten::linear", 10, 60),
        op("aten::addmm", 20, 40),
        launch(30, 10, correlation=5),
        kernel("gemm", 45, 20, correlation=5),
        {
            "ph": "X",
            "cat": "gpu_user_annotation",
            "name": "ProfilerStep#1",
            "pid": 0,
            "tid": 7,
            "ts": 45,
            "dur": 20,
            "args": {},
        },
    ]
    table = key_averages(kinetoscope.load(write_trace(tmp_path / "t.json", events)))
    addmm, linear = table.row("aten::addmm"), table.row("aten::linear")
    assert (addmm.self_device_us, addmm.device_total_us) == (20, 20)
    assert (linear.self_device_us, linear.device_total_us) == (0, 20)
    assert table.row("cudaLaunchKernel").self_cpu_us == 10
    # the device copy of the step annotation is a row but not part of the device total
    assert table.self_device_total_us == 20
    assert table.self_cpu_total_us == pytest.approx(100)
    text = render_table(profiler_table(table))
    assert "Self CPU time total: 100.000us" in text
    assert "Self CUDA time total: 20.000us" in text


def test_window_table_counts_only_the_profiled_steps(tmp_path):
    events = [
        op("aten::zeros", 0, 30),  # before the step: in the profiler's table, not the window's
        launch(5, 5, correlation=1),
        kernel("fill", 12, 8, correlation=1),
        op("ProfilerStep#1", 40, 100, cat="user_annotation"),
        op("aten::addmm", 50, 40),
        launch(60, 10, correlation=5),
        kernel("gemm", 75, 20, correlation=5),
        op("aten::zeros", 150, 10),  # after the step
    ]
    trace = kinetoscope.load(write_trace(tmp_path / "t.json", events))
    whole, window = key_averages(trace), window_key_averages(trace)
    assert whole.row("aten::zeros").calls == 2 and window.row("aten::zeros") is None
    assert (whole.self_device_total_us, window.self_device_total_us) == (28, 20)
    assert window.row("gemm").calls == 1 and window.row("fill") is None
    assert window.row("aten::addmm").self_device_us == 20
    # ProfilerStep self 100 - 40 + addmm self 40 - 10 + the launch 10
    assert window.self_cpu_total_us == pytest.approx(100)
    assert whole.self_cpu_total_us == pytest.approx(100 + 30 + 10 + 5 - 5)


def test_gpu_corpus_table_totals():
    trace = kinetoscope.load(corpus("gpu/tiny_transformer_block_h100.pt.trace.json.gz"))
    table = key_averages(trace, sort_by="self_device_time_total")
    kernels = trace.kernels
    assert table.self_device_total_us == pytest.approx(float(trace.dur[kernels].sum()))
    # every kernel was launched by an aten op, so op rows carry all kernel time as self device
    op_device = sum(r.self_device_us for r in table.rows if not r.is_device)
    assert op_device == pytest.approx(table.self_device_total_us)
    assert table.rows[0].name == "aten::addmm"


@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: p.name)
def test_summary_and_table_run_on_every_corpus_file(path):
    from kinetoscope.analysis.summary import summarize

    trace = kinetoscope.load(path)
    summary = summarize(trace)
    assert summary.steps and summary.metrics["window_us"] > 0
    # a step's device busy is the union of the work it launched: it can outlast the
    # host step when the device runs behind, never the whole recording
    for step in summary.steps:
        assert 0 <= step.device_busy_us <= trace.end_time - trace.start_time + 1e-6
    table = key_averages(trace)
    assert table.rows
    assert render_table(profiler_table(table)).count("\n") >= 5


def test_cli_summary_table_and_errors(tmp_path):
    path = corpus("gpu/resnet50_dataloader_workers4.pt.trace.json.gz")
    done = run_here("summary", str(path))
    assert done.returncode == 0, done.stderr
    assert "Tesla V100-DGXS-32GB" in done.stdout and "#5" in done.stdout
    done = run_here("summary", str(path), "--format", "json")
    assert done.returncode == 0
    import json

    data = json.loads(done.stdout)
    assert [s["step"] for s in data["steps"]] == [5, 6, 7, 8, 9, 10]
    assert data["metrics"]["kernels_per_step"] > 1000
    done = run_here("table", str(path), "--row-limit", "5")
    assert done.returncode == 0 and "Self CUDA time total:" in done.stdout
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    for run, args in (
        (run_here, ("summary", str(bad))),
        (run_here, ("table", str(bad))),
        # through `python -m kinetoscope`: the console path of table's one-line errors
        (run_cli, ("table", str(path), "--sort-by", "nope")),
    ):
        done = run(*args)
        assert done.returncode == 2
        assert "Traceback" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
