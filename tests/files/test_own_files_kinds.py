"""`explain DIR` skips every JSON/Markdown/HTML file kinetoscope wrote, not only single-trace
reports: a diff, a sweep's data and a multi-rank report, recognised by content (the
`{"kinetoscope": "<version>", "kind": ...}` signature, or the heading), whatever their name.

`diff` and `explain` run in this process (`run_here`); the sweep is the session's shared
one (tests/compare/matmul_sweep.py), whose `profile` runs are children."""

from __future__ import annotations

import shutil

import pytest

from kinetoscope.files.own_files import is_kinetoscope_report

from ..capture_helpers import run_here
from ..compare.matmul_sweep import matmul_sweep  # noqa: F401  (the session fixture)
from ..conftest import corpus

BASE = "gpu/compare_base.json.gz"
TEST = "gpu/compare_test.json.gz"
RANKS = "multirank/dlrm_8ranks"


def _folder_with_one_trace(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    shutil.copy(corpus(BASE), folder / "trace.json.gz")
    return folder


def _explain_reads_only_the_trace(folder):
    done = run_here("explain", str(folder), "-f", "json")
    assert done.returncode == 0, done.stderr
    assert '"schema_version"' in done.stdout  # one trace: the single-trace report


@pytest.mark.parametrize("fmt", ["json", "md", "html"])
def test_a_diff_written_into_the_folder_is_skipped(tmp_path, fmt):
    folder = _folder_with_one_trace(tmp_path)
    out = folder / "diff.json"  # the name proves nothing: the content decides
    done = run_here("diff", str(corpus(BASE)), str(corpus(TEST)), "-f", fmt, "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert is_kinetoscope_report(out)
    _explain_reads_only_the_trace(folder)


@pytest.mark.parametrize("fmt", ["json", "md"])
def test_a_multi_rank_report_written_into_the_folder_is_skipped(tmp_path, fmt):
    folder = _folder_with_one_trace(tmp_path)
    out = folder / "ranks.json"
    done = run_here("explain", str(corpus(RANKS)), "-f", fmt, "-o", str(out), "--jobs", "1")
    assert done.returncode == 0, done.stderr
    assert is_kinetoscope_report(out)
    _explain_reads_only_the_trace(folder)


def test_a_sweeps_data_is_recognised_and_its_traces_are_not(matmul_sweep):  # noqa: F811
    [data] = (matmul_sweep.out / "sweeps").glob("*.json")
    assert is_kinetoscope_report(data)
    traces = list((matmul_sweep.out / "01_matmul_add").glob("*.json"))
    assert len(traces) == 2 and not any(is_kinetoscope_report(t) for t in traces)
