"""Every kind of bad input reaches the user as one line on stderr and exit code 2."""

from __future__ import annotations

import gzip
import json
import subprocess

import pytest

from ..capture_helpers import run_cli, run_here

GOOD_EVENT = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "dur": 2}


def _truncated_without_any_event() -> bytes:
    return b'{"schemaVersion": 1, "traceEvents": [{"ph": "X", "na'


BAD_INPUTS = {
    "empty": b"",
    "whitespace": b"  \n ",
    # a list of events is Chrome's JSON Array Format, which is read (test_hard_input.py)
    "json_list": json.dumps([1, 2, 3]).encode(),
    "not_kineto_object": b'{"displayTimeUnit": "ms"}',
    "chrome_trace_not_pytorch": json.dumps(
        {
            "traceEvents": [
                {"ph": "X", "cat": "blink", "name": "Paint", "pid": 1, "tid": 1, "ts": 1, "dur": 2}
            ]
        }
    ).encode(),
    "no_events": b'{"traceEvents": []}',
    "only_metadata": b'{"traceEvents": [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0,'
    b' "args": {"name": "python"}}]}',
    "binary_garbage": bytes(range(256)),
    "truncated_before_any_event": _truncated_without_any_event(),
    "corrupt_gzip": b"\x1f\x8b\x08\x00" + b"\xff" * 64,
    "gzip_of_garbage": gzip.compress(b"not json at all"),
}


def _run(*args: str) -> subprocess.CompletedProcess:
    """The command in this process: these tests are about what it prints and exits with."""
    return run_here(*args)


def _assert_one_line_exit_2(done: subprocess.CompletedProcess, path) -> None:
    assert done.returncode == 2, (done.returncode, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert str(path) in lines[0]


@pytest.mark.parametrize("kind", sorted(BAD_INPUTS))
@pytest.mark.parametrize("verb", ["summary", "table"])
def test_bad_file_is_one_line_and_exit_2(tmp_path, kind, verb):
    path = tmp_path / f"{kind}.json"
    path.write_bytes(BAD_INPUTS[kind])
    before = path.read_bytes()
    _assert_one_line_exit_2(_run(verb, str(path)), path)
    assert path.read_bytes() == before


def test_missing_file_and_directory(tmp_path):
    # through `python -m kinetoscope`: the console path of the one-line error stays covered
    _assert_one_line_exit_2(run_cli("summary", str(tmp_path / "missing.json")), tmp_path)
    _assert_one_line_exit_2(_run("table", str(tmp_path)), tmp_path)


def test_truncated_file_warns_and_still_reports(tmp_path):
    events = [dict(GOOD_EVENT, ts=i * 10, name=f"aten::op{i % 7}") for i in range(300)]
    data = json.dumps({"traceEvents": events}).encode()
    path = tmp_path / "cut.json"
    path.write_bytes(data[: len(data) * 2 // 3])
    done = _run("summary", str(path))
    assert done.returncode == 0, done.stderr
    assert "truncated" in done.stdout + done.stderr


@pytest.mark.parametrize("where", ["before", "after"])
def test_global_options_are_read_before_or_after_the_subcommand(tmp_path, where):
    """`--debug` after the subcommand was 'No such option'; a script's own `--debug`
    after `--` stays the script's."""
    from kinetoscope.cli import hoisted
    from kinetoscope.errors import TraceError

    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    args = ["--debug", "summary", bad] if where == "before" else ["summary", bad, "--debug"]
    if where == "before":  # a child: the traceback --debug shows is the interpreter's
        res = run_cli(*map(str, args))
        assert "No such option" not in res.stderr
        assert "Traceback" in res.stderr and "TraceError" in res.stderr  # what --debug shows
    else:  # here the error leaves `main` as it is; a usage error or its one line exits 2
        with pytest.raises(TraceError):
            run_here(*args)
    assert hoisted(["profile", "s.py", "--debug", "--", "--debug"]) == [
        "--debug", "profile", "s.py", "--", "--debug"
    ]  # fmt: skip
