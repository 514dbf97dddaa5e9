"""`explain DIR --executor dask|ray` on a real local cluster gives the local pool's report."""

from __future__ import annotations

import importlib.util
import json

import pytest

from kinetoscope.errors import UsageError
from kinetoscope.ranks.executors import run_each
from kinetoscope.ranks.multirank import explain_ranks

from ..conftest import CORPUS

DLRM = CORPUS / "multirank" / "dlrm_8ranks"


def _needs(module: str):
    return pytest.mark.skipif(
        importlib.util.find_spec(module) is None,
        reason=f"{module} is not installed (pip install 'kinetoscope[{module.split('.')[0]}]')",
    )


@pytest.fixture(scope="module")
def local_report():
    if not DLRM.is_dir():
        pytest.skip(f"{DLRM} not found")
    return json.loads(explain_ranks([DLRM], jobs=1, config={}, fmt="json"))


@_needs("dask.distributed")
def test_dask_local_cluster_matches_local(local_report):
    # LocalCluster with 2 worker processes: each loads its traces, sends summaries back
    report = json.loads(explain_ranks([DLRM], 2, {}, "json", executor="dask"))
    assert report == local_report
    assert [s["rank"] for s in report["stragglers"]] == [7]


@_needs("ray")
def test_ray_local_cluster_matches_local(local_report):
    report = json.loads(explain_ranks([DLRM], 2, {}, "json", executor="ray"))  # num_cpus=2
    assert report == local_report


def test_unknown_executor_and_address_without_cluster():
    with pytest.raises(UsageError, match="unknown executor"):
        run_each(len, ["a"], None, executor="spark")
    with pytest.raises(UsageError, match="--address needs"):
        run_each(len, ["a"], None, executor="local", address="tcp://127.0.0.1:1")
