"""`kinetoscope profile dataloader --read-ms X --prefetch-factor N`: the two knobs `tune`
sets, exposed on the command line like the workload's other options.

`--read-ms` makes every item sleep that long before it is built (a disk or
network read); with `--num-workers 0` the main process sleeps inside
DataLoader.__next__, so each step's data wait grows by batch x read-ms.
`--prefetch-factor` is handed to the DataLoader (batches each worker keeps
ready); torch refuses it without workers, and so does the command, in one line.

The runs are in this process (`profile_here`): what is checked is what the recording
holds, not the process. The children these tests started had OMP_NUM_THREADS=1; no
assertion reads the thread count (the data wait is the items' sleep), and in process
the variable would change nothing (torch reads it when it is imported).
"""

from __future__ import annotations

import pytest

import kinetoscope
from kinetoscope.analysis.dataloader import data_waits

from ..capture_helpers import error_lines, profile_here

pytest.importorskip("torch")  # the capture runs the workload under torch.profiler

#: a cheap loop: 4 items of 16x16 pixels, one blur pass, a 64-wide MLP
SMALL = ["--device", "cpu", "--batch", "4", "--image", "16", "--blur", "1", "--hidden", "64"]


def _profile(out, *extra):
    result = profile_here("dataloader", *SMALL, *extra, "--out", str(out))
    assert result.returncode == 0, result.stderr[-2000:]
    (path,) = (out / "06_dataloader").glob("*.json")
    return path, kinetoscope.load(path)


def test_read_ms_reaches_the_dataset_and_lengthens_the_data_wait(tmp_path):
    plain_path, plain = _profile(tmp_path / "plain")
    read_path, read = _profile(tmp_path / "read", "--read-ms", "10")
    params = read.meta.kinetoscope["params"]
    assert params["read_ms"] == 10.0 and plain.meta.kinetoscope["params"]["read_ms"] == 0.0
    assert "read10ms" in read_path.name and "read" not in plain_path.name
    # 4 items x 10 ms of sleep inside __next__ per step: at least 40 ms of data wait
    # (sleep never returns early). Only the floor is asserted: how long the plain run's
    # 4 tiny images take depends on the machine's load (a loaded machine took over 10 ms
    # for them, and in process torch uses every core), so a difference between the two
    # runs would be a timing assertion.
    read_waits = [w.wait_us for w in data_waits(read)]
    assert len(read_waits) == len(data_waits(plain)) == 3
    assert min(read_waits) >= 40_000, read_waits


def test_prefetch_factor_reaches_the_loader(tmp_path):
    path, trace = _profile(tmp_path, "--num-workers", "1", "--prefetch-factor", "3")
    assert trace.meta.kinetoscope["params"]["prefetch_factor"] == 3
    assert trace.meta.kinetoscope["params"]["num_workers"] == 1
    assert path.name.endswith("_pf3.json")


def test_prefetch_factor_without_workers_is_one_line(tmp_path):
    result = profile_here("dataloader", *SMALL, "--prefetch-factor", "4", "--out", str(tmp_path))
    assert result.returncode == 2
    (line,) = error_lines(result.stderr)
    assert "--prefetch-factor 4 needs --num-workers >= 1" in line
    assert not (tmp_path / "06_dataloader").exists() or not any(tmp_path.rglob("*.json"))
