"""The `.txt` table written at capture agrees with `kinetoscope table` on the trace beside it."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

import kinetoscope  # noqa: E402
from kinetoscope.analysis.table import key_averages  # noqa: E402
from kinetoscope.capture.runner import CaptureOptions, run_workload  # noqa: E402

from ..profiler_txt import parse_profiler_table, parse_time  # noqa: E402


@pytest.mark.parametrize(
    ("name", "overrides", "annotation"),
    [
        ("mlp", {"batch": 1, "seq": 8, "dim": 16, "hidden": 32}, "mlp"),
        ("dataloader", {"batch": 4, "image": 8, "blur": 2, "hidden": 8}, "train_step"),
    ],
)
def test_table_totals_match_kinetoscope_table_within_1_percent(
    tmp_path, name, overrides, annotation
):
    result = run_workload(name, overrides, CaptureOptions(device="cpu", out=tmp_path))
    [written] = result.written
    text = written.table.read_text()
    table = parse_profiler_table(text)
    ours = key_averages(kinetoscope.load(written.trace))
    assert ours.self_cpu_total_us == pytest.approx(table.self_cpu_total_us, rel=0.01)
    assert table.self_device_total_us is None  # CPU only: no device column, no device total
    cpu_total = [parse_time(row["CPU total"]) for row in table.rows.values()]
    assert cpu_total == sorted(cpu_total, reverse=True)  # sorted by CPU time without a device
    for row_name in ("ProfilerStep*", annotation):
        assert ours.row(row_name).cpu_total_us == pytest.approx(
            parse_time(table.rows[row_name]["CPU total"]), rel=0.01
        ), row_name
