"""bench/fuzz_table.py counts both log formats per surface, and refuses a line it cannot read."""

from __future__ import annotations

import pytest
from bench.fuzz_table import main

from tests.fuzz_log import log_run


def test_table_counts_runs_and_commands_lines_per_surface(tmp_path, monkeypatch, capsys):
    base = tmp_path / "fuzz.log"
    monkeypatch.setenv("KINETOSCOPE_FUZZ_LOG", str(base))
    log_run("signals", "profile-sigint", "ok")
    log_run("signals", "profile-sigterm", "hang")
    log_run("cli-resources", "summary", "clean-error")
    log_run("cli-resources", "summary", "over-disk")
    # the in-process fuzz's older lines: check exit 1 is a verdict, exit 1 elsewhere a bug
    (tmp_path / "fuzz.log.commands").write_text("check 1 0.1\ntable 1 0.2\nchain 2 0.3\n")
    main([str(base)])
    rows = {line.split(" | ")[0]: line for line in capsys.readouterr().out.splitlines()}
    assert rows["| `cli`"] == "| `cli` | 3 | 1 | 1 | 0 | 0 | 0 | 0 |"
    assert rows["| `signals`"] == "| `signals` | 2 | 0 | 0 | 1 | 0 | 0 | 0 |"
    assert rows["| `cli-resources`"] == "| `cli-resources` | 2 | 1 | 0 | 0 | 1 | 0 | 0 |"
    assert rows["| **all**"] == "| **all** | 7 | 2 | 1 | 1 | 1 | 0 | 0 |"


def test_a_line_of_another_shape_is_refused(tmp_path):
    (tmp_path / "x.runs").write_text("mcp tool-slice exploded\n")
    with pytest.raises(SystemExit, match="not a fuzz log line"):
        main([str(tmp_path / "x.runs")])
