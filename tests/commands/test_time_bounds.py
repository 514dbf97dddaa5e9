"""Time that grows no faster than the input (issue 36): the Markdown cell escaper on a
name followed by many spaces, and the user patterns of `chain --kernel/--op` (CLI and
MCP tool), which were Python regular expressions that could backtrack forever."""

from __future__ import annotations

import importlib.util
import time

import pytest

from kinetoscope.agent import tools
from kinetoscope.report.tables import md_cell, md_code
from kinetoscope.trace.patterns import name_pattern
from tests.commands.test_hard_input import cli
from tests.conftest import kernel, launch, op, write_trace
from tests.requires import require


@pytest.fixture
def re2():
    """RE2 is a dependency: a test of patterns is skipped where it is missing, and fails
    under CI."""
    present = importlib.util.find_spec("re2") is not None
    require(present, "google-re2 is missing", "pip install -e .")


def _timed(fn, *args):
    began = time.perf_counter()
    result = fn(*args)
    return result, time.perf_counter() - began


def test_markdown_cells_of_a_name_then_a_million_spaces_take_linear_time():
    """40k spaces took 33 s in md_cell (the break regex rescanned the run from each
    space); a million now take well under a second, and breaks still fold."""
    name = "k" + " " * 1_000_000 + "x"
    for escape in (md_cell, md_code):
        shown, seconds = _timed(escape, name)
        assert seconds < 1.0, (escape.__name__, seconds)
        assert "more characters" in shown
    assert md_cell("a  \n\t b\r\nc  d") == "a b c  d"


def test_explain_md_of_a_name_with_100k_spaces_is_quick(tmp_path, capsys):
    """Measured before: 20k spaces 5 s, 50k 25 s, 100k 99 s."""
    name = "gemm" + " " * 100_000 + "tail"
    events = [op("ProfilerStep#1", 0, 50), op("aten::mm", 1, 10), launch(2, 3, 7),
              kernel(name, 5, 4, 7)]  # fmt: skip
    path = write_trace(tmp_path / "spaces.json", events)
    (code, _, err), seconds = _timed(lambda: cli("explain", path, "--format", "md",
                                                 capsys=capsys))  # fmt: skip
    assert code == 0, err
    assert seconds < 10, seconds


@pytest.mark.parametrize(
    ("pattern", "kind", "matches", "misses"),
    [
        ("gemm", "substring", ["ampere_sgemm_128x64_nn"], ["conv"]),
        ("*gemm*_nn", "glob", ["ampere_sgemm_128x64_nn"], ["ampere_sgemm_128x64_tn"]),
        ("sm??_*", "glob", ["sm80_xmma"], ["xsm80_xmma"]),
        ("[!a]*", "glob", ["void f"], ["ampere"]),
        ("gemm|conv", "regex", ["implicit_conv2d", "sgemm"], ["softmax"]),
        ("^void at::", "regex", ["void at::native::k"], ["x void at::"]),
        ("(a+)+$", "regex", ["a" * 40], ["a" * 40 + "b"]),
    ],
)
def test_patterns_are_substrings_globs_or_re2_regexes(re2, pattern, kind, matches, misses):
    compiled = name_pattern(pattern, "kernel")
    assert compiled.kind == kind
    assert all(compiled.search(n) for n in matches)
    assert not any(compiled.search(n) for n in misses)


def _chain_trace(tmp_path):
    name = "a" * 29 + "b"  # (a+)+$ took 38.6 s on this in Python's re, doubling per "a"
    events = [op("ProfilerStep#1", 0, 50), op(name, 1, 10), launch(2, 3, 7),
              kernel(name, 5, 4, 7)]  # fmt: skip
    return write_trace(tmp_path / "evil.json", events)


def test_chain_with_a_catastrophic_regex_answers_at_once(re2, tmp_path, capsys):
    path = _chain_trace(tmp_path)
    for flag in ("--kernel", "--op"):
        (code, _, err), seconds = _timed(lambda f=flag: cli("chain", path, f, "(a+)+$",
                                                            capsys=capsys))  # fmt: skip
        assert seconds < 5, (flag, seconds)
        assert code == 2 and "matching '(a+)+$'" in err, err  # no name ends in a run of a
    _, seconds = _timed(lambda: tools.chain(path.parent, path.name, kernel="(a+)+$"))
    assert seconds < 5


def test_a_pattern_re2_refuses_is_one_line(re2, tmp_path, capsys):
    path = _chain_trace(tmp_path)
    code, _, err = cli("chain", path, "--kernel", r"(a)\1", capsys=capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert "bad kernel pattern" in err and "RE2" in err
