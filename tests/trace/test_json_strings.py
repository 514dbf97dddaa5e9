"""`trace.json_strings.unescaped_quotes`: which `"` open or close a string, in time linear in
the text whatever its runs of backslashes."""

from __future__ import annotations

import random
import time

import numpy as np

from kinetoscope.trace.json_strings import BoundaryScan, OutsideStrings, unescaped_quotes


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


def _outside_by_hand(text: bytes) -> list[bool]:
    """Whether each byte lies outside strings (the JSON rule, by hand)."""
    inside, run, flags = False, 0, []
    for byte in text:
        if byte == ord('"') and run % 2 == 0:
            inside = not inside
            flags.append(False)  # a quote is never a mark asked about
        else:
            flags.append(not inside)
        run = run + 1 if byte == ord("\\") else 0
    return flags


def test_outside_strings_a_block_at_a_time_follows_the_rule(monkeypatch):
    """Blocks of 1 to 9 bytes: a string, an escape and a run of backslashes cut by a block's
    end carry over to the next block (`OutsideStrings`)."""
    rng = random.Random(11)
    for block in range(1, 10):
        monkeypatch.setattr(OutsideStrings, "BLOCK", block)
        for _ in range(60):
            text = bytes(rng.choice(b'\\\\\\""}{,a') for _ in range(rng.randint(0, 50)))
            flags = _outside_by_hand(text)
            marks = OutsideStrings().marks(np.frombuffer(text, np.uint8), (ord("}"), ord("{")))
            expected = [at for at, byte in enumerate(text) if byte in b"{}" and flags[at]]
            assert marks.tolist() == expected, (block, text)


def test_the_last_boundary_outside_strings_as_the_text_grows(monkeypatch):
    """`BoundaryScan` fed a text a few bytes at a time finds what one scan of the whole
    finds: the last `},{` outside strings, none inside a string left open."""
    monkeypatch.setattr(OutsideStrings, "BLOCK", 5)
    text = b'{"a":"},{"},{"b":"x\\\\"},{"c":"},{\\"},{'
    scan = BoundaryScan()
    for end in range(0, len(text) + 1, 3):
        scan.last(text, end)
    assert scan.last(text, len(text)) == (text.rindex(b'},{"c"') + 1, text.rindex(b'{"c"'))
    open_string = text + b"x},{y},{"  # still inside the string that "c" opened
    assert BoundaryScan().last(open_string, len(open_string)) == scan.found
