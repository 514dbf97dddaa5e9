"""The MCP server: `agent.tools` over stdio with the `mcp` SDK (`kinetoscope[mcp]`).

Each tool is a thin typed wrapper (its signature is the tool's input schema, its
docstring the description an agent reads) that publishes `agent.schemas` as its
output schema. Any failure becomes a tool error whose text is the CLI's one line
(`kinetoscope: error: ...`), and the server keeps answering: one bad trace never
ends an agent's session.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import re
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, TextContent
from pydantic import Field, ValidationError

from .._version import __version__
from ..errors import KinetoscopeError
from ..formatting.jsontext import dumps
from ..report.console import inert
from . import tools
from .limits import CALL_SECONDS, CallStopped, call_limited
from .lines import error_line
from .schemas import SCHEMAS

INSTRUCTIONS = (
    "kinetoscope reads PyTorch profiler (Kineto) traces like an expert: `explain` gives the "
    "verdict (overhead-, compute-, data-, sync-bound or compiling) with evidence and advice; "
    "`summary`, `table`, `chain` and `memory` show the facts; `diff` compares two runs; "
    "`check` tests expectations; `slice` cuts steps out. Paths are relative to the served root."
)


#: A CLI option named in a message (`--steps '7-9': ...`, `use --window instead`)
_OPTION = re.compile(r"(?<![\w-])--([a-z][a-z-]*)")


def _in_tool_words(line: str, arguments: frozenset[str]) -> str:
    """The CLI's line with each option that is also this tool's argument named as the
    argument (`--steps` -> `steps`): an agent calls the tool, not the command."""

    def name(match: re.Match) -> str:
        argument = match.group(1).replace("-", "_")
        return argument if argument in arguments else match.group(0)

    return _OPTION.sub(name, line)


class _Answered(Exception):
    """A call's child failed and answered its line (`agent.lines.error_line`)."""

    def __init__(self, line: str) -> None:
        super().__init__(line)
        self.line = line


def _refused(line: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=line)], is_error=True)


def _answered(data: dict[str, Any]) -> CallToolResult:
    """A tool's answer: its text the CLI's JSON (`formatting.jsontext`: every character
    outside ASCII escaped, so a C1 control or a bidi override in a name reaches the agent
    as `\\u0089`, where the SDK's text kept them raw), and the same data as the
    structured content (NaN as null, named in `non_finite`, as the CLI writes it)."""
    text = dumps(data)
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=json.loads(text)
    )


def _one_line(run):
    """Run a tool body; whatever goes wrong is a tool error whose text is the line the CLI
    prints for it (returned, not raised: the SDK would prefix a raised error's text), in
    the tool's own words for its arguments."""
    arguments = frozenset(inspect.signature(run).parameters)

    @functools.wraps(run)
    def guarded(*args, **kwargs):
        try:
            return _answered(run(*args, **kwargs))
        except _Answered as exc:
            line = exc.line
        except CallStopped as exc:
            line = f"kinetoscope: error: {exc}"
        except Exception as exc:  # noqa: BLE001 - never a crash of the server
            line = error_line(exc)
        return _refused(_in_tool_words(line, arguments))

    return guarded


def _invalid(error: ValidationError) -> str:
    """The SDK's argument check as one line (it answered pydantic's report: several lines
    per argument, with a link), each argument named as the tool names it."""
    parts = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"]) or "arguments"
        parts.append(f"{where}: {item['msg']}")
    return inert(f"kinetoscope: error: {'; '.join(parts)}")


class _Server(MCPServer):
    """An `MCPServer` whose refusals before a tool runs are one line too: arguments the
    input schema refuses (a string for `top`, a missing `path`) and an unknown tool."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context=None):
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                return _refused(_invalid(exc.__cause__))
            known = {tool.name for tool in await self.list_tools()}
            if exc.__cause__ is None and name not in known:
                return _refused(
                    inert(
                        f"kinetoscope: error: no tool named {name!r} (tools: "
                        f"{', '.join(sorted(known))})"
                    )
                )
            raise


#: a count of rows, findings or steps to show: 0 or more (a negative one cut the lists
#: from their end and counted more left out than there were)
Count = Annotated[int, Field(ge=0)]


def _in_child(seconds: float, body, *args):
    """`body(*args)` in a process of its own under the time limit (`agent.limits`)."""
    ok, value = call_limited(body, args, seconds, error_line)
    if not ok:
        raise _Answered(value)
    return value


def build_server(root: str | os.PathLike, call_seconds: float = CALL_SECONDS) -> MCPServer:
    """An `MCPServer` whose tools read and write only under `root`, each call in a
    process of its own stopped after `call_seconds`."""
    base = Path(os.path.realpath(root))
    if not base.is_dir():
        raise KinetoscopeError(f"--root {inert(str(root))} is not a folder")
    run = functools.partial(_in_child, call_seconds)
    defined: list = []

    def tool(name: str | None = None):
        def register(fn):
            defined.append((name or fn.__name__, fn))
            return fn

        return register

    @tool()
    @_one_line
    def explain(path: str, top: Count = 10, steps: Count = 20, step: int | None = None,
                timeline: bool = False) -> dict[str, Any]:  # fmt: skip
        """Explain a trace: verdict, host-time decomposition, steps and ranked findings with
        evidence and advice. `top` findings, `steps` steps (or only ProfilerStep#`step`);
        `timeline` adds the busy intervals (large)."""
        return run(tools.explain, base, path, top, steps, step, timeline)

    @tool()
    @_one_line
    def summary(path: str) -> dict[str, Any]:
        """Facts of a trace before any judgement: devices, versions, window, per-step busy
        time, top kernels and host ops."""
        return run(tools.summary, base, path)

    @tool()
    @_one_line
    def table(path: str, sort_by: str = "", row_limit: Count = 20) -> dict[str, Any]:
        """The profiler's key_averages() table rebuilt from the trace (self/total CPU and
        device time, calls per name)."""
        return run(tools.table, base, path, sort_by, row_limit)

    @tool()
    @_one_line
    def diff(a: str, b: str, top: Count = 20) -> dict[str, Any]:
        """Compare two runs of one program (A the baseline): step times, kernels, host ops,
        findings, and a conclusion."""
        return run(tools.diff, base, a, b, top)

    @tool()
    @_one_line
    def check(path: str, expect: list[str]) -> dict[str, Any]:
        """Check expectations such as 'kernels_per_step <= 50', 'regime == compute-bound' or
        'not dataloader-bound' (the `kinetoscope check` language)."""
        return run(tools.check, base, path, expect)

    @tool()
    @_one_line
    def chain(path: str, kernel: str | None = None, op: str | None = None,
              step: int | None = None, limit: Count = 20) -> dict[str, Any]:  # fmt: skip
        """How kernels were dispatched: step -> annotations -> aten ops -> launch -> kernel,
        filtered by a pattern on kernel names or on host op names (a plain name: a substring;
        only * ? [...]: a glob over the whole name; else an RE2 regular expression), or by
        step."""
        return run(tools.chain, base, path, kernel, op, step, limit)

    @tool()
    @_one_line
    def memory(path: str, top: Count = 10, steps: Count = 20) -> dict[str, Any]:
        """Allocator activity from [memory] events: peak and the op at it, the `top` largest
        allocations, per-step churn."""
        return run(tools.memory, base, path, top, steps)

    @tool("slice")
    @_one_line
    def slice_(path: str, output: str, steps: str | None = None, window: str | None = None,
               drop: list[str] | None = None) -> dict[str, Any]:  # fmt: skip
        """Cut a trace to steps ('3-5') or a window ('START:END' in us, or 2ms, 1.5s) into a
        new file `output` (.json or .json.gz) under the root; never replaces a file (an
        existing name gets `_2`, ...: the answer's `output` says where it went)."""
        return run(tools.slice_, base, path, output, steps, window, drop)

    made = []
    for name, fn in defined:
        made.append(Tool.from_function(fn, name=name))
        # the documented shape rather than a bare "object" (results still validate as dicts)
        made[-1].fn_metadata.output_schema = SCHEMAS[name]
    return _Server(
        "kinetoscope",
        version=__version__,
        instructions=INSTRUCTIONS,
        tools=made,
        log_level="WARNING",  # stderr stays quiet: the answers carry the errors
    )


def serve(root: str | os.PathLike, call_seconds: float = CALL_SECONDS) -> None:
    """Answer MCP requests on stdin/stdout until the client closes them."""
    build_server(root, call_seconds).run("stdio")
