"""Property-based fuzzing of the loader and the commands on mutated real traces.

Each case takes a small corpus trace, applies one class of damage (see
`MUTATIONS`), writes it to a file and runs the loader, then every command that
reads a trace, in-process: `explain` (JSON, Markdown, text, HTML), `summary`,
`table`, `chain`, `diff` against the undamaged trace (JSON and text), `memory`,
`check`, `slice` and `plot`. The property: every run either succeeds or raises
the documented one-line error (exit 2), never an internal error; JSON output
parses strictly; text, Markdown and HTML hold no raw control or bidi character;
a slice is strict UTF-8 JSON that loads; the input file is byte-for-byte
unchanged; each case finishes within hypothesis' `deadline`.
A third property loads each case out of core too (`--max-memory`, columns in
temporary files): the same `Trace`, or the same one-line error, and no file
left in the spill directory.

The default run tries a few dozen cases (30 loader, 8 command, 10 out of core);
`pytest -m fuzz` runs 8,000 loader cases and 800 command cases (13 command runs
each: 10,400 runs), see docs/robustness.md for the recorded run.
"""

from __future__ import annotations

import copy
import gzip
import hashlib
import json
import math
import os
import re
import time
from datetime import timedelta
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import kinetoscope
from kinetoscope.errors import KinetoscopeError, TraceError
from tests.conftest import corpus

SEEDS = [
    "gpu/triton_example.json.gz",
    "gpu/compare_base.json.gz",
    "gpu/cuda_event_sync.json.gz",
    "cpu/cpu_only_rank34.pt.trace.json.gz",
    "gpu/backward_thread.json",
    # the one small seed with allocator events: `memory` reads them (and their Bytes)
    "gpu/tiny_transformer_block_h100.pt.trace.json.gz",
]
#: per-case bound (a hang or a super-linear blow-up fails it); generous because
#: this 2-core machine is shared
#: `KINETOSCOPE_FUZZ_DEADLINE` (seconds) widens it for a long run niced beside other work,
#: where a case's 13 commands wait for a core far longer than they run
DEADLINE = timedelta(seconds=float(os.environ.get("KINETOSCOPE_FUZZ_DEADLINE", "30")))
FIELDS = ["ph", "name", "cat", "ts", "dur", "pid", "tid", "id", "args"]
ARG_KEYS = [
    "External id",
    "correlation",
    "stream",
    "device",
    "grid",
    "block",
    "Bytes",
    "Total Allocated",
    "Input Dims",
    "flops",
    "bytes",
    "name",
]
ODD_VALUES = [None, "", "text", [], {}, True, -1, 0, 1.5, [1, 2], {"a": 1}, "12"]
EXTREME = [
    10**30,
    -(10**30),
    2**63,
    -(2**63) - 1,
    -1,
    1e308,
    -1e308,
    math.nan,
    math.inf,
    -math.inf,
    0.0,
    "9" * 400,
]


@cache
def seed_doc(relative: str) -> dict:
    data = corpus(relative).read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return json.loads(data)


def _events(doc: dict) -> list:
    events = doc.get("traceEvents")
    return events if isinstance(events, list) and events else [{}]


def m_truncate(doc, data):
    text = _dump(doc)
    return text[: data.draw(st.integers(0, len(text)), label="cut at")]


def m_delete_field(doc, data):
    event = data.draw(st.sampled_from(_events(doc)))
    key = data.draw(st.sampled_from(FIELDS))
    if isinstance(event, dict):
        event.pop(key, None)
    return doc


def m_retype_field(doc, data):
    for _ in range(data.draw(st.integers(1, 20))):
        event = data.draw(st.sampled_from(_events(doc)))
        if not isinstance(event, dict):
            continue
        # a fresh copy: a shared `{}` put under "args" and then into itself would make
        # the document circular (a harness bug the first complete long run found)
        odd = copy.deepcopy(data.draw(st.sampled_from(ODD_VALUES)))
        if data.draw(st.booleans()) and isinstance(event.get("args"), dict):
            event["args"][data.draw(st.sampled_from(ARG_KEYS))] = odd
        else:
            event[data.draw(st.sampled_from(FIELDS))] = odd
    return doc


def m_extreme_values(doc, data):
    for _ in range(data.draw(st.integers(1, 20))):
        event = data.draw(st.sampled_from(_events(doc)))
        if not isinstance(event, dict):
            continue
        value = data.draw(st.sampled_from(EXTREME))
        if data.draw(st.booleans()):
            event.setdefault("args", {})
            if isinstance(event["args"], dict):
                event["args"][data.draw(st.sampled_from(ARG_KEYS))] = value
        else:
            event[data.draw(st.sampled_from(["ts", "dur", "pid", "tid", "id"]))] = value
    return doc


def m_unicode_names(doc, data):
    names = st.text(st.characters(codec="utf-8"), max_size=40) | st.text(
        st.characters(max_codepoint=0x9F), max_size=20
    )
    for _ in range(data.draw(st.integers(1, 30))):
        event = data.draw(st.sampled_from(_events(doc)))
        if isinstance(event, dict):
            event["name"] = data.draw(names)
    for device in doc.get("deviceProperties") or []:
        if isinstance(device, dict) and data.draw(st.booleans()):
            device["name"] = data.draw(names)
    return doc


def m_duplicate_shuffle(doc, data):
    events = _events(doc)
    extra = data.draw(st.lists(st.sampled_from(events), max_size=len(events)))
    doc["traceEvents"] = data.draw(st.permutations(events + copy.deepcopy(extra)))
    return doc


def m_missing_metadata(doc, data):
    for key in data.draw(st.lists(st.sampled_from(sorted(doc)), unique=True)):
        if key != "traceEvents" or data.draw(st.integers(0, 9)) == 0:
            doc.pop(key)
    if data.draw(st.booleans()):
        doc["traceEvents"] = [
            e for e in _events(doc) if not (isinstance(e, dict) and e.get("ph") == "M")
        ]
    return doc


DEEP = "@@deep@@"  # replaced by the nested text after json.dumps (which recurses)


def m_deep_nesting(doc, data):
    event = data.draw(st.sampled_from(_events(doc)))
    if isinstance(event, dict):
        event.setdefault("args", {})
        if isinstance(event["args"], dict):
            event["args"]["deep"] = DEEP
        else:
            event["args"] = DEEP
    depth = data.draw(st.sampled_from([10, 100, 500, 999, 1000, 3000]))
    opener, closer = ("[", "]") if data.draw(st.booleans()) else ('{"a":', "}")
    nested = (opener * depth + "1" + closer * depth).encode()
    return _dump(doc).replace(b'"' + DEEP.encode() + b'"', nested)


def m_boundary_lookalikes(doc, data):
    for _ in range(data.draw(st.integers(1, 10))):
        event = data.draw(st.sampled_from(_events(doc)))
        if isinstance(event, dict):
            text = data.draw(st.sampled_from(["},{", "}, {", '},{"ph":"X"}', '\\"},{\\"']))
            event[data.draw(st.sampled_from(["name", "cat"]))] = text * data.draw(
                st.integers(1, 3000)
            )
    return doc


#: what issue 25 fed every command: ESC sequences (colour, OSC 8 link), NUL, C1 CSI,
#: line breaks, bidirectional overrides, an unpaired surrogate
NASTY = [
    "\x1b[31mred\x1b[0m",
    "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\",
    "nul\x00byte",
    "c1\x9b2J",
    "two\nlines\r",
    "\u202eevil\u2066",
    "\ud800lone",
    "[bold]markup[/]",
]


def m_nasty_names(doc, data):
    for _ in range(data.draw(st.integers(1, 30))):
        event = data.draw(st.sampled_from(_events(doc)))
        if isinstance(event, dict):
            event["name"] = str(event.get("name", "")) + data.draw(st.sampled_from(NASTY))
    for device in doc.get("deviceProperties") or []:
        if isinstance(device, dict):
            device["name"] = str(device.get("name", "")) + data.draw(st.sampled_from(NASTY))
    return doc


def m_huge_name(doc, data):
    event = data.draw(st.sampled_from(_events(doc)))
    if isinstance(event, dict):
        event["name"] = "x" * data.draw(st.sampled_from([10_000, 100_000, 1 << 20]))
    return doc


def m_past_int64(doc, data):
    for _ in range(data.draw(st.integers(1, 10))):
        event = data.draw(st.sampled_from(_events(doc)))
        if not isinstance(event, dict):
            continue
        if data.draw(st.booleans()):
            event["name"] = "ProfilerStep#" + "9" * data.draw(st.integers(19, 40))
        elif isinstance(event.get("args"), dict):
            key = data.draw(st.sampled_from(["Bytes", "Total Allocated", "Addr", "correlation"]))
            event["args"][key] = data.draw(st.sampled_from([2**63, 2**64, 2**70, -(2**70)]))
    return doc


def m_byte_flip(doc, data):
    text = bytearray(_dump(doc))
    for _ in range(data.draw(st.integers(1, 8))):
        at = data.draw(st.integers(0, len(text) - 1))
        text[at] ^= 1 << data.draw(st.integers(0, 7))
    return bytes(text)


def m_container(doc, data):
    """How the text is wrapped: a byte-order mark, Chrome's JSON Array Format (with or
    without its `]`), a gzip trailer that does not match, bytes after the gzip data."""
    text = _dump(doc)
    kind = data.draw(st.sampled_from(["bom", "array", "open_array", "crc", "garbage", "zeros"]))
    if kind == "bom":
        return b"\xef\xbb\xbf" + text
    if kind in ("array", "open_array"):
        array = _dump(_events(doc))
        return RAW, array if kind == "array" else array[:-1] + b",\n"
    packed = gzip.compress(text, compresslevel=1)
    if kind == "crc":
        return RAW, packed[:-8] + bytes(4) + packed[-4:]
    return RAW, packed + (b"trailing garbage" if kind == "garbage" else bytes(1024))


RAW = "raw"  # a mutation returning (RAW, bytes): the file's exact bytes (no gzip drawn)

MUTATIONS = [
    m_truncate,
    m_delete_field,
    m_retype_field,
    m_extreme_values,
    m_unicode_names,
    m_duplicate_shuffle,
    m_missing_metadata,
    m_deep_nesting,
    m_boundary_lookalikes,
    m_nasty_names,
    m_huge_name,
    m_past_int64,
    m_byte_flip,
    m_container,
]


def _dump(doc) -> bytes:
    return json.dumps(doc, allow_nan=True).encode("utf-8", "surrogatepass")


def _mutated(data, tmp_path):
    relative = data.draw(st.sampled_from(SEEDS), label="seed")
    mutate = data.draw(st.sampled_from(MUTATIONS), label="mutation")
    if os.environ.get("KINETOSCOPE_FUZZ_LOG"):  # counts cases of a long run per class
        with open(os.environ["KINETOSCOPE_FUZZ_LOG"], "a") as log:
            log.write(f"{mutate.__name__} {relative}\n")
    doc = copy.deepcopy(seed_doc(relative))
    out = mutate(doc, data)
    if isinstance(out, tuple):  # (RAW, exact bytes)
        path = tmp_path / f"case{os.getpid()}_{data.draw(st.integers(0, 10**9))}.json"
        path.write_bytes(out[1])
        return relative, path
    text = out if isinstance(out, bytes) else _dump(out)
    gz = data.draw(st.booleans(), label="gzip")
    path = tmp_path / f"case{os.getpid()}_{data.draw(st.integers(0, 10**9))}.json{'.gz' * gz}"
    path.write_bytes(gzip.compress(text, compresslevel=1) if gz else text)
    return relative, path


def _one_line(exc: BaseException) -> None:
    assert exc.exit_code == 2, exc
    assert "\n" not in str(exc), str(exc)


def _strict(text: str):
    def refuse(constant):
        raise AssertionError(f"{constant} in JSON output")

    return json.loads(text, parse_constant=refuse)


def _load_or_error(path):
    try:
        return kinetoscope.load(path)
    except TraceError as exc:
        _one_line(exc)
        return None


def _loader_property(data, tmp_path):
    _, path = _mutated(data, tmp_path)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    trace = _load_or_error(path)
    if trace is not None:
        assert len(trace) > 0
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    path.unlink()


def _same_arrays(a, b, what: str) -> None:
    for field in vars(a):
        x, y = getattr(a, field), getattr(b, field)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=True), (what, field)


def _same_trace(a, b) -> None:
    """Everything the loader built, compared field by field (NaN equal to NaN)."""
    for field in ("ts", "dur", "name_id", "cat", "lane", "is_instant"):
        assert np.array_equal(getattr(a, field), getattr(b, field), equal_nan=True), field
    assert np.array_equal(a.external_id, b.external_id)
    assert np.array_equal(a.correlation, b.correlation)
    assert (a.names, a.lanes, a.devices, a.meta, a.warnings, a.path) == (
        b.names,
        b.lanes,
        b.devices,
        b.meta,
        b.warnings,
        b.path,
    )
    _same_arrays(a.kernel_args, b.kernel_args, "kernel_args")
    _same_arrays(a.memory, b.memory, "memory")
    for field in ("input_dims", "input_types", "copy_bytes"):
        assert dict(getattr(a, field).items()) == dict(getattr(b, field).items()), field
    flops_a, flops_b = dict(a.flops.items()), dict(b.flops.items())
    assert flops_a.keys() == flops_b.keys()
    assert np.array_equal(list(flops_a.values()), list(flops_b.values()), equal_nan=True)


def _out_of_core_property(data, tmp_path):
    _, path = _mutated(data, tmp_path)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    spill = tmp_path / f"spill{os.getpid()}"
    spill.mkdir(exist_ok=True)
    outcomes = []
    for options in ({}, {"out_of_core": True, "spill_dir": spill}):
        try:
            outcomes.append(kinetoscope.load(path, **options))
        except TraceError as exc:
            _one_line(exc)
            outcomes.append(str(exc))
    in_memory, out_of_core = outcomes
    if isinstance(in_memory, str) or isinstance(out_of_core, str):
        assert in_memory == out_of_core
    else:
        assert in_memory.out_of_core is None and out_of_core.out_of_core is not None
        _same_trace(in_memory, out_of_core)
    assert list(spill.iterdir()) == []
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    path.unlink()


#: characters that must never reach a terminal or a report raw (`kinetoscope.formatting.escaping`)
ACTIVE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]"
)


def _command_runs(relative: str, path, tmp_path) -> list[tuple[str, list[str]]]:
    """(what the output is, arguments) for every command that reads a trace."""
    out = tmp_path / f"out{os.getpid()}"
    return [
        ("json", ["explain", str(path), "--format", "json"]),
        ("md", ["explain", str(path), "--format", "md"]),
        ("text", ["explain", str(path)]),
        ("html", ["explain", str(path), "--format", "html"]),
        ("text", ["summary", str(path)]),
        ("text", ["table", str(path)]),
        ("text", ["chain", str(path), "--limit", "3"]),
        ("json", ["diff", str(corpus(relative)), str(path), "--format", "json"]),
        ("text", ["diff", str(corpus(relative)), str(path)]),
        ("text", ["memory", str(path)]),
        ("text", ["check", str(path), "-e", "kernels_per_step >= 0", "-e", "not hotspot"]),
        ("slice", ["slice", str(path), "--window", "0:", "-o", f"{out}.json", "--force"]),
        ("plot", ["plot", str(path), "-o", f"{out}.png"]),
    ]


def _commands_property(data, tmp_path):
    """Every command on one mutated trace: exit 0 (check: 0 or 1) or a one-line exit-2
    error, never an internal error; JSON strict; text, Markdown and HTML without a
    raw control or bidi character; a slice in strict UTF-8 JSON that loads; the
    input unchanged. Each run's command, exit code and time go to the fuzz log."""
    from typer.testing import CliRunner

    from kinetoscope.cli import app

    relative, path = _mutated(data, tmp_path)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    runner = CliRunner()
    for kind, args in _command_runs(relative, path, tmp_path):
        started = time.perf_counter()
        done = runner.invoke(app, args)
        code = done.exit_code
        if done.exception is not None and not isinstance(done.exception, SystemExit):
            if not isinstance(done.exception, KinetoscopeError):  # TraceError, UsageError
                raise done.exception
            _one_line(done.exception)
            assert not ACTIVE.search(str(done.exception)), (args, str(done.exception))
            code = 2
        else:
            assert code in ((0, 1) if args[0] == "check" else (0,)), (args, done.output)
            _check_output(kind, args, done.stdout)
        _log(f"{args[0]}{'-' + args[3] if args[0] == 'explain' and len(args) > 3 else ''}",
             code, time.perf_counter() - started)  # fmt: skip
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    path.unlink()


def _check_output(kind: str, args: list[str], stdout: str) -> None:
    if kind == "json":
        _strict(stdout)
    elif kind in ("text", "md", "html"):
        found = ACTIVE.search(stdout)
        assert found is None, (args, repr(found.group()) if found else None)
    elif kind == "slice":
        written = args[args.index("-o") + 1]
        _strict(Path(written).read_bytes().decode("utf-8", "strict"))
        _load_or_error(written)
    elif kind == "plot":
        assert os.path.getsize(args[args.index("-o") + 1]) > 0
        os.unlink(args[args.index("-o") + 1])


def _log(command: str, code: int, seconds: float) -> None:
    if os.environ.get("KINETOSCOPE_FUZZ_LOG"):
        with open(os.environ["KINETOSCOPE_FUZZ_LOG"] + ".commands", "a") as log:
            log.write(f"{command} {code} {seconds:.3f}\n")


COMMON = dict(
    deadline=DEADLINE,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
    # no shrinking: a failure is reported with its seed at once instead of after
    # minutes of shrinking on this shared machine
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)


@settings(max_examples=30, **COMMON)
@given(data=st.data())
def test_loader_on_mutated_traces(data, tmp_path):
    _loader_property(data, tmp_path)


@settings(max_examples=8, **COMMON)
@given(data=st.data())
def test_commands_on_mutated_traces(data, tmp_path):
    _commands_property(data, tmp_path)


@settings(max_examples=10, **COMMON)
@given(data=st.data())
def test_out_of_core_on_mutated_traces(data, tmp_path):
    _out_of_core_property(data, tmp_path)


@pytest.mark.fuzz
@settings(max_examples=8000, **COMMON)
@given(data=st.data())
def test_fuzz_loader_10k(data, tmp_path):
    _loader_property(data, tmp_path)


@pytest.mark.fuzz
@settings(max_examples=800, **COMMON)
@given(data=st.data())
def test_fuzz_commands_10k(data, tmp_path):
    _commands_property(data, tmp_path)


@pytest.mark.fuzz
@settings(max_examples=1000, **COMMON)
@given(data=st.data())
def test_fuzz_out_of_core_1k(data, tmp_path):
    _out_of_core_property(data, tmp_path)
