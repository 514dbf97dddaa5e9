"""Kernel identity for matching across runs.

Two runs doing the same device work launch kernels with the same names; the
match key is the full name, so a different layout (`_nn_` vs `_tn_`) or dtype
(`bf16` vs `f32`) is a different kernel (the dispatcher took another branch),
while the display name is the short decoded form a reader can scan.
"""

from __future__ import annotations


def identify_kernel(name: str) -> tuple[str, str]:
    """(match key, display name) of a raw kernel name."""
    return name, name
