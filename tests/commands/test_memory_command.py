"""`kinetoscope memory`: text report, plot, and the one-line errors (exit 2)."""

from __future__ import annotations

import pytest

from ..capture_helpers import run_cli, run_here
from ..conftest import corpus


def kinetoscope(*args):
    """`kinetoscope ARGS` in this process: what the command prints, writes and exits with."""
    return run_here(*args)


def test_memory_report_and_plot(tmp_path):
    path = corpus("gpu/tiny_transformer_block_h100.pt.trace.json.gz")
    out = tmp_path / "memory.png"
    result = kinetoscope("memory", path, "-o", out)
    assert result.returncode == 0, result.stderr
    text = result.stdout
    # 120 CUDA [memory] events; total_allocated peaks at 94398464 B = 90.03 MiB right
    # after the 16 MiB output of aten::clamp_min (inside aten::relu) in step #1
    assert "cuda:0: 120 events" in text
    assert "peak allocated 90.03 MiB at 1.40 ms (step #1)" in text
    assert "aten::clamp_min in aten::relu" in text
    assert "peak reserved  112.00 MiB" in text
    assert "16.00 MiB" in text and "aten::addmm in aten::linear" in text
    # three identical steps: 97.03 MiB allocated and freed in each
    assert text.count("│ 97.03 MiB │ 97.03 MiB │ 0 B │") == 3
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_memory_relative_timeline_on_2021_trace():
    result = kinetoscope("memory", corpus("gpu/resnet50_dataloader_workers0.pt.trace.json.gz"))
    assert result.returncode == 0, result.stderr
    assert "relative to recording start" in result.stdout
    assert "aten::empty in aten::cudnn_convolution_backward_weight" in result.stdout


def test_memory_without_memory_events_is_one_line_exit_2():
    result = kinetoscope("memory", corpus("gpu/alexnet_train.json.gz"))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "no [memory] events" in lines[0]
    assert "profile_memory=True" in lines[0]


def test_memory_plot_without_matplotlib_is_one_line_exit_2(tmp_path):
    """A child that cannot import matplotlib, as without the extra installed: this
    process may have imported it already. Also memory's console path (`main()`)."""
    path = corpus("gpu/tiny_transformer_block_h100.pt.trace.json.gz")
    code = "import sys; sys.modules['matplotlib'] = None; from kinetoscope.cli import main; main()"
    result = run_cli("memory", str(path), "-o", str(tmp_path / "m.png"), code=code)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "kinetoscope[plot]" in result.stderr
    assert not (tmp_path / "m.png").exists()


def test_memory_missing_file_is_exit_2(tmp_path):
    result = kinetoscope("memory", tmp_path / "nope.json")
    assert result.returncode == 2 and "Traceback" not in result.stderr


def test_memory_figure_one_unit_y_from_zero_shared_x_no_empty_panel():
    """switch_transformer records 160 B peak on cpu next to 4.27 GiB on cuda:0: the cpu
    panel would be a flat line, so one panel; its y axis starts at 0, in GiB."""
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from kinetoscope.analysis.memory import memory_timeline
    from kinetoscope.pipeline.memory_data import memory_document
    from kinetoscope.report.memory_render import memory_figure
    from kinetoscope.trace import load

    trace = load(corpus("gpu/switch_transformer_moe_a100.json.gz"))
    devices = memory_timeline(trace)
    assert [d.device for d in devices] == ["cpu", "cuda:0"]
    fig = memory_figure(plt, memory_document(trace, devices))
    axes = fig.axes
    assert len(axes) == 1 and axes[0].get_ylabel() == "cuda:0 GiB"
    assert axes[0].get_ylim()[0] == 0 and axes[0].get_ylim()[1] > 4.27
    assert "cpu: peak 160 B, not drawn" in fig._suptitle.get_text()
    plt.close(fig)


def test_memory_axis_in_the_unit_the_peak_needs(tmp_path):
    """A 32 KiB peak read 0.031 on a `cpu MiB` axis; now `cpu KiB` up to 32."""
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from kinetoscope.analysis.memory import memory_timeline
    from kinetoscope.pipeline.memory_data import memory_document
    from kinetoscope.report.memory_render import memory_figure

    from ..conftest import write_trace

    def mem(ts, total):
        args = {"Device Type": 0, "Device Id": -1, "Addr": 1, "Bytes": total,
                "Total Allocated": total, "Total Reserved": 0}  # fmt: skip
        return {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1,
                "ts": ts, "s": "t", "args": args}  # fmt: skip

    events = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 0,
         "dur": 2000, "args": {}},
        mem(10, 16 * 1024), mem(500, 32 * 1024), mem(1500, 16 * 1024),
    ]  # fmt: skip
    from kinetoscope.trace import load

    trace = load(write_trace(tmp_path / "m.json", events))
    fig = memory_figure(plt, memory_document(trace, memory_timeline(trace)))
    [ax] = fig.axes
    assert ax.get_ylabel() == "cpu KiB"
    assert 32 < ax.get_ylim()[1] < 40
    assert ax.get_xlabel() == "time since trace start (ms)"  # a 2 ms window
    plt.close(fig)
