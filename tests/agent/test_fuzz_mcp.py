"""The MCP tools fuzzed through the server's real call path (issues 33 and 36).

One `kinetoscope mcp --root ROOT` server runs for the module, driven by the SDK's
stdio client as an agent drives it; every call goes through JSON-RPC, the SDK's
argument validation and the per-call child process under the time limit
(`agent.limits`). Each case calls one tool with a mutated trace (the mutations of
tests/test_fuzz.py, written into the root) or a hostile path (outside the root,
`..`, absolute, a symlink or a hard link out, a symlinked folder, devices, FIFO,
control characters, very long), and hostile arguments (huge, negative and NaN
numbers, step ranges past every integer, regex bombs, wrong types, unknown keys).

The property: the answer is a result or one clean line (`kinetoscope: error: ...`),
never a traceback or `internal error`; no raw control or bidi character in any
answer's text; nothing from outside the root comes back (the files there hold a
marker that must never appear) and nothing is written outside it (the root's
listing changes only by the slice the answer names; outside, nothing changes); each
call answers within its bound and the server answers the next one.

Default run: a few cases. `pytest -m fuzz tests/agent/test_fuzz_mcp.py`: 1,500.
"""

from __future__ import annotations

import copy
import gzip
import hashlib
import json
import os
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fuzz_log import log_run
from tests.fuzz_surfaces import ACTIVE, HOSTILE_TEXT, MARKER
from tests.test_fuzz import COMMON, _mutated, seed_doc

#: no per-case deadline: each call has its own bound (HANG_SECONDS)
SETTINGS = {**COMMON, "deadline": None}

mcp = pytest.importorskip("mcp")
anyio = pytest.importorskip("anyio")

from anyio.from_thread import start_blocking_portal  # noqa: E402
from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

SRC = str(Path(__file__).resolve().parents[2] / "src")
#: the server's own limit per call (`--call-timeout`), and the bound past which an
#: answer counts as a hang (the limit plus the child's start and kill)
CALL_SECONDS = 30
HANG_SECONDS = CALL_SECONDS + 60
TOOLS = ["explain", "summary", "table", "diff", "check", "chain", "memory", "slice"]


class Server:
    """The running server, its root, the files outside it and what it printed."""

    def __init__(self, base: Path) -> None:
        self.root = base / "root"
        self.outside = base / "outside"
        self.errlog = base / "server.err"
        self.errlog.touch()
        self.root.mkdir()
        self.outside.mkdir()
        _plant(self.root, self.outside)
        self.outside_state = _state(self.outside)
        self.base_listing = sorted(p.name for p in base.iterdir())
        self.base = base
        self.err_seen = 0

    def params(self) -> StdioServerParameters:
        script = 'exec "$0" -m kinetoscope mcp --root "$1" --call-timeout "$2" 2>>"$3"'
        return StdioServerParameters(
            command="sh",
            args=[
                "-c",
                script,
                sys.executable,
                str(self.root),
                str(CALL_SECONDS),
                str(self.errlog),
            ],  # fmt: skip
            env={**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")},
        )

    def new_stderr(self) -> str:
        text = self.errlog.read_text(errors="replace") if self.errlog.exists() else ""
        fresh, self.err_seen = text[self.err_seen :], len(text)
        return fresh


def _secret_doc() -> dict:
    """A valid trace whose every name holds the marker: read, it would show."""
    doc = copy.deepcopy(seed_doc("gpu/compare_base.json.gz"))
    for event in doc["traceEvents"]:
        if isinstance(event, dict) and "name" in event:
            event["name"] = f"{MARKER}_{event['name']}"
    return doc


def _plant(root: Path, outside: Path) -> None:
    """Files outside the root (holding the marker) and ways to them from inside."""
    text = json.dumps(_secret_doc()).encode()
    (outside / "secret.json").write_bytes(text)
    (outside / "secret.json.gz").write_bytes(gzip.compress(text))
    (outside / "notes.txt").write_text(MARKER + "\n")
    (outside / "linked.json").write_bytes(text)
    (root / "link.json").symlink_to(outside / "secret.json")
    (root / "link.json.gz").symlink_to(outside / "secret.json.gz")
    (root / "dirlink").symlink_to(outside)
    (root / "loop.json").symlink_to(root / "loop.json")
    os.link(outside / "linked.json", root / "hard.json")
    (root / "sub").mkdir()
    (root / "sub" / "up.json").symlink_to("../../outside/secret.json")
    os.mkfifo(root / "pipe.json")
    seed = seed_doc("gpu/compare_base.json.gz")
    (root / "good.json").write_text(json.dumps(seed))


def _state(folder: Path) -> dict[str, str]:
    """Every entry under `folder` (links not followed) with what it holds."""
    state = {}
    for path in sorted(folder.rglob("*")):
        rel = str(path.relative_to(folder))
        if path.is_symlink():
            state[rel] = "-> " + os.readlink(path)
        elif path.is_file() and not path.is_fifo():
            state[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            state[rel] = "dir" if path.is_dir() else "other"
    return state


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    served = Server(tmp_path_factory.mktemp("mcpfuzz"))
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(Client(served.params())) as client,
    ):
        served.call = lambda name, args: portal.call(_bounded, client.call_tool, name, args)
        served.alive = lambda: portal.call(_bounded, client.list_tools)
        yield served


async def _bounded(fn, *args):
    with anyio.fail_after(HANG_SECONDS):
        return await fn(*args)


HOSTILE_PATHS = [
    "../outside/secret.json",
    "../outside/notes.txt",
    "sub/../../outside/secret.json",
    "link.json",
    "link.json.gz",
    "dirlink/secret.json",
    "dirlink/notes.txt",
    "sub/up.json",
    "hard.json",
    "loop.json",
    "pipe.json",
    "sub",
    ".",
    "..",
    "/",
    "/dev/zero",
    "/dev/urandom",
    "/proc/self/environ",
    "/etc/passwd",
    "//etc/passwd",
    "good.json/..",
    "good.json\x00.txt",
    "x" * 5000,
    "a/" * 2000 + "b.json",
]


def _no_surrogates(value):
    return not (isinstance(value, str) and any(0xD800 <= ord(c) <= 0xDFFF for c in value))


TEXT = st.sampled_from([t for t in HOSTILE_TEXT if _no_surrogates(t)]) | st.text(
    st.characters(codec="utf-8"), max_size=60
)
NUMBER = (
    st.integers(0, 30)
    | st.integers(-(10**25), 10**25)
    | st.sampled_from([0, -1, 2**31, 2**63, -(2**63), 2**64, 10**30, 10**400])
)
WRONG = st.sampled_from([None, True, 1.5, float("nan"), float("inf"), [], {}, [1, "a"], {"a": 1}])
STEPS = st.sampled_from(["1009", "1009-1010", "0", "1-99999999999999999999", "1009-50000000",
                         "10-1", "x", "-3", "1_000", "١٠٠٩", " 1009 "])  # fmt: skip
WINDOW = st.sampled_from(["0:", "0:1000", "2ms", "1.5s", "1e999:", "nan:", "-inf:inf",
                          ":", "5:3", "1e308:1e309", "0:" + "9" * 400])  # fmt: skip
PATTERN = st.sampled_from(["aten::mm", "*gemm*", "[", "(a+)+$", "(x+x+)+y", "(?=a)", "\\1",
                           "a{1000000}", "(" * 500 + ")" * 500, "?" * 2000])  # fmt: skip
EXPECT = st.sampled_from(["kernels_per_step >= 0", "not hotspot", "regime == compute-bound",
                          "(" * 5000 + "x", "x <= " + "1" * 20000 + "a", "x <= 1e999",
                          "device_busy_ratio >= nan", "not " * 3000 + "hotspot"])  # fmt: skip


def _value(data, kind: str):
    """A sane, hostile or wrongly typed value for an argument of `kind`."""
    choice = data.draw(st.integers(0, 9))
    if choice == 0:
        return data.draw(WRONG | TEXT | NUMBER)
    if kind == "int":  # mostly a count that reads, so that the trace's reading is fuzzed
        return data.draw(st.integers(0, 30)) if choice < 7 else data.draw(NUMBER)
    if kind == "bool":
        return data.draw(st.booleans())
    if kind == "list":
        return data.draw(st.lists(EXPECT | TEXT, max_size=4))
    return data.draw({"steps": STEPS | TEXT, "window": WINDOW | TEXT,
                      "pattern": PATTERN | TEXT, "text": TEXT}[kind])  # fmt: skip


#: each tool's arguments besides its paths, with the kind of value each takes
ARGUMENTS = {
    "explain": {"top": "int", "steps": "int", "step": "int", "timeline": "bool"},
    "summary": {},
    "table": {"sort_by": "text", "row_limit": "int"},
    "diff": {"top": "int"},
    "check": {"expect": "list"},
    "chain": {"kernel": "pattern", "op": "pattern", "step": "int", "limit": "int"},
    "memory": {"top": "int", "steps": "int"},
    "slice": {"steps": "steps", "window": "window", "drop": "list"},
}


def _path(data, case: str | None):
    choice = data.draw(st.integers(0, 9), label="path kind")
    if case is not None and choice < 5:
        return case
    if choice < 6:
        return "good.json"
    if choice < 9:
        return data.draw(st.sampled_from(HOSTILE_PATHS))
    return data.draw(TEXT | WRONG)


def _arguments(data, tool: str, case: str | None) -> dict:
    args: dict = {}
    for name in ("a", "b") if tool == "diff" else ("path",):
        if data.draw(st.integers(0, 19)):  # now and then a required one is missing
            args[name] = _path(data, case)
    if tool == "slice":
        args["output"] = data.draw(
            st.sampled_from(
                [
                    "out.json",
                    "out.json.gz",
                    "../escape.json",
                    "dirlink/escape.json",
                    "/tmp/escape.json",
                    "link.json",
                    "sub/new.json",
                    "nofolder/x.json",
                    "good.json",
                    "pipe.json",
                    "",
                    ".",
                    "x" * 300 + ".json",
                ]
            )  # fmt: skip
            | TEXT
        )
    for name, kind in ARGUMENTS[tool].items():
        if data.draw(st.booleans()):
            args[name] = _value(data, kind)
    if data.draw(st.integers(0, 9)) == 0:
        args[data.draw(TEXT)] = data.draw(WRONG | TEXT)
    return args


def _answer_text(result) -> str:
    text = "".join(getattr(block, "text", "") for block in result.content)
    if result.structured_content is not None:  # data, like the CLI's JSON once parsed
        text += json.dumps(result.structured_content)
    return text


def _written(server: Server, before: dict[str, str]) -> set[str]:
    after = _state(server.root)
    changed = {k for k in after if before.get(k) != after[k]}
    assert not {k for k in before if k not in after}, "a file in the root was removed"
    return changed


def _outcome(result, text: str, stderr: str) -> str:
    """The run's outcome in the shared log's words (`tests.fuzz_log.OUTCOMES`)."""
    if "Traceback" in text + stderr or "exception" in stderr.lower():
        return "traceback"
    if result.is_error and ("\n" in text or not text.startswith("kinetoscope: error: ")):
        return "internal-error"
    if "internal error" in text:
        return "internal-error"
    if ACTIVE.search(text):
        return "control-char"
    return "clean-error" if result.is_error else "ok"


def _case(server: Server, data, tmp_path) -> None:
    tool = data.draw(st.sampled_from(TOOLS + ["nosuch"]), label="tool")
    case = None
    if data.draw(st.booleans(), label="mutated trace"):
        _, path = _mutated(data, server.root)
        case = path.name
    args = _arguments(data, tool if tool in ARGUMENTS else "summary", case)
    before = _state(server.root)
    try:
        result = server.call(tool, args)
    except TimeoutError:
        log_run("mcp", f"tool-{tool}", "hang")
        raise AssertionError(f"no answer within {HANG_SECONDS} s: {tool} {args!r:.300}") from None
    text = _answer_text(result)
    stderr = server.new_stderr()
    outcome = _outcome(result, text, stderr)
    written = _written(server, before) - ({case} if case else set())
    expected = set()
    if tool == "slice" and outcome == "ok":
        expected = {result.structured_content["output"]}
    outside = MARKER in text or written != expected
    outside |= _state(server.outside) != server.outside_state
    outside |= sorted(p.name for p in server.base.iterdir()) != server.base_listing
    log_run("mcp", f"tool-{tool}", "bad-output" if outcome == "ok" and outside else outcome)
    assert outcome in ("ok", "clean-error"), (outcome, tool, args, text[:2000], stderr[-2000:])
    assert MARKER not in text, (tool, args)
    assert written == expected, (tool, args, written, text[:300])
    assert _state(server.outside) == server.outside_state
    assert sorted(p.name for p in server.base.iterdir()) == server.base_listing
    for name in written | ({case} if case else set()):
        (server.root / name).unlink(missing_ok=True)
    assert server.alive().tools, "the server stopped answering"


@settings(max_examples=5, **SETTINGS)
@given(data=st.data())
def test_mcp_tools_on_hostile_calls(server, data, tmp_path):
    _case(server, data, tmp_path)


@pytest.mark.fuzz
@settings(max_examples=1500, **SETTINGS)
@given(data=st.data())
def test_fuzz_mcp_tools_1500(server, data, tmp_path):
    _case(server, data, tmp_path)
