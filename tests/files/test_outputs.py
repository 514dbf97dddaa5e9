"""Inputs are sacred: outputs never land on an input, never half-written, never over a file.

Through the real CLI (`diff`, `memory`, `explain` with `-o`) on corpus traces
copied to a temporary folder, run in this process (`run_here`: what a command writes and
says is the point, not the process), and the naming/claiming rules of
`kinetoscope.files.outputs` directly. The FIFO output runs in a child: opening a FIFO
blocks until its other end opens, and the child's timeout ends a hang there.
"""

from __future__ import annotations

import gzip
import os
import shutil
import threading
from pathlib import Path

import pytest

from kinetoscope.errors import UsageError
from kinetoscope.files.outputs import numbered, publish, split_name, staged, write_file, write_text
from kinetoscope.files.own_files import is_kinetoscope_report

from ..capture_helpers import error_lines, run_cli, run_here
from ..conftest import corpus

BASE = "gpu/compare_base.json.gz"
TEST = "gpu/compare_test.json.gz"
WITH_MEMORY = "gpu/tiny_transformer_block_h100.pt.trace.json.gz"


def _copy(tmp_path: Path, relative: str, name: str) -> Path:
    return Path(shutil.copyfile(corpus(relative), tmp_path / name))


def _alias(kind: str, target: Path) -> Path:
    """The path itself, a symlink to it, or a hard link to it."""
    if kind == "same":
        return target
    alias = target.with_name("alias_" + target.name)
    (os.symlink if kind == "symlink" else os.link)(target, alias)
    return alias


def _refused(done, tmp_path, before: dict[Path, bytes]) -> None:
    assert done.returncode == 2, done.stderr
    [line] = error_lines(done.stderr)
    assert "never writes over its input" in line
    assert "Traceback" not in done.stderr
    for path, data in before.items():
        assert path.read_bytes() == data, path
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".kinetoscope-")]
    assert not leftovers


@pytest.mark.parametrize("kind", ["same", "symlink", "hardlink"])
@pytest.mark.parametrize("verb", ["diff", "memory", "explain"])
def test_output_onto_an_input_is_refused_before_writing(tmp_path, verb, kind):
    a = _copy(tmp_path, WITH_MEMORY if verb == "memory" else BASE, "a.json.gz")
    b = _copy(tmp_path, TEST, "b.json.gz")
    before = {a: a.read_bytes(), b: b.read_bytes()}
    out = _alias(kind, a)
    args = {"diff": ["diff", a, b], "memory": ["memory", a], "explain": ["explain", a]}[verb]
    done = run_here(*map(str, args), "-o", str(out), cwd=tmp_path)
    _refused(done, tmp_path, before)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == sorted(["a.json.gz", "b.json.gz", *([out.name] if kind != "same" else [])])


def test_diff_second_output_of_b_is_refused_too(tmp_path):
    a, b = _copy(tmp_path, BASE, "a.json.gz"), _copy(tmp_path, TEST, "b.json.gz")
    done = run_here("diff", str(a), str(b), "-o", str(b), cwd=tmp_path)
    _refused(done, tmp_path, {b: b.read_bytes()})


def test_existing_output_is_kept_and_the_new_one_is_numbered_unless_force(tmp_path):
    trace = _copy(tmp_path, BASE, "t.json.gz")
    report = tmp_path / "report.md"
    report.write_text("my notes\n")
    done = run_here("explain", str(trace), "-f", "md", "-o", str(report), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert report.read_text() == "my notes\n"
    second = tmp_path / "report_2.md"
    assert second.read_text().startswith("# kinetoscope: ")
    assert f"{report} exists (use --force to replace it); wrote {second}" in done.stderr
    done = run_here("explain", str(trace), "-f", "md", "-o", str(report), cwd=tmp_path)
    assert (tmp_path / "report_3.md").is_file()
    done = run_here("explain", str(trace), "-f", "md", "-o", str(report), "--force", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert report.read_text() == second.read_text()
    assert not (tmp_path / "report_4.md").exists()


def test_memory_plot_is_numbered_not_overwritten(tmp_path):
    trace = _copy(tmp_path, WITH_MEMORY, "t.json.gz")
    plot = tmp_path / "m.png"
    plot.write_bytes(b"mine")
    done = run_here("memory", str(trace), "-o", str(plot), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert plot.read_bytes() == b"mine"
    assert (tmp_path / "m_2.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("fmt", ["text", "md", "json", "html"])
def test_explain_dir_skips_the_report_it_wrote_there(tmp_path, fmt):
    folder = tmp_path / "run"
    folder.mkdir()
    _copy(folder, BASE, "trace.json.gz")
    first = run_here("explain", str(folder), "-f", fmt, "-o", str(folder / "report.json"))
    assert first.returncode == 0, first.stderr
    assert (folder / "report.json").is_file()
    again = run_here("explain", str(folder), "-f", "json")
    assert again.returncode == 0, again.stderr
    assert '"schema_version"' in again.stdout  # one trace: the single-trace report


def test_traces_including_ours_are_not_mistaken_for_reports(tmp_path):
    """Traces kinetoscope captured carry a "kinetoscope" *object* (the run's metadata):
    they are traces, not reports, and `explain DIR` must keep reading them."""
    data = gzip.decompress(corpus(BASE).read_bytes())
    brace = data.index(b"{")
    captured = tmp_path / "captured.json"
    captured.write_bytes(
        data[: brace + 1] + b'"kinetoscope": {"workload": "x"},' + data[brace + 1 :]
    )
    assert not is_kinetoscope_report(captured)
    assert not is_kinetoscope_report(corpus(TEST))
    assert not is_kinetoscope_report(
        corpus("multirank/dlrm_8ranks/worker0_step_12.1694128201545.pt.trace.json.gz")
    )


def test_split_and_number_names():
    assert split_name("a.pt.trace.json.gz") == ("a", ".pt.trace.json.gz")
    assert split_name("64_fp32_cold_eager.json") == ("64_fp32_cold_eager", ".json")
    assert split_name("README") == ("README", "")
    assert numbered(Path("d/r.html"), 1) == Path("d/r.html")
    assert numbered(Path("d/x.json.gz"), 3) == Path("d/x_3.json.gz")


def test_a_group_moves_to_the_first_number_free_for_all_its_names(tmp_path):
    (tmp_path / "t_2.txt").write_text("left from an older run")
    (tmp_path / "t.json").write_text("older trace")
    with staged(tmp_path) as a, staged(tmp_path) as b:
        a.write_text("trace")
        b.write_text("table")
        written = publish([(a, tmp_path / "t.json"), (b, tmp_path / "t.txt")])
    assert [p.name for p in written] == ["t_3.json", "t_3.txt"]
    assert (tmp_path / "t_2.txt").read_text() == "left from an older run"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "t.json",
        "t_2.txt",
        "t_3.json",
        "t_3.txt",
    ]


def test_concurrent_writers_to_one_name_all_keep_their_file(tmp_path):
    target = tmp_path / "same.json"
    barrier = threading.Barrier(8)
    results: list[Path] = []

    def writer(i: int) -> None:
        barrier.wait()
        results.append(write_text(target, f"writer {i}\n"))

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(results)) == 8
    assert sorted(p.read_text() for p in results) == [f"writer {i}\n" for i in range(8)]


def test_a_failing_writer_leaves_nothing(tmp_path):
    def boom(handle):
        handle.write(b"half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_file(tmp_path / "r.json", boom)
    assert list(tmp_path.iterdir()) == []


def test_output_into_a_missing_folder_or_onto_a_folder_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="does not exist"):
        write_text(tmp_path / "nope" / "r.txt", "x")
    with pytest.raises(UsageError, match="is a folder"):
        write_text(tmp_path, "x")


def test_dev_null_is_written_into_not_numbered(tmp_path):
    """`-o /dev/null` is how a user (and bench/bench_load.py) discards a report: it used to
    be "an existing file", so the report went to a new `/dev/null_2` nobody asked for."""
    trace = _copy(tmp_path, BASE, "t.json.gz")
    before = set(Path("/dev").glob("null_*"))
    done = run_here("explain", str(trace), "-o", "/dev/null", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    made = set(Path("/dev").glob("null_*")) - before
    for path in made:  # the old behaviour: clean up what it made, then fail
        path.unlink()
    assert not made
    assert os.path.exists("/dev/null") and not Path("/dev/null").is_file()


@pytest.mark.parametrize("force", [False, True])
def test_a_fifo_output_is_streamed_into_never_renamed_over(tmp_path, force):
    """A FIFO (or /dev/stdout piped) is a stream the user chose: the report flows into it,
    with or without --force; renaming a temp file over it would replace the FIFO itself
    and the reader would get nothing."""
    trace = _copy(tmp_path, BASE, "t.json.gz")
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as handle:
            got.append(handle.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    flags = ["--force"] if force else []
    # a child (`python -m kinetoscope`): an open that never meets its reader hangs it, not
    # this process, until the child's timeout
    done = run_cli("explain", str(trace), "-f", "json", "-o", str(fifo), *flags, cwd=tmp_path)
    if reader.is_alive():  # nothing opened the FIFO (the old code renamed over it): unblock
        with open(fifo, "wb"):
            pass
    reader.join(timeout=30)
    assert done.returncode == 0, done.stderr
    assert got and got[0].startswith(b"{") and b'"schema_version"' in got[0]
    assert fifo.is_fifo() and not (tmp_path / "out_2.fifo").exists()
