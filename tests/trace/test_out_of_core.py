"""The out-of-core load (`--max-memory`): same results, its files never outlive it.

A corpus trace of each family (tests/corpus_families.py; every corpus trace under
`pytest -m corpus`) is loaded both ways in this process (`out_of_core=True` forces the
out-of-core path) and `explain` and `summary` JSON must be byte-identical but for the
one field that says which path was taken.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import kinetoscope
from kinetoscope.analysis.summary import summarize
from kinetoscope.errors import OverBudget, TraceError, UsageError
from kinetoscope.formatting.jsontext import dumps
from kinetoscope.pipeline.build import build_report
from kinetoscope.pipeline.summary_data import summary_data
from kinetoscope.trace import budget, load
from kinetoscope.trace.sparse import SparseTexts, SparseValues
from kinetoscope.trace.spill import SpillParts

from ..conftest import corpus, corpus_files, write_trace
from ..corpus_families import by_family


@pytest.fixture(autouse=True)
def _parse_every_time(monkeypatch):
    """Each load here parses: a second load served from the trace cache would compare the
    cache with the parse, not the path under test with the one-pass load."""
    monkeypatch.setenv("KINETOSCOPE_NO_CACHE", "1")


REPO = Path(__file__).resolve().parents[2]


def _explain_json(trace) -> dict:
    data = json.loads(build_report(trace).to_json())
    data["trace"].pop("out_of_core")
    return data


def _summary_json(trace) -> dict:
    data = json.loads(dumps(summary_data(summarize(trace)), default=str))
    data.pop("out_of_core")
    return data


def _outcome(path: Path, **options):
    """(explain JSON, summary JSON) of `path`, or the one-line error it gives."""
    try:
        trace = load(path, **options)
    except TraceError as exc:
        return str(exc)
    assert (trace.out_of_core is not None) == (options.get("out_of_core", False))
    return _explain_json(trace), _summary_json(trace)


@pytest.mark.parametrize("path", by_family(corpus_files()), ids=lambda p: p.name)
def test_corpus_same_json_out_of_core(path, tmp_path):
    """Byte-identical `explain` and `summary` JSON (dumped with sorted keys), and the
    spill directory (here under tmp_path) is empty afterwards."""
    in_memory = _outcome(path)
    out_of_core = _outcome(path, out_of_core=True, spill_dir=tmp_path)
    assert json.dumps(out_of_core, sort_keys=True) == json.dumps(in_memory, sort_keys=True)
    assert list(tmp_path.iterdir()) == []


def _digest(path: Path) -> tuple[str, float]:
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime


def test_spill_directory_gone_and_input_untouched(tmp_path):
    path = corpus("gpu/alexnet_train.json.gz")
    before = _digest(path)
    spill = tmp_path / "spill"
    spill.mkdir()
    trace = load(path, out_of_core=True, spill_dir=spill)
    assert trace.out_of_core
    assert list(spill.iterdir()) == []  # removed before load returned ...
    assert float(trace.dur.sum()) > 0  # ... and the mapped columns still read
    assert _digest(path) == before


def test_spill_directory_gone_after_trace_error(tmp_path):
    bad = write_trace(tmp_path / "only_meta.json", [{"ph": "M", "name": "process_name"}])
    spill = tmp_path / "spill"
    spill.mkdir()
    with pytest.raises(TraceError, match="no timed events"):
        load(bad, out_of_core=True, spill_dir=spill)
    assert list(spill.iterdir()) == []


def test_spill_directory_gone_after_rule_error(tmp_path, monkeypatch):
    import kinetoscope.api as api

    def broken(*args, **kwargs):
        raise RuntimeError("a rule failed")

    monkeypatch.setattr(api, "build_report", broken)
    monkeypatch.setattr(budget, "BYTES_PER_BYTE", 1e6)  # no in-memory load fits: out of core
    spill = tmp_path / "spill"
    spill.mkdir()
    with pytest.raises(RuntimeError, match="a rule failed"):
        kinetoscope.explain(corpus("gpu/alexnet_train.json.gz"), max_memory="8GB", spill_dir=spill)
    assert list(spill.iterdir()) == []


def _signalled_mid_load(signal_name: str, then: str, *args: str) -> subprocess.CompletedProcess:
    """Run `then` (Python source) in a fresh interpreter where the first column part spilled
    sends this process `signal_name`: the signal arrives once the spill directory exists."""
    script = (
        "import os, signal, sys\n"
        "from kinetoscope.trace import spill\n"
        "original = spill.SpillParts.append\n"
        "def append(self, key, array):\n"
        "    original(self, key, array)\n"
        f"    os.kill(os.getpid(), signal.{signal_name})\n"
        "spill.SpillParts.append = append\n"
    ) + then
    path = corpus("gpu/alexnet_train.json.gz")
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    return subprocess.run(
        [sys.executable, "-c", script, str(path), *args],
        env=env,
        capture_output=True,
        text=True,
    )


def test_spill_directory_gone_after_interrupt(tmp_path):
    """Ctrl-C in the middle of a load (SIGINT once the spill directory exists)."""
    spill = tmp_path / "spill"
    spill.mkdir()
    done = _signalled_mid_load(
        "SIGINT",
        "from kinetoscope.trace import load\n"
        "try:\n"
        "    load(sys.argv[1], out_of_core=True, spill_dir=sys.argv[2])\n"
        "except KeyboardInterrupt:\n"
        "    sys.exit(130)\n",
        str(spill),
    )
    assert done.returncode == 130  # interrupted, not finished
    assert list(spill.iterdir()) == []


def test_spill_directory_gone_after_sigterm(tmp_path):
    """`kill PID` in the middle of an out-of-core load: the CLI ends as on an error (exit 143,
    one line), so the spill directory and the unpublished output are removed."""
    spill = tmp_path / "spill"
    spill.mkdir()
    done = _signalled_mid_load(
        "SIGTERM",
        "from kinetoscope.cli import main\n"
        "from kinetoscope.trace import budget\n"
        "budget.BYTES_PER_BYTE = 1e6  # no in-memory load fits 8 GB: out of core\n"
        "sys.argv = ['kinetoscope', 'explain', sys.argv[1], '--max-memory', '8GB',\n"
        "            '--spill-dir', sys.argv[2], '--format', 'json', '-o', sys.argv[3]]\n"
        "main()\n",
        str(spill),
        str(tmp_path / "report.json"),
    )
    assert done.returncode == 143  # terminated, not finished
    assert done.stderr == "kinetoscope: terminated; nothing written\n"
    assert list(spill.iterdir()) == [] and list(tmp_path.iterdir()) == [spill]


def test_cli_max_memory(monkeypatch):
    """The flag on both commands: out of core where the in-memory load would not fit
    (here every load: the text projection is made huge), refused in one line where the
    analyses would not; a bad size is one line and exit 2."""
    from typer.testing import CliRunner

    from kinetoscope.cli import app

    runner = CliRunner()
    path = str(corpus("gpu/alexnet_train.json.gz"))
    monkeypatch.setattr(budget, "BYTES_PER_BYTE", 1e6)
    for command in ("explain", "summary"):
        out = runner.invoke(app, [command, path, "--max-memory", "1GB", "--format", "json"])
        assert out.exit_code == 0, out.output
        data = json.loads(out.output)
        facts = data["trace"] if command == "explain" else data
        assert facts["out_of_core"].startswith("out of core: the in-memory load would peak near")
        refused = runner.invoke(app, [command, path, "--max-memory", "1MB"])
        assert isinstance(refused.exception, OverBudget)
        assert "over --max-memory 1 MB (about 0 events fit)" in str(refused.exception)
        bad = subprocess.run(
            [sys.executable, "-m", "kinetoscope", command, path, "--max-memory", "two gigs"],
            env=dict(os.environ, PYTHONPATH=str(REPO / "src")),
            capture_output=True,
            text=True,
        )
        assert bad.returncode == 2 and bad.stdout == ""
        assert bad.stderr == (
            "kinetoscope: error: --max-memory 'two gigs': "
            "give a size such as 2GB, 512MB, 1.5G, or auto\n"
        )
    text = runner.invoke(app, ["explain", path, "--max-memory", "1GB"])
    assert "loaded out of core" in text.output
    monkeypatch.undo()
    default = runner.invoke(app, ["explain", path, "--format", "json"])
    assert json.loads(default.output)["trace"]["out_of_core"] is None


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("2GB", 2 << 30),
        ("512MB", 512 << 20),
        ("1.5G", int(1.5 * (1 << 30))),
        ("800k", 800 << 10),
        ("1GiB", 1 << 30),
        (" 3 mb ", 3 << 20),
        ("100", 100),
        ("0", 0),
        ("auto", None),
        ("AUTO", None),
        (None, None),
        (4096, 4096),
    ],
)
def test_parse_size(text, size):
    assert budget.parse_size(text) == size


@pytest.mark.parametrize("text", ["", "2XB", "-1", "1.2.3G", "G", "2 G B", "lots", -5, 1.5])
def test_parse_size_refuses(text):
    with pytest.raises(UsageError, match="--max-memory"):
        budget.parse_size(text)


def test_auto_choice():
    peak = budget.projected_peak
    gb = 1 << 30
    # fits the budget and the RAM: in memory
    assert budget.out_of_core_reason(100 << 20, 2 * gb, 20 * gb) is None
    # over the budget
    reason = budget.out_of_core_reason(5 * gb, 2 * gb, 20 * gb)
    assert reason and "over --max-memory 2,048 MB" in reason
    # auto: over what the machine has available
    reason = budget.out_of_core_reason(5 * gb, None, peak(5 * gb) - 1)
    assert reason and "of RAM available" in reason
    assert budget.out_of_core_reason(5 * gb, None, peak(5 * gb)) is None
    # nothing known about RAM (no /proc): only the budget counts
    assert budget.out_of_core_reason(5 * gb, None, None) is None
    # size unknown (a pipe): in memory under auto, as before; out of core under a budget
    assert budget.out_of_core_reason(None, None, 1) is None
    assert "size is unknown" in budget.out_of_core_reason(None, 2 * gb, None)
    # the projection grows with the text
    assert peak(2 * gb) > peak(gb) > peak(0) > 0


def test_available_ram(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal: 100 kB\nMemAvailable:   2048 kB\n")
    assert budget.available_ram(str(meminfo)) == 2048 * 1024
    meminfo.write_text("MemTotal: 100 kB\n")  # kernels before 3.14
    assert budget.available_ram(str(meminfo)) is None
    assert budget.available_ram(str(tmp_path / "absent")) is None


def test_text_bytes_plain_and_gzip(tmp_path):
    events = [
        {"ph": "X", "name": f"op{i}", "ts": i, "dur": 1, "pid": 1, "tid": 1} for i in range(2000)
    ]
    plain = write_trace(tmp_path / "t.json", events)
    packed = write_trace(tmp_path / "t.json.gz", events, gz=True)
    assert budget.text_bytes(plain) == plain.stat().st_size
    assert budget.text_bytes(packed) == len(gzip.decompress(packed.read_bytes()))
    assert budget.text_bytes(tmp_path / "missing.json") is None


def test_sparse_mappings_behave_as_dicts():
    texts = {3: "[[2, 3], []]", 7: "caf\u00e9 \ud800", 12: ""}
    lengths, blob = SparseTexts.encode(list(texts.values()))
    mapped = SparseTexts(np.array(list(texts), np.int64), np.cumsum(lengths), blob)
    assert mapped == texts and dict(mapped.items()) == texts and list(mapped) == [3, 7, 12]
    assert mapped.get(7) == texts[7] and mapped.get(4) is None and 12 in mapped and 5 not in mapped
    assert bool(SparseTexts(np.zeros(0, np.int64), np.zeros(0, np.int64), blob[:0])) is False
    values = SparseValues(np.array([1, 5], np.int64), np.array([10, -1], np.int64))
    assert values == {1: 10, 5: -1} and values.get(2, 0) == 0
    assert type(values[1]) is int  # a Python number, as the dict held


def test_spill_parts_round_trip(tmp_path):
    sink = SpillParts(tmp_path)
    sink.append("a", np.arange(3, dtype=np.int64))
    sink.append("a", np.arange(3, 5, dtype=np.int64))
    sink.append("g", np.ones((2, 3), np.int64))
    sink.append("e", np.zeros(0, np.float64))
    assert sink.column("a", np.int64).tolist() == [0, 1, 2, 3, 4]
    assert sink.column("g", np.int64, 3).shape == (2, 3)
    assert sink.column("e", np.float64).shape == (0,)
    assert sink.column("never", np.int32, 3).shape == (0, 3)
    sink.append("b", np.zeros(1, np.int32))
    with pytest.raises(TypeError):  # one dtype per column file
        sink.append("b", np.zeros(1, np.int64))
    sink.close()
    sink.close()
    assert list(tmp_path.iterdir()) == []
