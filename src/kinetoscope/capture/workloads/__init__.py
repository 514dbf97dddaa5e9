"""The built-in workloads of the series, one module each.

A workload module defines `NAME`, `FOLDER` (the `traces/` subfolder, numbered as
in the series), a frozen `Params` dataclass (its options and defaults), `tag(params)`
(the parameter part of the output file names) and `build(params, ctx)` returning
the function that runs one iteration. Modules import torch at top level, so they
are imported only once torch is known to be there.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType

from ...errors import UsageError

#: workload name -> module under kinetoscope.capture.workloads
WORKLOADS: dict[str, str] = {
    "matmul_add": "matmul_add",
    "linear": "linear",
    "mlp": "mlp",
    "attention": "attention",
    "transformer": "transformer",
    "dataloader": "dataloader",
}


@dataclass(frozen=True)
class Context:
    """What a workload needs to build itself: torch, where to run, the dtype, and
    `compile`, which is either the identity or `torch.compile` with the chosen mode."""

    torch: ModuleType
    device: str
    dtype: object
    compile: object


def check_workload(name: str) -> None:
    """UsageError unless `name` is a built-in workload (checked before torch is imported)."""
    if name not in WORKLOADS:
        raise UsageError(
            f"unknown workload {name!r}: choose one of {', '.join(WORKLOADS)} or give a script.py"
        )


def load_workload(name: str) -> ModuleType:
    check_workload(name)
    return importlib.import_module(f"{__name__}.{WORKLOADS[name]}")
