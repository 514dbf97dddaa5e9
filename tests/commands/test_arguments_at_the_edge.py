"""Arguments checked when parsed (issue 36): step ranges, ports, sizes and the spill
folder are one line and exit 2 before any work, in the CLI and the MCP tools; none is
an internal OverflowError or MemoryError, and no message grows with the number a user
typed."""

from __future__ import annotations

import time

import pytest

from kinetoscope.agent import tools
from kinetoscope.errors import UsageError
from tests.commands.test_hard_input import cli
from tests.conftest import corpus

RESNET = "gpu/resnet50_dataloader_workers0.pt.trace.json.gz"  # ProfilerStep#5..#10
HUGE = "1-99999999999999999999"


def _one_line_2(result, *needles: str) -> None:
    code, _, err = result
    assert code == 2, err
    assert err.count("\n") == 1, err
    for needle in needles:
        assert needle in err, err


def test_a_step_number_past_18_digits_is_refused_when_parsed(tmp_path, capsys):
    """It was an internal OverflowError in slice and view --slice (numpy's int64 steps)."""
    out = tmp_path / "s.json"
    for args in (["slice", corpus(RESNET), "--steps", HUGE, "-o", out],
                 ["view", corpus(RESNET), "--slice", HUGE, "--no-browser"]):  # fmt: skip
        _one_line_2(cli(*args, capsys=capsys), "--steps", "at most 18 digits")
    assert not out.exists()
    with pytest.raises(UsageError, match="at most 18 digits"):
        tools.slice_(corpus(RESNET).parent, RESNET.split("/")[1], "x.json", steps=HUGE)


@pytest.mark.parametrize("steps", ["1009-99999999999", "1009-50000000", "1-999999999999999999"])
def test_a_long_range_of_missing_steps_is_a_short_message_at_once(tmp_path, capsys, steps):
    """1009-99999999999 was a MemoryError (every asked number listed), 1009-50000000 a
    16.9-million-character message built in 17 s."""
    began = time.perf_counter()
    code, _, err = cli("slice", corpus(RESNET), "--steps", steps, "-o", tmp_path / "s.json",
                       capsys=capsys)  # fmt: skip
    assert time.perf_counter() - began < 10
    _one_line_2((code, "", err), "not in the trace (it has steps 5-10)")
    assert len(err) < 300, err


def test_missing_steps_inside_a_range_are_named_as_ranges(tmp_path, capsys):
    code, _, err = cli("slice", corpus(RESNET), "--steps", "3-12", "-o", tmp_path / "s.json",
                       capsys=capsys)  # fmt: skip
    _one_line_2((code, "", err), "steps 3-4, 11-12 not in the trace (it has steps 5-10)")


@pytest.mark.parametrize("port", ["99999", "-1", "65536"])
def test_a_port_outside_0_to_65535_is_one_line(capsys, port):
    """It was an internal OverflowError from the socket."""
    result = cli("view", corpus(RESNET), "--port", port, "--no-browser", capsys=capsys)
    _one_line_2(result, f"--port {port}", "0 to 65535")


def test_a_spill_folder_that_does_not_exist_is_one_line(tmp_path, capsys):
    """It was an internal FileNotFoundError once the load went out of core."""
    missing = tmp_path / "nonexistent"
    for command in ("explain", "summary"):
        result = cli(command, corpus(RESNET), "--max-memory", "0", "--spill-dir", missing,
                     capsys=capsys)  # fmt: skip
        _one_line_2(result, "--spill-dir", "not a folder")
    a_file = tmp_path / "file"
    a_file.write_text("")
    result = cli("summary", corpus(RESNET), "--max-memory", "0", "--spill-dir", a_file,
                 capsys=capsys)  # fmt: skip
    _one_line_2(result, "--spill-dir", "not a folder")


def test_a_size_of_400_digits_is_one_line(capsys):
    """`int(float('9' * 400))` was an internal OverflowError."""
    _one_line_2(cli("summary", corpus(RESNET), "--max-memory", "9" * 400, capsys=capsys),
                "--max-memory")  # fmt: skip
