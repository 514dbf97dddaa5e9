"""CLI conventions a user can rely on: `--version`, `-h` on every command, upper-case
argument names, no type label on a flag, and every command in the README's table."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import kinetoscope
from kinetoscope.cli import COMMANDS, app

from ..capture_helpers import run_cli, run_here

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def _help(*args: str) -> str:
    done = CliRunner().invoke(app, [*args, "-h"], env={"COLUMNS": "200"}, prog_name="kinetoscope")
    assert done.exit_code == 0, done.output
    return done.output


def test_version():
    done = run_here("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"kinetoscope {kinetoscope.__version__}"


@pytest.mark.parametrize("command", COMMANDS)
def test_short_help_on_every_command(command):
    text = _help(command)
    assert f"Usage: kinetoscope {command}" in text
    assert "<bool>" not in text  # a flag takes no value: no type label
    usage = re.search(rf"Usage: kinetoscope {command} \[OPTIONS\] (.*)", text)[1]
    for name in re.findall(r"[{\[]+([^\]{}]+)[}\]]+", usage):
        name = name.removeprefix("-- ").removesuffix("...")
        assert name == name.upper() or name.endswith(".py"), (command, name)


def test_root_help_has_short_flag_and_no_bool_labels():
    text = _help()
    assert "--version" in text and "-h" in text and "<bool>" not in text


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_is_in_the_readme_table(command):
    assert re.search(rf"^\| `kinetoscope {command}\b", README, re.M), command


TRACE = Path(__file__).resolve().parents[1] / "data/traces/cpu/cpu_only_rank34.pt.trace.json.gz"


def _error_line(*args: str, run=run_here) -> str:
    """The one stderr line of a command refused with exit 2 (in this process unless `run`
    says otherwise)."""
    done = run(*args)
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    return line


def test_unknown_metric_names_the_spelling_meant():
    # through `python -m kinetoscope`: the console path of check's one-line errors
    line = _error_line("check", str(TRACE), "-e", "step_tme_ms < 5", run=run_cli)
    assert "unknown metric 'step_tme_ms'" in line and "did you mean step_time_ms" in line


@pytest.mark.parametrize("value", ["abc", "0.5"])
def test_unknown_threshold_is_named_before_its_value_is_read(value):
    line = _error_line("explain", str(TRACE), "--set", f"hotspot.threshold={value}")
    assert "has no threshold 'threshold'" in line and "its thresholds: min_share" in line
    assert "expected a number" not in line


def test_near_miss_of_a_threshold_or_rule_is_suggested():
    line = _error_line("explain", str(TRACE), "--set", "hotspot.min_shar=0.5")
    assert "did you mean min_share?" in line
    line = _error_line("explain", str(TRACE), "--rules", "hotspt")
    assert "did you mean hotspot?" in line


def test_tune_throughput_has_a_unit():
    """tune printed `6.059e+04 ±1.8e+03`: a number without its unit."""
    from dataclasses import replace
    from types import SimpleNamespace

    from kinetoscope.report.tune_render import headers, rate, rows, table
    from kinetoscope.tune.trials import Trial

    # three timed blocks of 128 samples at 60590, 58800 and 62400 samples/s
    seconds = [128 / per_s for per_s in (60_590.0, 58_800.0, 62_400.0)]
    trial = Trial(index=0, label="baseline", setting={}, stage="baseline", block_seconds=seconds,
                  samples_per_step=128, regime="compute-bound")  # fmt: skip
    session = SimpleNamespace(trials=[trial], best=None)
    [row] = rows(session)
    assert (headers(session)[4], row[4]) == ("samples/s", "60.6k ±900")
    assert rate(1_250_000) == "1.25M" and rate(812.4) == "812"
    # the terminal's copy fits 80 columns, leaving out what it must and saying so
    session.trials.append(replace(trial, label="compile=reduce-overhead"))
    text, note = table(session, 80)
    assert max(map(len, text.splitlines())) <= 80 and "samples/s" in text
    assert note.startswith("left out to fit 80 columns: stage")
    whole, none = table(session)  # tune.txt: every column
    assert none is None and "stage" in whole.splitlines()[0]


def test_sweep_table_fits_80_columns_by_dropping_columns_with_a_note():
    """On 80 columns rich cut the headers (`host/st…`); columns now go whole, by priority."""
    from rich.console import Console

    from kinetoscope.report.sweep_render import fitted_table

    headers = ["size", "step", "host/step", "device/step", "busy ratio", "regime", "TFLOP/s",
               "GEMM % of peak", "attention % of peak"]  # fmt: skip
    rows = [["16", "1.23 ms", "1.20 ms", "40.1 us", "3.3%", "overhead-bound", "0.0123", "0.1%",
             "0.2%"]]  # fmt: skip
    table, note = fitted_table(headers, rows, "matmul_add: sweep over size", 80)
    console = Console(width=80, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
    console.print(table)
    text = console.export_text()
    assert "…" not in text and all(len(line) <= 80 for line in text.splitlines())
    assert "host/step" in text and "overhead-bound" in text
    assert note.startswith("left out to fit 80 columns: attention % of peak")
    wide, none = fitted_table(headers, rows, "t", 200)
    assert none is None


def test_explain_names_the_cycle_the_metadata_names():
    """Cycles count from 1 in the file name, the metadata and the table header; explain's
    run line says the same number (it printed "cycle 2" for a one-cycle run's first trace)."""
    from kinetoscope.report.run_text import run_line

    line = run_line({"workload": "w", "cycle": 1})
    assert "cycle 1" in line and "cycle 2" not in line
