"""`sweep` on CPU at small sizes: real profiles, a physically sane table, a readable plot.

The table, data and plots are the session's one shared sweep (tests/compare/matmul_sweep.py,
`size=0,16,512`); refused arguments run the CLI in this process (`run_here`): they end
before any `profile` child starts."""

from __future__ import annotations

import os

import pytest

import kinetoscope
from kinetoscope.compare.sweep import (
    SweepPoint,
    check_fixed,
    crossover,
    parse_vary,
    profile_argv,
)
from kinetoscope.errors import UsageError

from ..capture_helpers import run_here
from .matmul_sweep import SIZES, matmul_sweep  # noqa: F401  (the session fixture)


def test_a_failing_value_does_not_end_the_sweep(matmul_sweep):  # noqa: F811
    # size 0 is rejected by `profile` (exit 2): a failed row, exit 1 at the end
    assert matmul_sweep.returncode == 1, matmul_sweep.stdout + matmul_sweep.stderr
    assert "size=0 failed: exit 2" in matmul_sweep.stdout
    first = matmul_sweep.data["points"][0]
    assert first["value"] == 0 and first["error"]


def test_sweep_table_follows_physics(matmul_sweep):  # noqa: F811
    """The GEMM does 32768x more work at 512 than at 16 (the shared sweep has two sizes
    that profile; a middle one cost a `profile` child of its own)."""
    assert "matmul_add: sweep over size" in matmul_sweep.stdout
    data = matmul_sweep.data
    points = data["points"][1:]
    assert [p["value"] for p in points] == list(SIZES)
    assert all(p["error"] is None for p in points), points
    # FLOPs per step come from the recorded aten::mm shapes: 2 * n^3
    assert [p["flops"] for p in points] == [2.0 * n**3 for n in SIZES]
    # its time must grow, and at 512 (268 MFLOP a step against tens of us of Python and
    # dispatch) the CPU computes
    compute = [p["compute_us"] for p in points]
    assert compute[0] < compute[1], compute
    # where the capture grade says the CPUs were taken (run 123: the threads waited for a
    # CPU 70% of the time beside the other workers, Python 20.7% of the window: "mixed"),
    # op durations measure the load, and the regime is not held; the compute still leads
    last = kinetoscope.explain(points[-1]["trace"])
    loaded = {"cpu-busy", "cpu-contended"} & {i["id"] for i in last.quality["issues"]}
    if loaded:
        assert points[-1]["regime"] in ("compute-bound", "mixed"), points[-1]
        assert points[-1]["compute_share"] > 0.5, points[-1]
    else:
        assert points[-1]["regime"] == "compute-bound"
    # every figure of a row is explain's own on the same trace
    for p in points:
        report = kinetoscope.explain(p["trace"])
        m = report.metrics
        assert p["regime"] == report.verdict.regime
        for key in ("compute_us", "dispatch_us", "other_us", "compute_share"):
            assert p[key] == m[key], key
        assert p["step_us"] == m["step_time_us"] and p["host_us"] == m["host_time_per_step_us"]
    assert all(p["tflops"] > 0 for p in points)
    # one trace per value, written by `kinetoscope profile`
    assert all(os.path.exists(p["trace"]) for p in points)
    # on CPU the crossover is where compute overtakes dispatch + Python: at 16 a 16x16
    # GEMM's microseconds are a few times less than its overhead, at 512 many times more
    assert data["crossover"]["mode"] == "host"
    cross = data["crossover"]
    assert cross["value"] is not None and 16 < cross["value"] < 512, cross


def test_sweep_plot_is_a_valid_png_and_svg(matmul_sweep):  # noqa: F811
    out = matmul_sweep.out
    png = out / "sweeps" / "matmul_add_size.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    import matplotlib.image

    image = matplotlib.image.imread(png)
    assert image.ndim == 3 and image.shape[0] > 100 and image.shape[1] > 100
    svg = (out / "sweeps" / "matmul_add_size.svg").read_text()
    assert "<svg" in svg and "size" in svg


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["matmul_add", "--vary", "size"], "expected NAME=V1,V2"),
        (["matmul_add", "--vary", "size=64,32"], "two increasing values"),
        (["no_such", "--vary", "size=1,2"], "unknown workload"),
        (["matmul_add", "--vary", "size=1,2", "--size", "3"], "--size is set by the sweep"),
    ],
)
def test_bad_sweep_arguments_exit_2(tmp_path, args, message):
    res = run_here("sweep", *args, "--out", tmp_path)
    assert res.returncode == 2 and message in res.stderr
    assert "Traceback" not in res.stderr


def test_profile_argv_defaults_and_overrides(tmp_path):
    argv = profile_argv("matmul_add", "size", 64.0, ["--device", "cpu"], tmp_path)
    assert argv[2:] == [
        "kinetoscope", "profile", "matmul_add", "--size", "64", "--out", str(tmp_path),
        "--record-shapes", "--warmup", "3", "--device", "cpu",
    ]  # fmt: skip
    argv = profile_argv("mlp", "seq", 8, ["--warmup", "0"], tmp_path)
    assert argv.count("--warmup") == 1 and argv[-2:] == ["--warmup", "0"]
    assert parse_vary("size=16, 32,64") == ("size", [16.0, 32.0, 64.0])
    with pytest.raises(UsageError):
        check_fixed("size", ["--out=x"])


def _point(value, work, overhead):
    return SweepPoint(value, compute_us=work, dispatch_us=overhead, step_us=work + overhead)


def test_crossover_interpolates_between_points():
    cross = crossover([_point(16, 1, 10), _point(64, 10, 10.5), _point(256, 100, 20)])
    # log(work/overhead) goes from -0.049 at 64 to +1.61 at 256: just above 64
    assert 64 < cross.value < 70
    assert crossover([_point(16, 1, 10), _point(64, 2, 10)]).value is None
    assert "already exceeds" in crossover([_point(16, 20, 10), _point(64, 40, 10)]).note


def test_device_mode_curves_table_and_crossover():
    from kinetoscope.compare.sweep_doc import sweep_document
    from kinetoscope.report.sweep_render import table_rows

    def gpu(value, host, device, flops):
        return SweepPoint(
            value,
            has_device=True,
            step_us=max(host, device),
            host_us=host,
            device_us=device,
            busy_ratio=device / max(host, device),
            regime="overhead-bound" if device < host else "compute-bound",
            flops=flops,
            tflops=flops / device * 1e-6,
        )

    points = [gpu(64, 100, 5, 2 * 64**3), gpu(1024, 100, 80, 2 * 1024**3), gpu(4096, 120, 900, 0)]
    points.append(SweepPoint(8192, error="exit 1: CUDA out of memory"))
    cross = crossover(points)
    assert cross.mode == "device" and 1024 < cross.value < 4096
    assert "device time exceeds host time" in cross.note
    headers, rows = table_rows(sweep_document("size", points, cross))
    assert headers[3] == "device/step" and headers[-2:] == ["regime", "TFLOP/s"]
    assert rows[0][:5] == ["64", "100 us", "100 us", "5.00 us", "5.0%"]
    assert rows[1][-1] == f"{2 * 1024**3 / 80 * 1e-6:.3g}"
    assert rows[3][:2] == ["8192", "failed"]


def test_sweep_figure_label_clear_of_legend_and_tflops_panel():
    """GEMM points with TFLOP/s get a second panel sharing x; the crossover label's box
    and the legend's box never intersect (the legend sits outside the axes)."""
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from kinetoscope.compare.sweep_doc import sweep_document
    from kinetoscope.report.sweep_render import sweep_figure

    def gpu(value, host, device, tflops):
        return SweepPoint(value, has_device=True, step_us=max(host, device), host_us=host,
                          device_us=device, tflops=tflops)  # fmt: skip

    # the crossover lands at the left edge, where an upper-left legend used to sit
    points = [gpu(16, 100, 90, 0.01), gpu(32, 100, 200, 0.1), gpu(4096, 100, 9000, 50.0)]
    cross = crossover(points)
    assert cross.value is not None and 16 < cross.value < 32
    fig = sweep_figure(plt, sweep_document("size", points, cross), "matmul")
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    top, low = fig.axes
    assert low.get_ylabel() == "achieved TFLOP/s" and low.get_shared_x_axes().joined(top, low)
    label = next(t for t in top.texts if t.get_text().startswith("crossover"))
    legend = top.get_legend()
    assert not label.get_window_extent(renderer).overlaps(legend.get_window_extent(renderer))
    plt.close(fig)
    cpu = [_point(16, 1, 10), _point(64, 10, 10.5), _point(256, 100, 20)]
    fig = sweep_figure(plt, sweep_document("size", cpu, crossover(cpu)), "matmul")
    assert len(fig.axes) == 1  # no FLOP counts, no TFLOP/s panel
    plt.close(fig)
