"""One way to write every output (issue 33): every command that writes a file, held to
the same rules, through the real CLI in this process.

- an existing file is never replaced without `--force`: the new one is `NAME_2`, said
  in one line; `--force` replaces it;
- `-o -` is standard output for text (no file named `-`); a picture refuses it in
  one line, exit 2;
- a new file's mode follows the umask;
- text ends with a newline, in a file and on standard output (stdout-only commands
  too: `explain DIR`, `chain`, `table`, `summary`);
- nothing is left beside the output (the temporary file is renamed into place).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import kernel, launch, op, write_trace

from ..capture_helpers import cli

MEMORY = {"Device Type": 1, "Device Id": 0, "Addr": 123, "Total Reserved": 8192}
EVENTS = [
    op("ProfilerStep#1", 0, 50),
    op("aten::mm", 1, 10),
    launch(2, 3, 7),
    kernel("gemm", 5, 4, 7),
    {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 100, "tid": 1,
     "ts": 3, "s": "t", "args": {**MEMORY, "Bytes": 1024, "Total Allocated": 4096}},
    op("ProfilerStep#2", 50, 50),
    op("aten::mm", 51, 10),
    launch(52, 3, 8),
    kernel("gemm", 55, 4, 8),
    {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 100, "tid": 1,
     "ts": 53, "s": "t", "args": {**MEMORY, "Bytes": -1024, "Total Allocated": 3072}},
]  # fmt: skip
DOC = {"deviceProperties": [{"id": 0, "name": "NVIDIA H100"}]}

#: every command that writes a file with -o: (arguments before -o, the file's name, text?)
WRITERS = {
    "explain": (["explain", "{t}"], "report.txt", True),
    "explain-md": (["explain", "{t}", "--format", "md"], "report.md", True),
    "explain-json": (["explain", "{t}", "--format", "json"], "report.json", True),
    "explain-html": (["explain", "{t}", "--format", "html"], "report.html", True),
    "diff": (["diff", "{t}", "{b}"], "diff.txt", True),
    "diff-html": (["diff", "{t}", "{b}", "--format", "html"], "diff.html", True),
    "slice": (["slice", "{t}", "--steps", "2"], "slice.json", True),
    "slice-gz": (["slice", "{t}", "--steps", "2"], "slice.json.gz", False),
    "memory": (["memory", "{t}"], "memory.png", False),
    "plot": (["plot", "{t}"], "plot.png", False),
}
#: commands whose text only goes to standard output
PRINTERS = {
    "explain-dir": ["explain", "{d}"],
    "explain-ranks": ["explain", "{j}"],
    "chain": ["chain", "{t}"],
    "table": ["table", "{t}"],
    "summary": ["summary", "{t}"],
    "check": ["check", "{t}", "-e", "steps == 2"],
}


@pytest.fixture
def inputs(tmp_path, monkeypatch) -> dict[str, Path]:
    """Two traces, a folder of two traces not of one job, and a clean working folder."""
    folder = tmp_path / "in"
    (folder / "runs").mkdir(parents=True)
    t = write_trace(folder / "t.json", EVENTS, **DOC)
    b = write_trace(folder / "b.json", EVENTS[:5], **DOC)
    shutil.copy(t, folder / "runs" / "one.json")
    shutil.copy(b, folder / "runs" / "two.json")
    (folder / "job").mkdir()
    for rank in (0, 1):
        info = {"distributedInfo": {"rank": rank, "world_size": 2}}
        write_trace(folder / "job" / f"rank{rank}.json", EVENTS, **DOC, **info)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return {"t": t, "b": b, "d": folder / "runs", "j": folder / "job", "work": work}


def _args(command: list[str], inputs: dict[str, Path]) -> list[str]:
    return [a.format(**inputs) for a in command]


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_every_writer_numbers_forces_follows_the_umask_and_leaves_nothing(name, inputs, capsys):
    pytest.importorskip("matplotlib")
    pytest.importorskip("jinja2")
    command, file_name, text = WRITERS[name]
    work = inputs["work"]
    out = work / file_name
    old = os.umask(0o027)
    try:
        code, _, err = cli(*_args(command, inputs), "-o", out, capsys=capsys)
        assert code == 0, err
        assert out.stat().st_mode & 0o777 == 0o640  # 0666 under umask 027
        first = out.read_bytes()
        if text:
            assert first.endswith(b"\n")
        # again: the first file stays, the new one is NAME_2, said in one line
        code, _, err = cli(*_args(command, inputs), "-o", out, capsys=capsys)
        stem, _, ext = file_name.partition(".")
        second = work / f"{stem}_2.{ext}"
        assert code == 0, err
        assert f"{out} exists (use --force to replace it); wrote {second}\n" in err
        assert out.read_bytes() == first and second.stat().st_mode & 0o777 == 0o640
        # --force replaces it, with no _3
        out.write_bytes(b"old")
        code, _, err = cli(*_args(command, inputs), "-o", out, "--force", capsys=capsys)
        assert code == 0, err
        assert out.read_bytes() != b"old" and not (work / f"{stem}_3.{ext}").exists()
        assert out.stat().st_mode & 0o777 == 0o640
    finally:
        os.umask(old)
    assert sorted(p.name for p in work.iterdir()) == sorted([file_name, second.name])


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_dash_is_standard_output_for_text_and_refused_for_pictures(name, inputs, capsys):
    pytest.importorskip("matplotlib")
    pytest.importorskip("jinja2")
    command, file_name, text = WRITERS[name]
    if file_name.endswith(".gz"):
        pytest.skip("`-` names no compression: the plain slice is the text case")
    code, out, err = cli(*_args(command, inputs), "-o", "-", capsys=capsys)
    assert not (inputs["work"] / "-").exists()
    if text:
        assert code == 0, err
        assert out.endswith("\n") and len(out) > 100
        assert "wrote" not in err
    else:
        assert code == 2 and err.count("\n") == 1, err
        assert out == ""


@pytest.mark.parametrize("name", sorted(PRINTERS))
def test_text_on_standard_output_ends_with_a_newline(name, inputs, capsys):
    code, out, err = cli(*_args(PRINTERS[name], inputs), capsys=capsys)
    assert code == 0, err
    assert out.endswith("\n") and not out.endswith("\n\n\n"), out[-200:]


def test_the_repository_root_holds_only_what_the_layout_names():
    """A stray output (the 50 KB HTML report named `-` that `-o -` once wrote) is not
    part of the project: the root holds the layout of docs/architecture.md and the
    README, and nothing else that git tracks."""
    import subprocess

    repo = Path(__file__).resolve().parents[2]
    if not (repo / ".git").exists():
        pytest.skip("not a git checkout: nothing tracked to check")
    listed = subprocess.run(
        ["git", "ls-files"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    tops = {line.split("/", 1)[0] for line in listed}
    layout = {".ci", ".gitignore", "README.md", "bench", "docs", "pyproject.toml", "src", "tests"}
    assert tops <= layout, sorted(tops - layout)
