"""The interpreter's recursion limit, pinned while a trace is decoded.

msgspec decodes nested values recursively in C and stops at the interpreter's
recursion limit, which is process-wide state that other libraries change: torch's
inductor sets 100,000 on import (and `msgspec.json.decode` overflows the C stack
at that limit: 20,000 levels decode, 30,000 segfault). Left alone, what a reader
drops as too deep would depend on whether torch was imported first (by `profile`,
`tune`, a notebook or an earlier test). Every reader (`load`, `slice`) decodes
inside `decoder_stack()`, so the nesting refused is the same under any caller's
limit; the caller's limit is restored after (the limit is shared by every thread
of the process: loads in threads of one process share it).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

#: Stack levels the decoder gets, whatever `sys.getrecursionlimit()` says. Kineto's
#: values nest a few levels.
DECODE_STACK = 1000


@contextmanager
def decoder_stack() -> Iterator[None]:
    """The recursion limit at this frame's depth plus `DECODE_STACK`, restored after."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(_stack_depth() + DECODE_STACK)
    try:
        yield
    finally:
        sys.setrecursionlimit(before)


def _stack_depth() -> int:
    """Python frames below this one (the caller's share of the recursion limit)."""
    frame, depth = sys._getframe(), 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1
    return depth
