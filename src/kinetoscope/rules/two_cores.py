"""A large trace's rules on two cores: rule modules shared between this process and
a forked copy of it.

`explain` after the load ran on one core while the load's second core sat idle
(docs/benchmarks.md: about 1 s of 2.5 s on a 206 MB trace). Once the statistics
nearly every rule reads are computed, the rules are handed out a module at a time
(the rules of one module under `rules/` share analyses among themselves) to this
process and a forked child: whichever is free reads the next group's number from a
pipe (a one-byte read from a pipe is atomic, so each group goes to exactly one of
them). The fork shares the trace's columns and every analysis computed so far; the
child sends back what its rules returned and exits. The analyses the child computes
stay in the child.

The result is the one-process result: each rule is a pure function of the trace,
and a rule the child did not deliver (it raised, its findings would not pickle, the
child died, or it was still silent when this side gave up waiting) is run again
here, where it fails or not exactly as it would have. Used only where it pays and
is safe (`worth_sharing`).
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import select
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..trace import Trace
from ..trace.split import cores, kill_and_reap
from .base import Rule

#: timed events from which the rules are shared. Sharing pays from a few thousand
#: events (the fork costs about 4 ms), but below this it saves tens of milliseconds
#: (corpus traces, `explain` after the load, one process -> shared: 62 k events 110 ->
#: 89 ms, 218 k events 246 -> 205 ms), not worth a second process
SHARE_MIN_EVENTS = 250_000

#: how long this side waits for the child once its own modules are done: this many
#: seconds, or five times its own time if longer; a child silent that long is taken
#: for stuck (a lock held by another thread at the fork, say), stopped, and its rules
#: run here
CHILD_GRACE_S = 60.0

#: `check(rule, strict)`: the rule's findings, or why it was not checked
#: (`engine.Skipped`); with `strict`, its error raised
Check = Callable[[Rule, bool], Any]


def worth_sharing(trace: Trace) -> bool:
    """A trace large enough, two cores to use, `os.fork`, and no memory budget given
    (`--max-memory`: a second process's temporaries would count against it)."""
    return (
        len(trace) >= SHARE_MIN_EVENTS
        and trace.out_of_core is None
        and trace.memory_budget is None
        and hasattr(os, "fork")
        and cores() >= 2
    )


def run_shared(rules: Sequence[Rule], check: Check, strict: bool) -> dict[str, Any]:
    """`check(rule, strict)` of every rule, by rule id, the groups shared with a child.

    The child checks strictly (an error is not delivered, so the rule runs again here)."""
    groups = _groups(rules)
    if not 2 <= len(groups) <= 255:  # nothing to share; or more than a byte can number
        return {rule.id: check(rule, strict) for rule in rules}
    tasks_read, tasks_write = os.pipe()
    os.write(tasks_write, bytes(range(len(groups))))  # a few dozen bytes: fits the pipe
    os.close(tasks_write)
    results_read, results_write = os.pipe()
    try:
        pid = os.fork()
    except OSError:  # no process to be had (limits, memory): all of them here
        for fd in (tasks_read, results_read, results_write):
            os.close(fd)
        return {rule.id: check(rule, strict) for rule in rules}
    if pid == 0:
        os.close(results_read)
        _child(groups, tasks_read, results_write, check)
    os.close(results_write)
    results: dict[str, Any] = {}
    delivered: dict[str, Any] = {}
    started = time.monotonic()
    try:
        with os.fdopen(results_read, "rb") as from_child:
            for group in _taken(tasks_read, groups):
                results.update((rule.id, check(rule, strict)) for rule in group)
            patience = max(CHILD_GRACE_S, 5 * (time.monotonic() - started))
            if select.select([from_child], [], [], patience)[0]:
                with contextlib.suppress(EOFError, pickle.UnpicklingError):
                    delivered = pickle.load(from_child)
    finally:
        os.close(tasks_read)
        if delivered:  # the child sent its results and is exiting
            os.waitpid(pid, 0)
        else:  # this side raised first, or the child died, sent nothing or is stuck
            kill_and_reap(pid)
    for rule in rules:
        if rule.id not in results:
            results[rule.id] = delivered[rule.id] if rule.id in delivered else check(rule, strict)
    return results


def _groups(rules: Sequence[Rule]) -> list[list[Rule]]:
    """The rules grouped by the module that defines them, in their order."""
    groups: dict[str, list[Rule]] = {}
    for rule in rules:
        groups.setdefault(rule.check.__module__, []).append(rule)
    return list(groups.values())


def _taken(tasks: int, groups: list[list[Rule]]) -> Iterator[list[Rule]]:
    """The groups this process takes from the shared pipe, until it is empty."""
    while number := os.read(tasks, 1):
        yield groups[number[0]]


def _child(groups: list[list[Rule]], tasks: int, results: int, check: Check) -> None:
    """Check the groups taken, send {rule id: result} back, and exit (never returns,
    and never runs the parent's clean-up)."""
    code = 1
    try:
        gc.disable()  # a collection writes to every shared object: a copy of the heap
        done: dict[str, Any] = {}
        for group in _taken(tasks, groups):
            for rule in group:
                with contextlib.suppress(Exception):  # run again by the parent
                    done[rule.id] = check(rule, True)
        try:
            data = pickle.dumps(done, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001 - an unpicklable finding: the parent runs them all
            data = pickle.dumps({})
        with os.fdopen(results, "wb") as out:
            out.write(data)
        code = 0
    finally:
        os._exit(code)
