"""Generated names made readable and comparable across runs.

torch.compile names what it generates after a hash of the generated code:
Inductor's compiled graph is called as `## Call CompiledFxGraph <52-character
hash> ##`, and its cache keys and kernel files carry such hashes too. The hash
changes whenever anything in the graph or the environment does, so the same
op has another name in each run: matched by raw name it would be "vanished" in
A and "appeared" in B, and printed raw it is 60 characters of noise. The
`## ... ##` markers are the profiler annotation's decoration, not part of the
name either. Both go; what is left names what ran (`Call CompiledFxGraph`).
"""

from __future__ import annotations

import re

#: A generated hash: 20 or more lowercase letters and digits, with at least one of each
#: (so long words and long numbers stay).
_HASH = re.compile(r"\b(?=[a-z0-9]*\d)(?=[a-z0-9]*[a-z])[a-z0-9]{20,}\b")
_MARKERS = re.compile(r"^##\s*(.*?)\s*##$")


def readable(name: str) -> str:
    """`## Call CompiledFxGraph fzxlulc6...qegq2 ##` -> `Call CompiledFxGraph`."""
    out = _HASH.sub("", name)
    out = re.sub(r"\s{2,}", " ", out).strip()
    m = _MARKERS.match(out)
    if m:
        out = m[1]
    return out or name
