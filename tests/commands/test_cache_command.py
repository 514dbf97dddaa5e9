"""`kinetoscope cache` lists the trace cache's entries and sizes and clears them;
`--no-cache` reads the trace without it."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from kinetoscope.cli import app, hoisted
from kinetoscope.errors import UsageError
from kinetoscope.trace import cache
from tests.conftest import corpus

TRACE = corpus("gpu/cuda_event_sync.json.gz")
OTHER = corpus("gpu/triton_example.json.gz")


@pytest.fixture
def folder(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv(cache.FOLDER_ENV, str(root))
    monkeypatch.delenv(cache.NO_CACHE_ENV, raising=False)
    monkeypatch.delenv(cache.SIZE_ENV, raising=False)
    monkeypatch.setattr(cache, "MIN_BYTES", 0)
    return root


def run(*args: str):
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def test_lists_each_entry_with_its_size_and_trace(folder):
    assert "0 entries" in run("cache")
    run("summary", str(TRACE))
    run("table", str(OTHER))
    out = run("cache")
    assert str(folder) in out.splitlines()[0]
    rows = [line for line in out.splitlines() if line.startswith("  ")]
    assert len(rows) == 2
    assert str(OTHER.resolve()) in rows[0]  # most recently used first
    assert str(TRACE.resolve()) in rows[1]
    assert all(" MB " in row for row in rows)
    assert "2 entries" in out.splitlines()[-1]


def test_clear_removes_every_entry(folder):
    run("summary", str(TRACE))
    assert "removed 1 entries" in run("cache", "--clear")
    assert cache.entries(folder) == []
    assert "0 entries" in run("cache")


def test_max_size_is_kept_and_evicts_at_once(folder):
    run("summary", str(TRACE))
    out = run("cache", "--max-size", "1KB")
    assert "evicted" in out and cache.entries(folder) == []
    assert cache.max_bytes(folder) == 1024
    run("summary", str(TRACE))  # over the saved bound: not written
    assert cache.entries(folder) == []


def test_a_bad_max_size_is_a_usage_error(folder):
    result = CliRunner().invoke(app, ["cache", "--max-size", "lots"])
    assert isinstance(result.exception, UsageError)  # exit 2 through `cli.main`
    assert "--max-size 'lots'" in str(result.exception)


def test_no_cache_leaves_the_cache_alone(folder, monkeypatch):
    monkeypatch.setenv(cache.NO_CACHE_ENV, "")  # the option sets it; monkeypatch restores
    after = hoisted(["summary", str(TRACE), "--no-cache"])  # where `kinetoscope` moves it
    assert run("--no-cache", "summary", str(TRACE)) == run(*after)
    assert cache.entries(folder) == []
    assert "off:" in run("--no-cache", "cache")
