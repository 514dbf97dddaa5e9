"""Each MCP tool call in a process of its own, stopped when it runs past its time.

A tool call reads a file an agent chose: a huge or hostile trace can take minutes
(a loader refuses what it can recognise early, `trace.bounds`, not everything), and
a call that runs on holds its worker and its memory while the agent waits. The
server itself must never be what is stuck, so each call runs in a child process
that can be killed: the answer comes back through a pipe, or, past the limit, the
child is killed (its memory with it) and the call answers one line.

Children are forked from a forkserver started once with the tools imported: a
fork of the server itself would copy its threads' locks (the SDK answers from a
thread pool), and a fresh interpreter per call would pay the imports every time.

A child is kinetoscope's own process, so it runs within the CLI's default memory
budget twice over: its loads refuse a trace whose analyses would need more than the
RAM available (`trace.budget`), and it holds itself to that RAM (`RLIMIT_DATA`),
so what the projection misses is a one-line answer, not the machine's memory.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from typing import Any

from ..trace.budget import arm_backstop, available_ram, hold

#: seconds a tool call may take by default (`kinetoscope mcp --call-timeout`): the
#: largest corpus trace is explained in a few seconds, a 1 GB trace in about a minute
CALL_SECONDS = 300.0
_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(["kinetoscope.agent.tools", "kinetoscope.agent.lines"])


class CallStopped(Exception):
    """The call ran past its time limit, or its process ended without answering."""


def call_limited(
    body: Callable[..., Any], args: tuple, seconds: float, on_error: Callable[[BaseException], str]
) -> tuple[bool, Any]:
    """(True, `body(*args)`) or (False, `on_error(exception)`) from a child process;
    `CallStopped` when the child runs past `seconds` or dies without an answer.
    `body` and `on_error` must be module-level functions (they are pickled)."""
    receiver, sender = _CONTEXT.Pipe(duplex=False)
    child = _CONTEXT.Process(target=_answer, args=(sender, body, args, on_error), daemon=True)
    child.start()
    sender.close()
    try:
        if not receiver.poll(seconds):
            raise CallStopped(f"the call ran past its time limit of {seconds:g} s and was stopped")
        try:
            return receiver.recv()
        except EOFError:
            child.join(5)
            raise CallStopped(
                f"the call's process ended without an answer (exit code {child.exitcode}: "
                "out of memory or killed)"
            ) from None
    finally:
        receiver.close()
        if child.is_alive():
            child.kill()
        child.join(5)


def _answer(sender, body: Callable[..., Any], args: tuple, on_error) -> None:
    """In the child: run the call, within the RAM available, and send its outcome."""
    arm_backstop()
    hold(available_ram(), "the memory budget (the RAM available)")
    try:
        outcome = (True, body(*args))
    except BaseException as exc:  # noqa: BLE001 - every failure becomes the answer's line
        outcome = (False, on_error(exc))
    sender.send(outcome)
    sender.close()
