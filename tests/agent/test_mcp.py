"""`kinetoscope mcp`, driven by the MCP SDK's own stdio client as an agent would."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

from kinetoscope.agent.server import build_server  # noqa: E402

from ..capture_helpers import run_here  # noqa: E402
from ..conftest import corpus  # noqa: E402

BERT = "gpu/tracelens_h100__gaunernst_bert-small-uncased__1016001.json.gz"
MEMORY = "gpu/switch_transformer_moe_a100.json.gz"
RESNET = "gpu/resnet_train_ns.pt.trace.json.gz"
SRC = str(Path(__file__).resolve().parents[2] / "src")


def _server(root: Path) -> StdioServerParameters:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return StdioServerParameters(
        command=sys.executable, args=["-m", "kinetoscope", "mcp", "--root", str(root)], env=env
    )


def _session(root: Path, calls, stdio: bool = False):
    """Run `calls(client)` against a fresh server on `root`; return what it returns.

    The server is `kinetoscope mcp` in a child over stdio where the transport is what a
    test checks; otherwise the same server built in this process (each call still runs
    in a process of its own, forked from this worker's forkserver). A stdio server cost
    a child of about 2 s of CPU before its first answer: the CLI, the SDK and the
    server's own forkserver."""

    async def main():
        async with Client(_server(root) if stdio else build_server(root)) as client:
            return await asyncio.wait_for(calls(client), timeout=240)

    return asyncio.run(main())


def _cli(*args: str) -> subprocess.CompletedProcess:
    """`kinetoscope ARGS` by the CLI's own `main` in this process, as a reader's shell
    would answer it: the exit code, stdout and stderr the agent's answer is held to."""
    return run_here(*args)


def _text(result) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


@pytest.fixture
def root(tmp_path):
    shutil.copy(corpus(BERT), tmp_path / "bert.json.gz")
    return tmp_path


def test_tools_are_listed_with_output_schemas(root):
    async def calls(client):
        return (await client.list_tools()).tools

    tools = {t.name: t for t in _session(root, calls, stdio=True)}
    assert set(tools) == {"explain", "summary", "diff", "chain", "table", "slice", "check",
                          "memory"}  # fmt: skip
    assert "verdict" in tools["explain"].output_schema["properties"]
    assert "path" in tools["explain"].input_schema["properties"]


def test_explain_gives_the_verdict_the_cli_gives(root):
    async def calls(client):
        return await client.call_tool("explain", {"path": "bert.json.gz", "top": 3})

    result = _session(root, calls, stdio=True)
    assert not result.is_error, _text(result)
    data = result.structured_content
    cli = _cli("explain", str(root / "bert.json.gz"), "--format", "json")
    assert cli.returncode == 0, cli.stderr
    expected = json.loads(cli.stdout)
    assert data["verdict"] == expected["verdict"]
    assert data["findings"] == expected["findings"][:3]
    assert data["trimmed"].get("findings", 0) == max(len(expected["findings"]) - 3, 0)
    assert data["timeline"]["lanes"] == {}  # left out unless asked: it is the bulk


def test_paths_outside_the_root_are_refused_and_never_read(root, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside")
    shutil.copy(corpus(BERT), outside / "secret.json.gz")
    (root / "link.json.gz").symlink_to(outside / "secret.json.gz")
    os.mkfifo(root / "pipe.json")

    async def calls(client):
        out = {}
        for name in ("../outside/secret.json.gz", str(outside / "secret.json.gz"),
                     "link.json.gz", "pipe.json", "/dev/zero"):  # fmt: skip
            out[name] = await client.call_tool("summary", {"path": name})
        return out

    results = _session(root, calls)
    for name, result in results.items():
        assert result.is_error, name
        text = _text(result)
        assert text.startswith("kinetoscope: error: ") and "\n" not in text, text
        assert ("outside the served root" in text) or ("not a regular file" in text), text


def test_bad_input_is_the_cli_line_and_the_server_keeps_answering(root):
    whole = (root / "bert.json.gz").read_bytes()
    (root / "cut.json.gz").write_bytes(whole[:200])  # cut before the first event
    cli = _cli("summary", str(root / "cut.json.gz"))
    assert cli.returncode == 2
    cli_line = cli.stderr.strip().splitlines()[-1]

    async def calls(client):
        bad = await client.call_tool("summary", {"path": "cut.json.gz"})
        good = await client.call_tool("summary", {"path": "bert.json.gz"})
        return bad, good

    bad, good = _session(root, calls)
    assert bad.is_error
    assert _text(bad) == cli_line
    assert not good.is_error and good.structured_content


def test_check_table_chain_and_diff_answer(root):
    shutil.copy(corpus(RESNET), root / "resnet.json.gz")

    async def calls(client):
        return (
            await client.call_tool(
                "check", {"path": "bert.json.gz", "expect": ["kernels_per_step >= 0"]}
            ),
            await client.call_tool("table", {"path": "bert.json.gz", "row_limit": 5}),
            await client.call_tool("chain", {"path": "resnet.json.gz", "limit": 3}),
            await client.call_tool("diff", {"a": "bert.json.gz", "b": "resnet.json.gz"}),
        )

    check, table, chain, diff = _session(root, calls)
    assert check.structured_content["passed"] is True
    assert len(table.structured_content["rows"]) == 5
    assert chain.structured_content["shown"] == 3
    assert chain.structured_content["tree"][0]["children"]
    assert not diff.is_error, _text(diff)


def test_slice_writes_a_new_file_under_the_root_only(root):
    shutil.copy(corpus(RESNET), root / "resnet.json.gz")

    async def calls(client):
        first = await client.call_tool(
            "slice", {"path": "resnet.json.gz", "output": "one.json.gz", "steps": "102"}
        )
        again = await client.call_tool(
            "slice", {"path": "resnet.json.gz", "output": "one.json.gz", "steps": "103"}
        )
        escape = await client.call_tool(
            "slice", {"path": "resnet.json.gz", "output": "../escape.json", "steps": "102"}
        )
        bad = await client.call_tool(
            "slice", {"path": "resnet.json.gz", "output": "two.json", "steps": "x"}
        )
        return first, again, escape, bad

    before = None
    first, again, escape, bad = _session(root, calls)
    # the tool's own argument, not the CLI's option (it said "--steps 'x'", and "pass
    # --force" for an existing output, an option the tool does not have)
    assert _text(bad) == "kinetoscope: error: steps 'x': expected N or FIRST-LAST, e.g. 3-5"
    assert not first.is_error, _text(first)
    assert first.structured_content["output"] == "one.json.gz"
    before = (root / "one.json.gz").read_bytes()
    assert not again.is_error, _text(again)  # never written over: the next free name
    assert again.structured_content["output"] == "one_2.json.gz"
    assert (root / "one.json.gz").read_bytes() == before
    assert escape.is_error and "outside the served root" in _text(escape)
    assert not (root.parent / "escape.json").exists()


def test_memory_tool(root):
    shutil.copy(corpus(MEMORY), root / "moe.json.gz")
    shutil.copy(corpus(RESNET), root / "resnet.json.gz")  # recorded without profile_memory

    async def calls(client):
        return (
            await client.call_tool("memory", {"path": "moe.json.gz", "top": 2}),
            await client.call_tool("memory", {"path": "resnet.json.gz"}),
        )

    moe, none = _session(root, calls)
    assert not moe.is_error, _text(moe)
    device = moe.structured_content["devices"][0]
    assert device["peak_bytes"] > 0 and len(device["largest"]) <= 2
    assert none.is_error and "no [memory] events" in _text(none)


def test_a_step_out_of_range_names_the_steps_there_are(root):
    from kinetoscope.agent import tools
    from kinetoscope.errors import UsageError

    shutil.copy(corpus("gpu/simple_add_a100.json.gz"), root / "stepless.json.gz")
    with pytest.raises(UsageError) as raised:
        tools.explain(root, "stepless.json.gz", step=5)
    assert str(raised.value) == (
        "no ProfilerStep#5 in stepless.json.gz (steps: none: no ProfilerStep#N, leave step out)"
    )
    with pytest.raises(UsageError, match=r"\(steps: 1009, 1010\)"):
        shutil.copy(corpus("gpu/compare_base.json.gz"), root / "two.json.gz")
        tools.explain(root, "two.json.gz", step=5)


def test_a_call_past_its_time_limit_is_stopped_and_the_server_answers_on(root):
    # each call runs in a process of its own (agent.limits); explaining a 68k-event trace
    # takes far longer than 50 ms (loading alone does), so that call is stopped, its
    # process killed, and the next call is answered as usual
    shutil.copy(corpus(RESNET), root / "resnet.json.gz")

    async def main():
        params = _server(root)
        params.args += ["--call-timeout", "0.05"]
        async with Client(params) as client:
            slow = await client.call_tool("explain", {"path": "resnet.json.gz"})
            return slow, await asyncio.wait_for(client.list_tools(), timeout=60)

    slow, listed = asyncio.run(main())
    assert slow.is_error
    assert _text(slow) == (
        "kinetoscope: error: the call ran past its time limit of 0.05 s and was stopped"
    )
    assert len(listed.tools) == 8


def test_a_call_timeout_outside_its_range_is_refused():
    done = _cli("mcp", "--call-timeout", "0")
    assert done.returncode == 2
    assert "--call-timeout 0: give seconds between 0 and 86400" in done.stderr


def test_explain_cuts_moe_layers_like_steps(root):
    from kinetoscope.agent import tools

    # the Switch-Transformer forward holds 10 MoE layers (tests/analysis/test_moe.py)
    shutil.copy(corpus("gpu/switch_transformer_moe_a100.json.gz"), root / "switch.json.gz")
    data = tools.explain(root, "switch.json.gz", steps=3)
    assert len(data["moe"]["layers"]) == 3 and data["trimmed"]["moe.layers"] == 7
    assert data["moe"]["dispatch"] == "dense"


def test_arguments_the_schema_refuses_and_unknown_tools_are_one_line(root):
    # the SDK answered pydantic's report (several lines and a link) for a wrong type or a
    # missing argument, and "Unknown tool: x"; a negative count cut lists from the end
    # (found by tests/agent/test_fuzz_mcp.py)
    async def main():
        async with Client(build_server(root)) as client:
            return [
                await client.call_tool(name, args)
                for name, args in [
                    ("explain", {"path": "bert.json.gz", "top": "x"}),
                    ("explain", {"": None}),
                    ("table", {"path": "bert.json.gz", "row_limit": -5}),
                    ("nosuch\x1b", {}),
                    ("summary", {"path": "bert.json.gz"}),
                ]
            ]

    wrong, missing, negative, unknown, good = asyncio.run(main())
    lines = [_text(r) for r in (wrong, missing, negative, unknown)]
    assert lines == [
        "kinetoscope: error: top: Input should be a valid integer, unable to parse string as "
        "an integer",
        "kinetoscope: error: path: Field required",
        "kinetoscope: error: row_limit: Input should be greater than or equal to 0",
        "kinetoscope: error: no tool named 'nosuch\\x1b' (tools: chain, check, diff, explain, "
        "memory, slice, summary, table)",
    ]
    assert all(r.is_error for r in (wrong, missing, negative, unknown))
    assert not good.is_error and good.structured_content["path"].endswith("bert.json.gz")


def test_an_answer_holds_no_raw_control_or_bidi_character(root):
    # the SDK wrote the answer's text with pydantic, which keeps every character outside
    # ASCII raw: a C1 control (0x89) or U+202E in a kernel name reached the agent's text
    # as it was (found by tests/agent/test_fuzz_mcp.py); the CLI's JSON escapes them
    import gzip

    doc = json.loads(gzip.decompress(corpus("gpu/compare_base.json.gz").read_bytes()))
    for event in doc["traceEvents"]:
        if event.get("cat") == "kernel":
            event["name"] = "k\x89\u202eevil"
    (root / "odd.json").write_text(json.dumps(doc))

    async def main():
        async with Client(build_server(root)) as client:
            return await client.call_tool("summary", {"path": "odd.json"})

    result = asyncio.run(main())
    assert not result.is_error, _text(result)
    text = _text(result)
    assert "\x89" not in text and "\u202e" not in text and "k\\u0089\\u202eevil" in text
    assert json.loads(text) == result.structured_content
    assert "k\x89\u202eevil" in json.dumps(result.structured_content, ensure_ascii=False)
