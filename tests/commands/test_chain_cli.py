"""`kinetoscope chain`: the dispatch tree it prints, exit codes and one-line errors."""

from __future__ import annotations

import pytest

from ..capture_helpers import run_cli, run_here
from ..conftest import corpus

TINY = "gpu/tiny_transformer_block_h100.pt.trace.json.gz"


@pytest.fixture(autouse=True)
def _terminal(monkeypatch):
    """The environment the tree is laid out for: 160 columns (rich reads COLUMNS), and
    nothing that makes rich colour a pipe."""
    monkeypatch.setenv("COLUMNS", "160")
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)


def _chain(*args):
    """`kinetoscope chain ARGS` in this process: what it prints and exits with."""
    return run_here("chain", *args)


def test_chain_tree_for_one_step():
    res = _chain(corpus(TINY), "--step", "2", "--kernel", "softmax")
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "dispatch chain of 1 of 1 matching device event(s)" in out
    lines = [ln.strip("│├└─ ") for ln in out.splitlines()]
    order = [
        "ProfilerStep#2",
        "Model Forward Pass",
        "Self-Attention",
        "aten::_softmax",
        "cudaLaunchKernel",
    ]
    pos = [next(i for i, ln in enumerate(lines) if ln.startswith(name)) for name in order]
    assert pos == sorted(pos)
    assert "softmax_warp_forward" in out and "device 5.00 us" in out
    assert "ProfilerStep#1" not in out  # overlapping step spans do not nest in the chain


def test_chain_by_op_with_limit():
    res = _chain(corpus(TINY), "--op", "Self-Attention", "--limit", "2")
    assert res.returncode == 0, res.stderr
    assert "dispatch chain of 2 of 27 matching" in res.stdout
    assert "25 more not shown" in res.stdout


def test_chain_bad_pattern_is_one_line_exit_2():
    # through `python -m kinetoscope`: the console path of chain's one-line errors
    res = run_cli("chain", str(corpus(TINY)), "--kernel", "(")
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and "bad kernel pattern '('" in res.stderr
    assert "Traceback" not in res.stderr


def test_chain_no_match_and_missing_step_exit_2():
    res = _chain(corpus(TINY), "--kernel", "no_such_kernel")
    assert res.returncode == 2 and res.stderr.startswith("kinetoscope: error: no kernel matching")
    res = _chain(corpus(TINY), "--step", "99")
    assert (
        res.returncode == 2
        and "no ProfilerStep#99" in res.stderr
        and "steps: 1, 2, 3" in res.stderr
    )


def test_chain_both_filters_and_host_only_trace_exit_2():
    res = _chain(corpus(TINY), "--kernel", "a", "--op", "b")
    assert res.returncode == 2 and "not both" in res.stderr
    res = _chain(corpus("cpu/cpu_only_rank34.pt.trace.json.gz"))
    assert res.returncode == 2 and "no device activity" in res.stderr
