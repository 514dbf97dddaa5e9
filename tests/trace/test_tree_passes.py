"""The one-pass tree queries give what a walk up the parents gives, event by event.

`ancestor_of_kind` (by depth levels), `parameter_updates` (one pass for every event)
and hidden-memcpy's requesting op replaced a Python walk to the root per event; the
walks are written out here as the definition and compared on real traces.
"""

from __future__ import annotations

import numpy as np
import pytest

from kinetoscope.analysis.ancestry import ancestor_of_kind
from kinetoscope.analysis.optimizer import _UPDATE_RANGE_RE, batched, parameter_updates
from kinetoscope.rules.hidden_memcpy import COPY_OPS, _requesting_ops
from kinetoscope.trace import Cat
from kinetoscope.trace.load import load
from kinetoscope.trace.steps import STEP_RE

from ..conftest import corpus

TRACES = [
    "gpu/ncompass_train_with_stack_h100nvl.pt.trace.json.gz",  # with_stack: deep nesting
    "gpu/param_linear_train_2080ti.json.gz",  # optimizer steps, AccumulateGrad
    "gpu/alexnet_train.json.gz",  # host-to-device copies inside ops
]


def _walk(trace, is_kind, outermost):
    out = np.full(len(trace), -1)
    for i in range(len(trace)):
        p = i
        while p >= 0:
            if is_kind[p]:
                out[i] = p
                if not outermost:
                    break
            p = int(trace.parent[p])
    return out


@pytest.fixture(scope="module", params=TRACES)
def trace(request):
    return load(corpus(request.param))


@pytest.mark.parametrize("outermost", [True, False])
def test_ancestor_of_kind_is_the_walk_to_the_root(trace, outermost):
    rng = np.random.default_rng(0)
    for kind in (trace.mask(Cat.CPU_OP), rng.random(len(trace)) < 0.2):
        assert np.array_equal(
            ancestor_of_kind(trace, kind, outermost), _walk(trace, kind, outermost)
        )


def test_parameter_updates_is_the_walk_to_the_root(trace):
    def walk(op):
        if batched(trace.name(op)):
            return True
        while op >= 0:
            if _UPDATE_RANGE_RE.search(trace.name(op)):
                return True
            op = int(trace.parent[op])
        return False

    expected = np.array([walk(i) for i in range(len(trace))], dtype=bool)
    assert np.array_equal(parameter_updates(trace), expected)


def test_requesting_op_is_the_first_op_above_the_copies(trace):
    def walk(op):
        while op >= 0 and trace.name(op) in COPY_OPS:
            op = int(trace.parent[op])
        if op < 0 or trace.cat[op] != int(Cat.CPU_OP) or STEP_RE.match(trace.name(op)):
            return -1
        return op

    ops = np.flatnonzero(trace.mask(Cat.CPU_OP, Cat.RUNTIME))
    assert _requesting_ops(trace, ops).tolist() == [walk(op) for op in ops.tolist()]
