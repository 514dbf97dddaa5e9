"""`Trace.memo`, the one cache: computed once per Trace, kept on it, gone with it.

The module-level `lru_cache(maxsize=8)`s it replaced were keyed on the Trace, so they
kept the last eight Traces (their columns and every analysis of them) alive for the
whole process: `test_explained_trace_dies_with_its_last_reference` fails on that code.
"""

from __future__ import annotations

import copy
import gc
import importlib
import pickle
import pkgutil
import weakref

import pytest

import kinetoscope
from kinetoscope.analysis.kernel_names import decode, decoded
from kinetoscope.analysis.stats import trace_stats
from kinetoscope.compare.diff import diff_runs
from kinetoscope.compare.runs import load_run

from ..conftest import corpus

ALEXNET = "gpu/alexnet_train.json.gz"
CPU = "cpu/cpu_only_rank34.pt.trace.json.gz"


def _counting():
    calls: list[tuple] = []

    def fn(trace, *args):
        calls.append(args)
        return object()

    return fn, calls


def test_memo_computes_once_per_function_and_arguments():
    trace = kinetoscope.load(corpus(CPU))
    fn, calls = _counting()
    first = trace.memo(fn)
    assert trace.memo(fn) is first
    assert trace.memo(fn, 1) is trace.memo(fn, 1) is not first
    assert trace.memo(fn, 2) is not trace.memo(fn, 1)
    assert calls == [(), (1,), (2,)]


def test_two_traces_of_one_file_share_no_result():
    a, b = kinetoscope.load(corpus(ALEXNET)), kinetoscope.load(corpus(ALEXNET))
    fn, calls = _counting()
    assert a.memo(fn) is not b.memo(fn)
    assert len(calls) == 2
    assert trace_stats(a) is trace_stats(a)
    assert trace_stats(a) is not trace_stats(b)
    assert trace_stats(a).window_us == trace_stats(b).window_us
    name = a.names[int(a.name_id[a.kernels[0]])]
    assert decoded(a, name) is decoded(a, name)
    assert decoded(a, name) is not decoded(b, name)
    assert decoded(a, name) == decode(name)


@pytest.mark.parametrize("relative", [ALEXNET, CPU])
def test_explained_trace_dies_with_its_last_reference(relative):
    trace = kinetoscope.load(corpus(relative))
    report = kinetoscope.explain(trace)
    assert report.findings or report.not_checked  # the rules and their analyses ran
    assert trace._memo  # ... and kept their results on the trace
    gone = weakref.ref(trace)
    del trace, report
    gc.collect()
    assert gone() is None


def test_both_traces_of_a_diff_die_after_it():
    runs = load_run(corpus(ALEXNET)), load_run(corpus(CPU))
    diff_runs(*runs)
    gone = [weakref.ref(r.trace) for r in runs]
    del runs
    gc.collect()
    assert [g() for g in gone] == [None, None]


def test_pickled_or_copied_trace_starts_with_an_empty_memo():
    """A memo keyed on a lambda does not pickle; a copy must not read the original's
    results (its columns may be replaced)."""
    trace = kinetoscope.load(corpus(CPU))
    kinetoscope.explain(trace)
    trace.memo(lambda t: len(t))
    again = pickle.loads(pickle.dumps(trace))
    assert again._memo == {} and trace._memo
    assert len(again) == len(trace) and again.names == trace.names
    assert trace_stats(again).window_us == trace_stats(trace).window_us
    shallow = copy.copy(trace)
    assert shallow._memo == {}
    assert trace_stats(shallow) is not trace_stats(trace)


#: process-wide constants of the installed package (HTML templates, stylesheet), loaded once;
#: no result about any input
PACKAGE_CONSTANTS = {"kinetoscope.report.html._environment", "kinetoscope.report.html._assets"}


def test_no_module_level_cache_in_analysis_rules_or_report():
    """`functools.cache`/`lru_cache` wrappers (they carry `cache_info`) defined at module
    level: every result about a trace or its names is kept by the Trace instead."""
    found = []
    for package in ("analysis", "rules", "report"):
        root = importlib.import_module(f"kinetoscope.{package}")
        for info in pkgutil.walk_packages(root.__path__, f"{root.__name__}."):
            module = importlib.import_module(info.name)
            found += [
                f"{info.name}.{name}"
                for name, value in vars(module).items()
                if hasattr(value, "cache_info") and value.__module__ == info.name
            ]
    assert set(found) <= PACKAGE_CONSTANTS
