"""One line per fuzz run, shared by every fuzz surface, read by `bench/fuzz_table.py`.

Why a module: the CLI, resource, signal, MCP, `view` and browser fuzzers are written
apart, and the per-surface table (issues 33 and 36) must count them the same way.

With `KINETOSCOPE_FUZZ_LOG=FILE` set, each run appends to `FILE.runs` one line:

    SURFACE COMMAND OUTCOME SECONDS

four fields separated by one space, none holding whitespace:

- SURFACE: where the input went in: `cli` (in-process CLI on mutated traces),
  `cli-resources` (the console entry in a child on bombs and floods), `signals`
  (SIGINT/SIGTERM at a random moment), `mcp`, `view`, `html`, ...;
- COMMAND: what ran, e.g. `explain-md`, `summary`, `profile-sigint`, `tool-slice`;
- OUTCOME: one of `OUTCOMES` below;
- SECONDS: wall-clock of the run, `%.3f`.

The file is opened in append mode for each line (one short `write`), so several
pytest processes may log to the same FILE. The older `FILE.commands` lines of
`tests/test_fuzz.py` (`COMMAND EXIT_CODE SECONDS`) are read as surface `cli`.
"""

from __future__ import annotations

import os

#: what a run can end as; anything but `ok` and `clean-error` is a finding
OUTCOMES = (
    "ok",  # the documented success (for `check` exit 0 or 1; for a signal exit 130)
    "clean-error",  # exit 2 with the one line `kinetoscope: error: ...`
    "internal-error",  # exit 1 / "internal error" / an exception other than the documented one
    "traceback",  # a Python traceback reached the output
    "hang",  # past the case's wall-clock bound
    "over-budget",  # peak memory over the stated cap
    "over-disk",  # output, temporary or spill files over the stated cap, or left behind
    "control-char",  # a raw control or bidi character in an output
    "bad-output",  # output that breaks its format (JSON that does not parse, a partial file)
    "no-draw",  # a page that did not finish loading and drawing
)

ENV = "KINETOSCOPE_FUZZ_LOG"


def log_run(surface: str, command: str, outcome: str) -> None:
    """Append one run to `$KINETOSCOPE_FUZZ_LOG.runs` (nothing when it is unset). No
    duration: a hang is an outcome, judged by each surface's bound; how long runs take
    is a benchmark's to measure, not a test's."""
    assert outcome in OUTCOMES, outcome
    assert not any(c.isspace() for c in surface + command), (surface, command)
    base = os.environ.get(ENV)
    if base:
        with open(base + ".runs", "a") as log:
            log.write(f"{surface} {command} {outcome}\n")
