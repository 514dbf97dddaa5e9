"""`sweep` lists every file it wrote and never overwrites an earlier sweep's files."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ..capture_helpers import SRC


def _sweep(out: Path):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(SRC)}
    argv = [sys.executable, "-m", "kinetoscope", "sweep", "matmul_add", "--vary", "size=8,16"]
    argv += ["--device", "cpu", "--active", "1", "--out", str(out)]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)


def _wrote(stdout: str) -> set[Path]:
    return {Path(p.strip()) for p in re.findall(r"^wrote (\S+)", stdout, re.M)}


def test_a_second_sweep_keeps_the_first_and_lists_all_it_wrote(tmp_path):
    pytest.importorskip("torch")
    first = _sweep(tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    on_disk = {p for p in tmp_path.rglob("*") if p.is_file()}
    assert _wrote(first.stdout) == on_disk  # every file, and only those
    assert len(on_disk) == 2 * 2 + 3  # trace + table per size, png + svg + json
    before = {p: p.read_bytes() for p in on_disk}
    second = _sweep(tmp_path)
    assert second.returncode == 0, second.stdout + second.stderr
    for path, data in before.items():
        assert path.read_bytes() == data, path
    new = {p for p in tmp_path.rglob("*") if p.is_file()} - on_disk
    assert _wrote(second.stdout) == new
    assert tmp_path / "01_matmul_add" / "8_fp32_warm_eager_shapes_2.json"  # shapes: recorded in new
    assert tmp_path / "sweeps" / "matmul_add_size_2.png" in new
