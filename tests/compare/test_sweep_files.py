"""`sweep` lists every file it wrote and never overwrites an earlier sweep's files.

The first sweep is the session's shared one (tests/compare/matmul_sweep.py, `size=0,16,512`);
the second, into a copy of its folder, is real (the sweep in this process, its `profile`
runs children): `size=0,16`, so that its one `profile` child that records (size 0 is
refused before torch is imported) lands on a name the first took."""

from __future__ import annotations

import re
from pathlib import Path

from .matmul_sweep import matmul_sweep, run_sweep  # noqa: F401  (the session fixture)


def _wrote(stdout: str) -> set[Path]:
    return {Path(p.strip()) for p in re.findall(r"^wrote (\S+)", stdout, re.M)}


def _files(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if p.is_file()}


def test_a_second_sweep_keeps_the_first_and_lists_all_it_wrote(tmp_path, matmul_sweep):  # noqa: F811
    first = matmul_sweep
    on_disk = _files(first.out)
    assert _wrote(first.stdout) == on_disk  # every file, and only those
    assert len(on_disk) == 2 * 2 + 3  # trace + table per size that ran, png + svg + json
    out = first.copy(tmp_path / "out")
    before = {out / p.relative_to(first.out): p.read_bytes() for p in on_disk}
    second = run_sweep(out, "--vary", "size=0,16", "--active", "1")
    assert second.returncode == 1, second.stdout + second.stderr  # size 0's failed row
    for path, data in before.items():
        assert path.read_bytes() == data, path
    new = _files(out) - set(before)
    assert _wrote(second.stdout) == new
    assert len(new) == 2 + 3  # 16's trace and table, the sweep's png, svg and json
    assert out / "01_matmul_add" / "16_fp32_warm_eager_shapes_2.json" in new
    assert out / "sweeps" / "matmul_add_size_2.png" in new
