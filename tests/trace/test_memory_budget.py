"""`--max-memory` is a limit (issue 36): a trace whose analyses are projected past the
budget is refused in one line while it is read, saying how many events fit; where the
process is kinetoscope's own, an explicit budget is a hard limit too (`RLIMIT_DATA`),
and running past it is one line, not an internal MemoryError.

The traces are many tiny host events (`bench/make_tiny.py`), the case the projection
was measured on; the commands run in a child process under an address-space limit,
through the console entry, as a user runs them."""

from __future__ import annotations

import importlib.util
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from kinetoscope.errors import OverBudget
from kinetoscope.trace import budget

from ..conftest import corpus

REPO = Path(__file__).resolve().parents[2]
#: the child's address space: the interpreter, numpy and msgspec take ~0.6 GB of it
LIMIT = 1500 << 20
_SPEC = importlib.util.spec_from_file_location("make_tiny", REPO / "bench" / "make_tiny.py")
make_tiny = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(make_tiny)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    """150,000 tiny events: 13 MB of JSON in a 0.4 MB gzip file."""
    return make_tiny.write_tiny(tmp_path_factory.mktemp("tiny") / "tiny.json.gz", 150_000)


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def _kinetoscope(*args: str, before: str = "") -> tuple[subprocess.CompletedProcess, int]:
    """(the run, its peak RSS in bytes) of `kinetoscope ARGS` through the console entry
    in a fresh child; `before`: Python run first (a hook on the projection). The child
    writes its own peak at exit: `VmHWM`, the high-water mark of its own memory map
    (`ru_maxrss` is not: Linux carries the forking parent's peak across `exec`, so a
    child of a large test worker read as large as the worker)."""
    script = (
        "import atexit, sys\n"
        "def peak():\n"
        "    for line in open('/proc/self/status'):\n"
        "        if line.startswith('VmHWM:'):\n"
        "            print(f'@peak {line.split()[1]}', file=sys.stderr)\n"
        "atexit.register(peak)\n"
        f"{before}\nfrom kinetoscope.entry import main\nmain()\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), KINETOSCOPE_NO_CACHE="1")
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_limited,
    )
    stderr, _, peak = done.stderr.rpartition("@peak ")
    done.stderr = stderr
    return done, int(peak) * 1024


def test_a_trace_over_the_budget_is_refused_early_within_it(tiny, tmp_path):
    done, peak = _kinetoscope("explain", str(tiny), "--max-memory", "100MB", "-o", "r.json")
    assert done.returncode == 2, done.stderr
    fit = budget.events_within(100 << 20)
    assert done.stderr.startswith(f"kinetoscope: error: {tiny}: at least ")
    assert f"over --max-memory 100 MB (about {fit:,} events fit): cut a window" in done.stderr
    assert done.stderr.count("\n") == 1 and "internal error" not in done.stderr
    counted = int(done.stderr.split("at least ")[1].split(" events")[0].replace(",", ""))
    assert fit < counted < 150_000  # refused while reading, not after
    assert peak < 100 << 20  # the refusal itself kept to the budget
    assert not (tmp_path / "r.json").exists()


def test_a_trace_within_the_budget_is_explained(tiny, tmp_path):
    out = tmp_path / "r.json"
    done, peak = _kinetoscope("explain", str(tiny), "--max-memory", "256MB", "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert out.stat().st_size > 0
    assert peak < 256 << 20


def test_running_past_the_budget_is_one_line(tiny):
    # the projection made blind (1 byte per event), so the analyses run into the hard
    # limit the console entry set: before, an explicit budget limited nothing
    done, _ = _kinetoscope(
        "explain",
        str(tiny),
        "--max-memory",
        "32MB",
        "--format",
        "json",
        before="from kinetoscope.trace import budget\nbudget.BYTES_PER_EVENT = 1",
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        "kinetoscope: error: ran past the --max-memory budget of 32 MB and was stopped: "
        "cut a window with `kinetoscope slice` or give a larger --max-memory\n"
    )


def test_no_hard_limit_inside_a_caller_s_process():
    """The CLI run in-process (a test runner, a notebook) never limits its caller."""
    from typer.testing import CliRunner

    from kinetoscope.cli import app

    before = resource.getrlimit(resource.RLIMIT_DATA)
    path = str(corpus("gpu/alexnet_train.json.gz"))
    done = CliRunner().invoke(app, ["summary", path, "--max-memory", "1GB", "--format", "json"])
    assert done.exit_code == 0, done.output
    assert resource.getrlimit(resource.RLIMIT_DATA) == before


def test_the_projection_and_what_fits():
    mb = 1 << 20
    assert budget.analysis_peak(0) == budget.BASE_BYTES
    assert budget.analysis_peak(1000) == budget.BASE_BYTES + 1000 * budget.BYTES_PER_EVENT
    assert budget.events_within(budget.BASE_BYTES - 1) == 0
    assert budget.events_within(budget.analysis_peak(12_345)) == 12_345
    explicit = budget.EventLimit(512 * mb, available=64 << 30)
    explicit.check("t.json", budget.events_within(512 * mb))  # fits: silent
    with pytest.raises(OverBudget) as refused:
        explicit.check("t.json", 2_000_000, so_far=True)
    assert str(refused.value) == (
        "t.json: at least 2,000,000 events would need about 922 MB to analyse, over "
        f"--max-memory 512 MB (about {budget.events_within(512 * mb):,} events fit): cut a "
        "window with `kinetoscope slice` or give a larger --max-memory"
    )
    assert refused.value.exit_code == 2
    auto = budget.EventLimit(None, available=512 * mb)
    with pytest.raises(OverBudget, match=r"^t.json: 2,000,000 events .* over the 512 MB of RAM "):
        auto.check("t.json", 2_000_000)
    with pytest.raises(OverBudget, match="give --max-memory SIZE to try anyway$"):
        auto.check("t.json", 2_000_000)
    budget.EventLimit(None, available=None).check("t.json", 10**12)  # nothing known: no limit
