"""An MCP tool call's child runs within the default memory budget (issue 36): it holds
itself to the RAM available (`RLIMIT_DATA`), so an allocation past it is the one
line that says so, and a call within it answers as before."""

from __future__ import annotations

from kinetoscope.agent.limits import call_limited
from kinetoscope.agent.lines import error_line
from kinetoscope.trace.budget import available_ram


def test_a_call_past_the_ram_available_is_the_budget_line():
    available = available_ram()
    assert available is not None  # Linux: /proc/meminfo says
    # refused when mapped, under the child's limit: no page of it is ever touched
    ok, line = call_limited(bytearray, (2 * available,), 60, error_line)
    assert not ok
    assert line.startswith("kinetoscope: error: ran past the memory budget (the RAM available) of ")
    assert line.endswith("and was stopped: cut a window with `kinetoscope slice`")


def test_a_call_within_the_budget_answers():
    assert call_limited(bytearray, (1 << 20,), 60, error_line) == (True, bytearray(1 << 20))
