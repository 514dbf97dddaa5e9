"""`kinetoscope explain`: formats, -o, --rules, --set, --config, bad input, multi-rank."""

from __future__ import annotations

import json
import subprocess

import pytest

from ..capture_helpers import run_cli, run_here
from ..conftest import corpus, op, write_trace
from .test_cli_errors import BAD_INPUTS

BERT = "gpu/tracelens_h100__gaunernst_bert-small-uncased__1016001.json.gz"


def run(*args) -> subprocess.CompletedProcess:
    """`kinetoscope explain ARGS` in this process: these tests are about what it prints,
    writes and exits with, not about the process."""
    return run_here("explain", *args)


def one_line_exit_2(done: subprocess.CompletedProcess, *needles: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    for needle in needles:
        assert needle in lines[0]


def test_text_is_the_default():
    done = run(corpus(BERT))
    assert done.returncode == 0, done.stderr
    assert "Verdict" in done.stdout and "OVERHEAD-BOUND" in done.stdout
    assert max(len(line) for line in done.stdout.splitlines()) <= 100


@pytest.mark.parametrize(
    ("fmt", "marker"),
    [
        ("md", "**Verdict: overhead-bound**"),
        ("json", '"regime": "overhead-bound"'),
        ("html", "data-timeline"),
    ],
)
def test_formats_to_a_file(tmp_path, fmt, marker):
    out = tmp_path / f"report.{fmt}"
    done = run(corpus(BERT), "--format", fmt, "-o", out)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert marker in out.read_text()
    if fmt == "json":
        assert json.loads(out.read_text())["verdict"]["regime"] == "overhead-bound"


def test_rules_limits_the_run():
    done = run(corpus(BERT), "--format", "json", "--rules", "hidden-memcpy,cold-start")
    data = json.loads(done.stdout)
    assert data["rules"] == ["hidden-memcpy", "cold-start"]
    assert [f["id"] for f in data["findings"]] == ["hidden-memcpy"]
    assert [n["id"] for n in data["not_checked"]] == ["cold-start"]
    assert data["verdict"]["regime"] == "overhead-bound"  # the verdict is always computed


def test_set_and_config_override_thresholds(tmp_path):
    # bert: the device is busy 7.0% of the steady window; moving the bound below that makes
    # it "mixed"
    done = run(corpus(BERT), "--format", "json", "--set", "overhead-bound.max_device_ratio=0.05")
    assert json.loads(done.stdout)["verdict"]["regime"] == "mixed"
    config = tmp_path / "thresholds.toml"
    config.write_text("[overhead-bound]\nmax_device_ratio = 0.05\n")
    done = run(corpus(BERT), "--format", "json", "--config", config)
    assert json.loads(done.stdout)["verdict"]["regime"] == "mixed"
    # --set wins over the file
    done = run(
        corpus(BERT),
        "--format",
        "json",
        "--config",
        config,
        "--set",
        "overhead-bound.max_device_ratio=0.5",
    )
    assert json.loads(done.stdout)["verdict"]["regime"] == "overhead-bound"


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["--rules", "nope"], ["unknown rule 'nope'"]),
        (["--set", "hotspot.nope=1"], ["has no threshold 'nope'"]),
        (["--set", "hotspot.min_share=high"], ["expected a number"]),
        (["--set", "hotspot"], ["expected rule.key=value"]),
        (["--config", "/nonexistent/k.toml"], ["config file not found"]),
    ],
)
def test_bad_options_are_one_line_exit_2(args, needles):
    one_line_exit_2(run(corpus(BERT), *args), *needles)


def test_bad_config_file_is_one_line_exit_2(tmp_path):
    config = tmp_path / "bad.toml"
    config.write_text("[hotspot\nmin_share = ")
    one_line_exit_2(run(corpus(BERT), "--config", config), str(config), "not valid TOML")
    config.write_text("[nope]\nx = 1\n")
    one_line_exit_2(run(corpus(BERT), "--config", config), "unknown rule 'nope'")


@pytest.mark.parametrize("kind", ["empty", "json_list", "corrupt_gzip", "no_events"])
def test_bad_trace_is_one_line_exit_2(tmp_path, kind):
    path = tmp_path / f"{kind}.json"
    path.write_bytes(BAD_INPUTS[kind])
    one_line_exit_2(run(path), str(path))
    assert path.read_bytes() == BAD_INPUTS[kind]


def test_output_never_overwrites_the_trace(tmp_path):
    trace = tmp_path / "t.json.gz"
    trace.write_bytes(corpus(BERT).read_bytes())
    one_line_exit_2(run(trace, "-o", trace), "is the input")
    assert trace.read_bytes() == corpus(BERT).read_bytes()


def test_missing_trace_and_unwritable_output(tmp_path):
    # through `python -m kinetoscope`: the console path of explain's one-line errors
    one_line_exit_2(run_cli("explain", str(tmp_path / "missing.json")), "missing.json")
    one_line_exit_2(run(corpus(BERT), "-o", tmp_path / "no" / "dir" / "r.txt"), "cannot write")


def test_several_traces_go_to_multirank(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    one_line_exit_2(run(empty), "no .json or .json.gz trace files")
    try:
        import kinetoscope.ranks.multirank  # noqa: F401
    except ImportError:
        one_line_exit_2(run(corpus(BERT), corpus(BERT)), "multi-rank analysis is not available")
        return
    # with the multi-rank module merged, a directory of ranks gives one report for all of them
    ranks = corpus("multirank/dlrm_8ranks/worker0_step_12.1694128201545.pt.trace.json.gz").parent
    done = run(ranks, "--format", "json", "--jobs", "2")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)


def test_list_rules_shows_every_registered_rule():
    from kinetoscope.rules.engine import load_rules

    done = run("--list-rules")
    assert done.returncode == 0, done.stderr
    listed = {line.split()[0] for line in done.stdout.splitlines() if not line.startswith(" ")}
    assert listed == set(load_rules())
    assert "max_device_ratio=0.25" in done.stdout


def test_a_folder_of_unrelated_runs_is_explained_trace_by_trace(tmp_path):
    # two runs of one workload at different sizes: not ranks, each explained alone
    for name in ("16_fp32_cold_eager.json", "64_fp32_cold_compile.json"):
        write_trace(tmp_path / name, [op("aten::mm", 1, 10), op("aten::add", 20, 5)])
    done = run(tmp_path)
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith("2 traces, not the ranks of one job: no distributedInfo rank")
    assert first.endswith("each is explained alone.")
    assert f"=== {tmp_path / '16_fp32_cold_eager.json'}" in done.stdout
    assert f"=== {tmp_path / '64_fp32_cold_compile.json'}" in done.stdout
    assert "ranks, median step" not in done.stdout
    one_line_exit_2(run(tmp_path, "--format", "json"), "not the ranks of one job")
