"""The README is executable: its loop runs as written, and CI installs what it says.

The set-up's `kinetoscope` command, then the `bash` block under "The loop", run line
by line, in order, on CPU, in an empty folder: every file a later command reads must
come from an earlier one, and no command's file takes another's name (no `_2`).
"""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest

from .capture_helpers import SRC, profile_here, run_cli, run_here

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")


def _bash_block_after(heading: str) -> list[str]:
    section = README[README.index(heading) :]
    block = re.search(r"```bash\n(.*?)```", section, re.S)[1]
    return [line for line in block.splitlines() if line.strip()]


def _install_line(text: str) -> str:
    return re.search(r'pip install (?:-q )?(-e "\.\[[^\]]*\]" "torch==[^"]+")', text)[1]


def test_ci_installs_exactly_what_the_readme_says():
    readme = _install_line(README)
    ci = _install_line((REPO / ".ci" / "run").read_text(encoding="utf-8"))
    assert ci == readme


def test_ci_runs_exactly_the_readme_test_command():
    (readme,) = _bash_block_after("Run the tests")
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").split("# README test command:\n")[1]
    assert ci.strip() == readme.strip() and readme.startswith("python -m pytest")


def test_readme_loop_runs_in_order_on_cpu(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    if not any(shutil.which(c) for c in ("g++", "c++", "clang++")):
        pytest.skip("the loop's --compile run needs a C++ compiler on CPU")
    # children (the --compile run, the sweep's points) on CPU with one thread each
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("PYTHONPATH", str(SRC))
    # the set-up's main job first (after its install), then the loop, as a reader runs them
    setup = _bash_block_after("## Set-up")[0].rsplit("&& ", 1)[1]
    for line in [setup, *_bash_block_after("## The loop")]:
        argv = shlex.split(line, comments=True)
        assert argv[0] == "kinetoscope", line
        done = _run_line(argv[1:], tmp_path, in_process=not torch.cuda.is_available())
        assert done.returncode == 0, f"{line}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        assert "Traceback" not in done.stderr, line
    assert (tmp_path / "report.html").is_file()
    # one story: no command wrote over another's name, so nothing got a `_2`
    renamed = [p for p in tmp_path.rglob("*") if re.search(r"_\d+\.\w+$", p.name)]
    assert renamed == [], renamed


def _run_line(args: list[str], folder: Path, in_process: bool):
    """One README line, in this process where that shows what the line does (each
    child cost 1-7 s of CPU before its command started: the CLI, then torch for
    `profile`). The `--compile` run keeps a child: it compiles with inductor, whose
    caches and threads a process keeps, and with one thread as a reader's laptop run
    would not be. On a machine with a device, every line is a child: the loop is the
    CPU story, and a process's CUDA is set up once, before CUDA_VISIBLE_DEVICES could
    hide it."""
    if in_process and "--compile" not in args:
        if args[0] == "profile":
            return profile_here(*args[1:], cwd=folder)
        return run_here(*args, cwd=folder)
    return run_cli(*args, cwd=folder)
