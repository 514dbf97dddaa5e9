"""`sweep` lists every file it wrote and never overwrites an earlier sweep's files.

The first sweep is the session's shared one (tests/compare/matmul_sweep.py, `size=0,16,512`);
the second, into a copy of its folder, is real: `size=0,16`, so that its one `profile` run
that records (size 0 is refused before torch is imported) lands on a name the first took.
It runs in this process, its `profile` runs too (`profile_here`, in place of the sweep's
`subprocess.run` of `python -m kinetoscope profile`): a child cost about 4 s of CPU
before recording, and what is tested here is the folder, not the child (the shared
sweep's runs are children)."""

from __future__ import annotations

import re
import subprocess
import types
from pathlib import Path

import kinetoscope.compare.sweep as sweep_module

from ..capture_helpers import profile_here
from .matmul_sweep import matmul_sweep, run_sweep  # noqa: F401  (the session fixture)


def _wrote(stdout: str) -> set[Path]:
    return {Path(p.strip()) for p in re.findall(r"^wrote (\S+)", stdout, re.M)}


def _files(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if p.is_file()}


def _profile_here(argv, *, capture_output, text, timeout):
    """The sweep's `subprocess.run` of one point's `python -m kinetoscope profile ...`."""
    assert argv[1:4] == ["-m", "kinetoscope", "profile"] and capture_output and text, argv
    return profile_here(*argv[4:])


def test_a_second_sweep_keeps_the_first_and_lists_all_it_wrote(
    tmp_path,
    monkeypatch,
    matmul_sweep,  # noqa: F811
):
    first = matmul_sweep
    on_disk = _files(first.out)
    assert _wrote(first.stdout) == on_disk  # every file, and only those
    assert len(on_disk) == 2 * 2 + 3  # trace + table per size that ran, png + svg + json
    out = first.copy(tmp_path / "out")
    before = {out / p.relative_to(first.out): p.read_bytes() for p in on_disk}
    here = types.SimpleNamespace(run=_profile_here, TimeoutExpired=subprocess.TimeoutExpired)
    monkeypatch.setattr(sweep_module, "subprocess", here)
    second = run_sweep(out, "--vary", "size=0,16", "--active", "1")
    assert second.returncode == 1, second.stdout + second.stderr  # size 0's failed row
    for path, data in before.items():
        assert path.read_bytes() == data, path
    new = _files(out) - set(before)
    assert _wrote(second.stdout) == new
    assert len(new) == 2 + 3  # 16's trace and table, the sweep's png, svg and json
    assert out / "01_matmul_add" / "16_fp32_warm_eager_shapes_2.json" in new
    assert out / "sweeps" / "matmul_add_size_2.png" in new
