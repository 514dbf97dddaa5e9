"""Whether the window trains: autograd ran a backward pass, or an optimizer stepped.

Advice about saved activations (checkpointing), gradients (accumulation, DDP
buckets) and the optimizer fits only a run that has them. Autograd saves a
forward's activations only for a backward that follows; under torch.no_grad()
or torch.inference_mode() it saves nothing, and a forward-only trace has no
backward to checkpoint or gradients to reduce. The profiler records the
backward where it runs: the engine wraps each node in
`autograd::engine::evaluate_function: <Node>`, the node itself is a range named
`<Op>Backward0` (`CompiledFunctionBackward`, `AccumulateGrad` for the gradient
written into `.grad`), and the ops it calls are `aten::*_backward`. torch.optim
wraps `step()` and `zero_grad()` in `Optimizer.step#...` / `Optimizer.zero_grad#...`.
Only host events count: a device kernel named `..._backward` is launched by one
of those ops, whose range is the evidence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..trace import Trace

_BACKWARD_RE = re.compile(
    r"^autograd::engine::evaluate_function|Backward\d*$|AccumulateGrad|^aten::\w+_backward$"
)
_OPTIMIZER_RE = re.compile(r"^Optimizer\.(?:step|zero_grad)#")

#: what a forward-only window lacks, said where advice is withheld
NO_BACKWARD = (
    "no backward ran in the window (no autograd::engine::evaluate_function op, no "
    "*Backward node, no aten::*_backward op, no optimizer step)"
)


@dataclass(frozen=True)
class TrainingEvidence:
    """The host events that show a backward pass or a parameter update."""

    backward_events: int
    optimizer_events: int
    #: one backward event's name, for the evidence line ("" when none)
    example: str

    @property
    def backward(self) -> bool:
        """Autograd ran backward: activations were saved for it and gradients exist."""
        return self.backward_events > 0

    @property
    def training(self) -> bool:
        """A backward or an optimizer step: the window is (part of) a training step."""
        return self.backward_events > 0 or self.optimizer_events > 0

    def said(self) -> str:
        """`3,210 backward events (e.g. MmBackward0), 2 optimizer ranges` or `NO_BACKWARD`."""
        if not self.training:
            return NO_BACKWARD
        parts = []
        if self.backward_events:
            parts.append(f"{self.backward_events:,} backward events (e.g. {self.example})")
        if self.optimizer_events:
            parts.append(f"{self.optimizer_events:,} optimizer ranges")
        return ", ".join(parts)


def training_evidence(trace: Trace) -> TrainingEvidence:
    """The window's backward and optimizer events (memoized)."""
    return trace.memo(_training_evidence)


def _training_evidence(trace: Trace) -> TrainingEvidence:
    host = trace.lane_kind == 1
    backward = np.isin(trace.name_id, trace.name_ids_matching(_BACKWARD_RE.search)) & host
    optimizer = np.isin(trace.name_id, trace.name_ids_matching(_OPTIMIZER_RE.search)) & host
    found = np.flatnonzero(backward)
    return TrainingEvidence(
        backward_events=len(found),
        optimizer_events=int(optimizer.sum()),
        example=trace.name(int(found[0])) if len(found) else "",
    )
