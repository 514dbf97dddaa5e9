"""`kinetoscope plot`: a valid PNG/SVG of the lanes and per-step bars; bad input exits 2."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from .conftest import corpus

REPO = Path(__file__).resolve().parents[1]
RESNET = "gpu/resnet50_dataloader_workers0.pt.trace.json.gz"


def _run(*args):
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    code = "from kinetoscope.cli import main; main()"
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True,
                          text=True, env=env, timeout=120)  # fmt: skip


def test_plot_writes_png_and_svg(tmp_path):
    pytest.importorskip("matplotlib")
    path = corpus(RESNET)
    png, svg = tmp_path / "t.png", tmp_path / "t.svg"
    assert _run("plot", path, "-o", png).returncode == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
    assert _run("plot", path, "-o", svg).returncode == 0
    assert ET.parse(svg).getroot().tag.endswith("svg")


def test_step_breakdown_adds_up_and_the_figure_has_every_lane():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from kinetoscope.plotting import step_breakdown, trace_figure
    from kinetoscope.trace import load

    trace = load(corpus(RESNET))
    labels, parts = step_breakdown(trace)
    assert labels == [f"#{s.number}" for s in trace.steps]  # #5 .. #10
    assert list(parts) == ["device busy", "dispatch", "data wait", "sync wait", "other"]
    for k, step in enumerate(trace.steps):
        assert all(p[k] >= -1e-6 for p in parts.values())
        assert sum(p[k] for p in parts.values()) == pytest.approx(step.dur)
    # num_workers=0: the batch is loaded inside DataLoader.__next__ on the main thread,
    # with the GPU idle, so data wait is a real share of every step after the first
    waits = parts["data wait"]
    assert all(w > 0.05 * step.dur for w, step in zip(waits[1:], trace.steps[1:], strict=True))
    fig = trace_figure(plt, trace, "resnet")
    lanes_axis, bars_axis = fig.axes
    names = [t.get_text() for t in lanes_axis.get_yticklabels()]
    # tick labels go bottom to top: the host threads are the top rows
    assert names == ["stream 7", "thread 25772 (python)", "thread 25738 (python)"]
    assert bars_axis.get_ylim()[0] == 0
    plt.close(fig)


def test_plot_bad_output_suffix_is_exit_2(tmp_path):
    res = _run("plot", corpus(RESNET), "-o", tmp_path / "t.txt")
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and not (tmp_path / "t.txt").exists()
