"""Numbers beyond a float's range in a trace (issue 36): a `ts` or `dur` of 309 to 4,300
digits is one line and exit 2 in every command and every reader (it was an internal
`OverflowError: int too large to convert to float` in the schema step); such a `flops`
or occupancy argument is dropped with the loader's warning, as args integers beyond
int64 already are."""

from __future__ import annotations

import json

import pytest

import kinetoscope
from kinetoscope.errors import TraceError
from tests.commands.test_hard_input import EVENTS, TEXT, cli
from tests.conftest import write_trace

BIG = "9" * 400
#: each reading command; slice through its own scanner, whole and with --drop
COMMANDS = [
    ["table", "{t}"],
    ["explain", "{t}", "--format", "md"],
    ["chain", "{t}"],
    ["memory", "{t}"],
    ["diff", "{base}", "{t}"],
    ["slice", "{t}", "-o", "{out}", "--force", "--window", "0:"],
    ["slice", "{t}", "-o", "{out}", "--force", "--steps", "1", "--drop", "kernel"],
]


def _with(field: str, digits: str) -> bytes:
    """The hard-input trace with `aten::mm`'s `field` (or its args' `flops`) a number of
    `digits` (json.dumps cannot write one that no float holds)."""
    doc = json.loads(TEXT)
    event = doc["traceEvents"][1]
    if field == "flops":
        event.setdefault("args", {})["flops"] = "@BIG@"
    else:
        event[field] = "@BIG@"
    return json.dumps(doc).replace('"@BIG@"', digits).encode()


def _run(path, tmp_path, capsys):
    base = write_trace(tmp_path / "base.json", EVENTS)
    out = tmp_path / "slice.json"
    for command in COMMANDS:
        args = [a.format(t=path, base=base, out=out) for a in command]
        yield " ".join(command), cli(*args, capsys=capsys)


@pytest.mark.parametrize("field", ["ts", "dur"])
def test_a_time_beyond_float_range_is_one_line_exit_2_in_every_command(tmp_path, capsys, field):
    path = tmp_path / f"{field}.json"
    path.write_bytes(_with(field, BIG))
    for command, (code, _, err) in _run(path, tmp_path, capsys):
        assert code == 2, (command, err)
        assert err.count("\n") == 1, (command, err)
        assert f"has a `{field}` beyond a float's range" in err, (command, err)


@pytest.mark.parametrize(
    "options",
    [{"split_min_bytes": 1 << 40}, {"split_min_bytes": 0}, {"out_of_core": True}],
    ids=["one-pass", "split", "out-of-core"],
)
def test_every_reader_refuses_a_time_beyond_float_range_the_same_way(tmp_path, options):
    path = tmp_path / "t.json"
    # a long trace, so the split loader's worker reads the bad event in its half
    doc = json.loads(TEXT)
    doc["traceEvents"] = doc["traceEvents"] * 2000 + [dict(doc["traceEvents"][1], ts="@BIG@")]
    path.write_bytes(json.dumps(doc).replace('"@BIG@"', BIG).encode())
    if "out_of_core" in options:
        options = {**options, "spill_dir": tmp_path}
    with pytest.raises(TraceError, match="has a `ts` beyond a float's range"):
        kinetoscope.load(path, **options)


def test_flops_beyond_float_range_is_dropped_with_a_warning(tmp_path, capsys):
    path = tmp_path / "flops.json"
    path.write_bytes(_with("flops", BIG))
    for command, (code, _, err) in _run(path, tmp_path, capsys):
        assert "internal error" not in err, (command, err)
        assert code == 0, (command, err)
    trace = kinetoscope.load(path)
    assert any("beyond the 64-bit range were dropped" in w for w in trace.warnings)
