"""`trace.json_strings.unescaped_quotes`: which `"` open or close a string, in time linear in
the text whatever its runs of backslashes."""

from __future__ import annotations

import random
import time

import numpy as np

from kinetoscope.trace.json_strings import unescaped_quotes


def _reference(text: bytes) -> list[int]:
    """A `"` is real when an even run of backslashes precedes it (the JSON rule, by hand)."""
    found, run = [], 0
    for at, byte in enumerate(text):
        if byte == ord('"') and run % 2 == 0:
            found.append(at)
        run = run + 1 if byte == ord("\\") else 0
    return found


def test_the_rule_on_random_runs_of_backslashes_and_quotes():
    rng = random.Random(7)
    for _ in range(300):
        text = bytes(rng.choice(b'\\\\\\"ab') for _ in range(rng.randint(0, 60)))
        assert unescaped_quotes(np.frombuffer(text, np.uint8)).tolist() == _reference(text)


def test_a_long_run_of_backslashes_costs_one_pass():
    """A name of 4 million backslashes before its closing quote (found by
    tests/test_fuzz_resources.py: `slice` of a 1 MB trace whose `cat` held them took 106-134 s,
    one numpy round per backslash). The bound catches that, not a timing."""
    for run in (4_000_000, 4_000_001):
        text = b'{"cat":"' + b"\\" * run + b'"}'
        started = time.monotonic()
        quotes = unescaped_quotes(np.frombuffer(text, np.uint8)).tolist()
        assert time.monotonic() - started < 10
        assert quotes == ([1, 5, 7, 8 + run] if run % 2 == 0 else [1, 5, 7])
