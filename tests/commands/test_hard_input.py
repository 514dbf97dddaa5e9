"""Hard input, every command (issue 25): each input either loads (with a warning
where something was dropped or repaired) or is one clear line on stderr with exit
2, in every command that reads a trace, `slice` included; nothing reaches the
terminal raw; `slice` writes strict UTF-8 JSON; no name makes any command take
more than linear time.

Commands run in-process through `kinetoscope.cli.main` (the real error mapping,
fast); a few run in a subprocess where the process itself is the point (stdin,
Ctrl-C), and a file name with control characters is the one `python -m kinetoscope`
bad-input case of explain, diff, memory and chain."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import kinetoscope
from kinetoscope.errors import TraceError
from tests.conftest import kernel, launch, op, write_trace

from ..capture_helpers import cli, run_here

SRC = str(Path(__file__).resolve().parents[2] / "src")


def mem(ts, nbytes, total=4096):
    """A `[memory]` allocator event as PyTorch writes it (profile_memory=True)."""
    args = {"Device Type": 1, "Device Id": 0, "Addr": 123, "Bytes": nbytes}
    args.update({"Total Allocated": total, "Total Reserved": 8192})
    return {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 100,
            "tid": 1, "ts": ts, "s": "t", "args": args}  # fmt: skip


EVENTS = [
    op("ProfilerStep#1", 0, 50),
    op("aten::mm", 1, 10),
    launch(2, 3, 7),
    kernel("gemm", 5, 4, 7),
    mem(3, 1024),
    op("ProfilerStep#2", 50, 50),
    op("aten::mm", 51, 10),
    launch(52, 3, 8),
    kernel("gemm", 55, 4, 8),
    mem(53, -1024, total=3072),
]
DOC = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100"}]}
TEXT = json.dumps({**DOC, "traceEvents": EVENTS}).encode()
#: every command that reads one trace, with what it needs to run
READERS = [
    ["explain", "{t}"],
    ["explain", "{t}", "--format", "md"],
    ["explain", "{t}", "--format", "json"],
    ["summary", "{t}"],
    ["table", "{t}"],
    ["chain", "{t}", "--limit", "2"],
    ["memory", "{t}"],
    ["diff", "{base}", "{t}"],
    ["check", "{t}", "-e", "kernels_per_step >= 0"],
    ["slice", "{t}", "--steps", "2", "-o", "{out}", "--force"],
]


def _deep(depth: int) -> bytes:
    return TEXT.replace(b'"args": {}', b'"args": {"x": ' + b"[" * depth + b"]" * depth + b"}", 1)


def run_all(path: Path, tmp_path: Path, capsys) -> dict[str, tuple[int, str, str]]:
    base = write_trace(tmp_path / "base.json", EVENTS, **DOC)
    out = tmp_path / "slice.json"
    results = {}
    for command in READERS:
        args = [a.format(t=path, base=base, out=out) for a in command]
        results[" ".join(a for a in command if "{" not in a)] = cli(*args, capsys=capsys)
    return results


def _one_line_exit_2(result, message: str) -> None:
    code, _, err = result
    assert code == 2, result
    assert err.count("\n") == 1 and message in err, err


# ---- 1. one input path: the same refusal, in every command -----------------
@pytest.mark.parametrize("decoder", ["strict", "lenient"])
def test_bytes_that_are_not_utf8_are_the_same_one_line_error_in_every_command(
    tmp_path, capsys, decoder
):
    """lenient: a value of an odd type before the name sends the piece to the lenient
    decoder, where slice met an internal UnicodeDecodeError (issue 36)."""
    path = tmp_path / "utf8.json"
    text = TEXT.replace(b"aten::mm", b"aten::\xff\xfe", 1)
    if decoder == "lenient":
        text = text.replace(b'"dur": 50', b'"dur": "50"', 1)
    path.write_bytes(text)
    for command, result in run_all(path, tmp_path, capsys).items():
        assert result[0] == 2, command  # slice: was an internal error (UnicodeDecodeError)
        _one_line_exit_2(result, "is not valid UTF-8 text (invalid start byte: byte 0xff)")


@pytest.mark.parametrize(
    "change",
    ["ph_list", "cat_list", "cat_object", "flow_id_object", "step_past_int64", "bytes_2_70"],
)
def test_odd_types_and_numbers_past_int64_are_read_by_every_command(tmp_path, capsys, change):
    """slice used to crash on unhashable ph/cat/flow ids (TypeError) and on a step number
    past int64 (OverflowError); every reader on Bytes = 2**70 or such a step number."""
    doc = json.loads(TEXT)
    events = doc["traceEvents"]
    if change == "ph_list":
        events[1]["ph"] = [1, 2]
    elif change == "cat_list":
        events[1]["cat"] = ["cpu_op"]
    elif change == "cat_object":
        events[6]["cat"] = {"a": 1}
    elif change == "flow_id_object":
        events.append({"ph": "s", "cat": "ac2g", "name": "f", "id": {"a": 1}, "pid": 100,
                       "tid": 1, "ts": 2})  # fmt: skip
    elif change == "step_past_int64":
        events[0]["name"] = "ProfilerStep#99999999999999999999999"
    else:
        events[4]["args"]["Bytes"] = 2**70
    path = tmp_path / f"{change}.json"
    path.write_text(json.dumps(doc))
    for command, (code, _, err) in run_all(path, tmp_path, capsys).items():
        assert "internal error" not in err, (command, err)
        if command.startswith("slice") and change == "step_past_int64":  # step 2 is still there
            assert code == 0, err
        assert code in (0, 2), (command, code, err)
        assert err.count("\n") <= 2, err
    trace = kinetoscope.load(path)
    if change == "bytes_2_70":
        assert -1 in trace.memory.nbytes.tolist() or len(trace.memory.nbytes) == 1
        assert any("beyond the 64-bit range" in w for w in trace.warnings)
        quality = kinetoscope.explain(trace).quality
        assert quality["grade"] != "good"  # the drop is in the trust grade
        assert any(i["id"] == "input-repaired" for i in quality["issues"])
    if change == "step_past_int64":
        assert [s.number for s in trace.steps] == [2]
        assert any("were not read as steps" in w for w in trace.warnings)


# ---- 5. read what can be read ----------------------------------------------
def _gz(text: bytes) -> bytes:
    return gzip.compress(text, mtime=0)


READABLE = {
    "bom": (b"\xef\xbb\xbf" + TEXT, None),
    "array_closed": (json.dumps(EVENTS).encode(), None),
    "array_open": (json.dumps(EVENTS).encode()[:-1], None),
    "array_open_comma": (json.dumps(EVENTS).encode()[:-1] + b",\n", None),
    "deep_args_1000": (_deep(1000), "nested more than 64 levels deep were dropped"),
    "deep_args_5000": (_deep(5000), "nested more than 64 levels deep were dropped"),
    "lone_surrogate": (TEXT.replace(b"aten::mm", b"aten::\\ud800mm", 1), "surrogate"),
    "gzip_bad_crc": (_gz(TEXT)[:-8] + b"\0\0\0\0" + _gz(TEXT)[-4:], "gzip trailer"),
    "gzip_bad_length": (_gz(TEXT)[:-4] + b"\0\0\0\0", "gzip trailer"),
    "gzip_trailing_garbage": (_gz(TEXT) + b"garbage!", "after the end of the gzip data"),
    "gzip_zero_padding": (_gz(TEXT) + b"\0" * 4096, None),
}


@pytest.mark.parametrize("kind", sorted(READABLE))
def test_readable_traces_are_read_by_the_loader(tmp_path, kind):
    data, warning = READABLE[kind]
    path = tmp_path / f"{kind}.json"
    path.write_bytes(data)
    trace = kinetoscope.load(path)
    assert len(trace) == len(EVENTS)
    assert trace.names == kinetoscope.load(write_trace(tmp_path / "b.json", EVENTS)).names or (
        kind == "lone_surrogate" and "aten::\ufffdmm" in trace.names
    )
    if warning is None:
        assert trace.warnings == []
    else:
        assert any(warning in w for w in trace.warnings), trace.warnings
        issues = kinetoscope.explain(trace).quality["issues"]
        assert any(i["id"] == "input-repaired" for i in issues), issues


def test_a_corrupt_first_block_still_names_the_problem(tmp_path):
    """The message 'before any trace text' is kept for what it is true of."""
    data = bytearray(_gz(TEXT))
    data[12:20] = b"\xff" * 8
    path = tmp_path / "bad.json.gz"
    path.write_bytes(bytes(data))
    with pytest.raises(TraceError, match="corrupt gzip data before any trace text"):
        kinetoscope.load(path)


@pytest.mark.parametrize("kind", sorted(READABLE))
def test_slice_reads_what_explain_reads_and_writes_strict_utf8_json(tmp_path, capsys, kind):
    data, warning = READABLE[kind]
    path = tmp_path / f"{kind}.json"
    path.write_bytes(data)
    out = tmp_path / "slice.json"
    code, _, err = cli("slice", path, "--steps", "2", "-o", out, capsys=capsys)
    assert code == 0, err
    _strict_json(out.read_bytes())
    sliced = kinetoscope.load(out)
    assert [s.number for s in sliced.steps] == [2]
    if warning is not None:
        assert warning in err


def _strict_json(data: bytes):
    def refuse(constant):
        raise AssertionError(f"{constant} in JSON output")

    return json.loads(data.decode("utf-8", "strict"), parse_constant=refuse)


def test_slice_output_is_valid_utf8_when_a_skipped_string_is_not(tmp_path, capsys):
    """A flipped byte in a string no command decodes (an unknown key, an arg the
    analyses do not read) used to be copied into the slice as invalid UTF-8, and a
    raw control character as invalid JSON (inside a string, or a NUL where a space
    was between two keys: the fuzz run found that one)."""
    doc = json.loads(TEXT)
    doc["comment"] = "NVIDIA H1@@"
    doc["traceEvents"][6]["args"]["note"] = "tab\there H1@@"
    text = json.dumps(doc).encode().replace(b"H1@@", b"H1\xc0\xaf").replace(b"\\t", b"\t")
    text = text.replace(b', "dur"', b',\x00"dur"')
    path = tmp_path / "flipped.json"
    path.write_bytes(text)
    kinetoscope.load(path)  # explain reads it (the field is skipped)
    out = tmp_path / "slice.json"
    code, _, err = cli("slice", path, "--steps", "2", "-o", out, capsys=capsys)
    assert code == 0, err
    doc = _strict_json(out.read_bytes())
    assert doc["comment"] == "NVIDIA H1\ufffd\ufffd"
    (mm,) = [e for e in doc["traceEvents"] if e["name"] == "aten::mm"]
    assert mm["args"]["note"] == "tab here H1\ufffd\ufffd"
    assert "made valid JSON text" in err


def test_slice_reads_standard_input_plain_and_gzip(tmp_path):
    for data in (TEXT, _gz(TEXT)):
        out = tmp_path / "slice.json"
        done = subprocess.run(
            [sys.executable, "-m", "kinetoscope", "slice", "-", "--steps", "2", "-o", out,
             "--force"],
            input=data, capture_output=True, env={**os.environ, "PYTHONPATH": SRC}, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert b"<stdin>" in done.stdout
        assert [s.number for s in kinetoscope.load(out).steps] == [2]


# ---- 3. one escaper: names and paths never act on the terminal ----------------
NASTY = "\x1b[31m\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\x00\x9b2J\n\u202e[bold]"
RAW = ("\x1b", "\x00", "\x9b", "\u202e", "\x07")


def test_control_characters_in_names_reach_no_command_raw(tmp_path, capsys):
    doc = json.loads(TEXT)
    for event in doc["traceEvents"]:
        if event["name"] in ("aten::mm", "gemm", "cudaLaunchKernel"):
            event["name"] += NASTY
    doc["deviceProperties"][0]["name"] += NASTY
    path = tmp_path / "nasty.json"
    path.write_text(json.dumps(doc))
    results = run_all(path, tmp_path, capsys)
    base = tmp_path / "base.json"
    for fmt in ("md", "html"):
        results[f"diff {fmt}"] = cli("diff", base, path, "--format", fmt, capsys=capsys)
        results[f"explain {fmt}"] = cli("explain", path, "--format", fmt, capsys=capsys)
    for command, (code, out, err) in results.items():
        assert code in (0, 1), (command, err)
        shown = out + err
        if "json" in command:
            shown = json.dumps(json.loads(out), ensure_ascii=False)  # escapes C0 only
            shown = "".join(c for c in shown if c not in "\u202e\x9b")  # data, not display
        assert not [c for c in RAW if c in shown], (command, [c for c in RAW if c in shown])
    assert "\\x1b[31m" in results["diff"][1]  # shown, inert (diff printed it raw)
    assert "\\u202e" in results["explain"][1]


#: commands whose bad-input case below is their one run through `python -m kinetoscope`
#: (summary and slice have theirs with standard input: tests/trace/test_input_kinds.py, here)
THROUGH_PYTHON_M = ("explain", "diff", "memory", "chain")


@pytest.mark.parametrize("command", ["explain", "summary", "diff", "memory", "slice", "chain"])
def test_a_file_name_with_control_characters_gives_one_escaped_line(tmp_path, command):
    path = tmp_path / "evil\x1b[31m\nname\u202e.json"
    path.write_bytes(TEXT.replace(b"aten::mm", b"aten::\xff", 1))
    args = {"diff": [path, path], "slice": [path, "--steps", "1", "-o", tmp_path / "o.json"]}
    argv = [command, *map(str, args.get(command, [path]))]
    if command in THROUGH_PYTHON_M:  # the console path, the name in a real argv
        done = subprocess.run(
            [sys.executable, "-m", "kinetoscope", *argv],
            capture_output=True, env={**os.environ, "PYTHONPATH": SRC}, timeout=120,
        )  # fmt: skip
        err = done.stderr.decode()
    else:
        done = run_here(*argv)
        err = done.stderr
    assert done.returncode == 2, err
    assert err.count("\n") == 1, err
    assert "evil\\x1b[31m\\x0aname\\u202e.json: is not valid UTF-8" in err


def test_inert_escapes_each_class_and_cuts_huge_strings():
    from kinetoscope.formatting.escaping import SHOWN_MAX, inert

    assert inert("a\x1bb\x00c\x9bd\ne\u202ef\u2066g\u2028h\ud800") == (
        "a\\x1bb\\x00c\\x9bd\\x0ae\\u202ef\\u2066g\\u2028h\\ud800"
    )
    assert inert(inert("\x1b")) == "\\x1b"
    assert inert("é日本\u200d") == "é日本\u200d"  # text, joiners: untouched
    long = inert("x" * (SHOWN_MAX + 10))
    assert long.endswith("... [10 more characters]") and len(long) < SHOWN_MAX + 40


# ---- 2. bounded work -----------------------------------------------------------
def test_a_long_name_is_cut_before_layout(tmp_path, capsys):
    """A 10 MB op name made `diff` fold it into a table cell (rich: one str.partition per
    line over the rest, quadratic: > 5 minutes). Shown names are cut; JSON keeps them.
    2 MB here: the cut is the point, and the 10 MB case cost 27 s of CPU per suite run."""
    doc = json.loads(TEXT)
    doc["traceEvents"][1]["name"] = "x" * (2 << 20)
    path = tmp_path / "big.json"
    path.write_text(json.dumps(doc))
    base = tmp_path / "base.json"
    write_trace(base, EVENTS, **DOC)
    code, out, err = cli("diff", base, path, capsys=capsys)
    assert code == 0, err
    assert "more characters]" in out and len(out) < 200_000
    code, out, _ = cli("diff", base, path, "--format", "json", capsys=capsys)
    assert code == 0 and "x" * (2 << 20) in out


def test_kernel_name_parsing_is_bounded():
    from kinetoscope.analysis.kernel_names import LONGEST_PARSED, decode

    name = "void at::native::f<float>(" + "a" * (4 * LONGEST_PARSED) + ")"
    record = decode(name)
    assert record.raw == name and record.short.startswith("f")


# ---- 6. Ctrl-C at the very end ---------------------------------------------------
def test_ctrl_c_during_teardown_after_torch_is_one_line_and_130(tmp_path):
    """After `profile` the artifacts are complete, then tearing torch down took about a
    second with SIGINT back at its default action: a Ctrl-C ended the process by the
    signal with no message. A stand-in `torch` module with a slow atexit callback:
    the callback is interrupted, and the exit says what was kept, with code 130."""
    marker = tmp_path / "teardown"
    script = (
        "import atexit, sys, time, types\n"
        "from kinetoscope.cli import app, main\n"
        "@app.command('fake-profile')\n"
        "def fake():\n"
        "    sys.modules['torch'] = types.ModuleType('torch')\n"
        "    print('artifacts complete', flush=True)\n"
        f"atexit.register(lambda: (open({str(marker)!r}, 'w').close(), time.sleep(20)))\n"
        "sys.argv = ['kinetoscope', 'fake-profile']\n"
        "main()\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": SRC},
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert b"artifacts complete" in out
    assert proc.returncode == 130, (proc.returncode, err)
    assert err.decode().strip().splitlines()[-1] == "kinetoscope: interrupted; nothing written"


# ---- carried over: integers past int64, long numbers, `},{` in strings ----------
@pytest.mark.parametrize(
    "field", ['"External id"', '"correlation"', '"stream"', '"Bytes"', '"registers per thread"']
)
def test_integers_beyond_int64_in_args_load(tmp_path, field):
    """An id past int64 cannot be an id the profiler wrote: it reads as absent (-1)."""
    path = tmp_path / "big.json"
    path.write_bytes(TEXT.replace(b'"args": {}', f'"args": {{{field}: {"9" * 30}}}'.encode(), 1))
    trace = kinetoscope.load(path)
    assert len(trace) == len(EVENTS)
    assert kinetoscope.explain(trace).verdict.regime


def test_20000_digit_number_is_accepted_or_refused_cleanly(tmp_path):
    path = tmp_path / "digits.json"
    path.write_bytes(TEXT.replace(b'"args": {}', b'"args": {"x": ' + b"7" * 20000 + b"}", 1))
    try:
        trace = kinetoscope.load(path)
    except TraceError as exc:
        assert "\n" not in str(exc)
    else:
        assert len(trace) == len(EVENTS)


def test_boundary_lookalikes_in_a_string_load_the_same_through_the_split_loader(tmp_path):
    """A Python repr in args holds `},{` thousands of times; the split point and
    the piece cuts must not be taken inside it."""
    lookalike = "[{'a': 1},{'b': 2}]" * 20000  # ~400 kB of `},{` inside one string
    events = [
        op(f"aten::op{i}", i * 10, 5, note=lookalike if i % 50 == 7 else "x") for i in range(400)
    ]
    path = write_trace(tmp_path / "repr.json", events)
    one_pass = kinetoscope.load(path)
    split = kinetoscope.load(path, split_min_bytes=0)
    assert len(one_pass) == len(split) == 400
    assert one_pass.names == split.names and (one_pass.ts == split.ts).all()


@pytest.mark.parametrize("limit", [150, 100_000])
@pytest.mark.parametrize("kind", ["deep_args_1000", "deep_args_5000"])
def test_nesting_limit_does_not_follow_the_recursion_limit(tmp_path, limit, kind):
    # torch's inductor raises the interpreter's limit to 100,000 on import; the refusal of
    # a deep file then depended on the order tests ran in. A deep value is now dropped with
    # a warning at a fixed depth, whatever the caller's limit, which is restored after
    data, message = READABLE[kind]
    path = tmp_path / f"{kind}.json"
    path.write_bytes(data)
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(limit)
    try:
        trace = kinetoscope.load(path)
        assert any(message in w for w in trace.warnings), trace.warnings
        assert sys.getrecursionlimit() == limit  # the caller's limit is restored
        shallow = tmp_path / "shallow.json"
        shallow.write_bytes(_deep(50))
        shallow_trace = kinetoscope.load(shallow)  # a low caller limit refuses nothing
        assert len(shallow_trace) == len(trace) and not shallow_trace.warnings
    finally:
        sys.setrecursionlimit(before)


@pytest.mark.parametrize("kind", ["deep_args_1000", "deep_args_5000"])
def test_slice_drops_deep_values_under_torchs_recursion_limit(tmp_path, capsys, kind):
    # torch's inductor raises the limit to 100,000 on import; `slice` then decoded a
    # 1,000-deep value whole and said nothing, so the warning depended on whether an
    # earlier test had imported torch. Every reader pins the limit it decodes under
    data, message = READABLE[kind]
    path = tmp_path / f"{kind}.json"
    path.write_bytes(data)
    out = tmp_path / "slice.json"
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(100_000)
    try:
        code, _, err = cli("slice", path, "--steps", "2", "-o", out, capsys=capsys)
        assert sys.getrecursionlimit() == 100_000  # the caller's limit is restored
    finally:
        sys.setrecursionlimit(before)
    assert code == 0, err
    assert message in err
    assert b"[[[[" not in out.read_bytes()  # the deep value is dropped from the slice too


def test_deep_args_load_the_same_through_the_split_loader(tmp_path):
    path = tmp_path / "deep.json"
    path.write_bytes(_deep(3000))
    one_pass = kinetoscope.load(path)
    split = kinetoscope.load(path, split_min_bytes=0)
    assert one_pass.names == split.names and one_pass.warnings == split.warnings


def test_a_timestamp_of_1e308_is_not_cast_to_junk_when_flows_are_linked(tmp_path):
    """The fuzz run's RuntimeWarning: flows are joined on int64 nanosecond keys, and a
    time of 1e308 us cast to int64 is undefined. Such events are left unlinked; the
    flow with real times still links its launch and kernel."""
    import warnings

    bare = [{**launch(2, 3, 7), "args": {}}, {**kernel("gemm", 5, 4, 7), "args": {}}]
    flows = [
        {"ph": "s", "cat": "ac2g", "name": "f", "id": 7, "pid": 100, "tid": 1, "ts": 2},
        {"ph": "f", "cat": "ac2g", "name": "f", "id": 7, "pid": 0, "tid": 7, "ts": 5, "bp": "e"},
        {"ph": "s", "cat": "ac2g", "name": "f", "id": 8, "pid": 100, "tid": 1, "ts": 1e308},
    ]
    late = {**launch(2, 3, 8), "ts": 1e308, "args": {}}
    path = write_trace(tmp_path / "huge_ts.json", [op("aten::mm", 1, 10), *bare, *flows, late])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        trace = kinetoscope.load(path)
    assert trace.correlation.tolist() == [-1, 7, 7, -1]
