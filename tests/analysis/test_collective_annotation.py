"""A collective kernel with no launch in the trace takes its kind from the `nccl:*`
device annotation that encloses it on its own stream (analysis.collectives).

The MI300X corpus trace (tracelens_mi300__resnet_act_checkpoint) holds 17 RCCL
`ncclDevKernel_Generic` kernels on device 2, stream 4. Read from the file: 12 have a
launch (hipExtLaunchKernel, `record_param_comms` above it) and each lies exactly inside
an `nccl:broadcast` (6) or `nccl:all_reduce` (6) `gpu_user_annotation` on pid 2 tid 4;
the first 5 (at 2.6-20.9 ms into the trace) have no launch and no annotation at all:
they ran for work launched before the profiler started.
"""

from __future__ import annotations

import gzip
import json

from kinetoscope.analysis.collectives import collectives
from kinetoscope.trace import load
from tests.conftest import corpus, kernel, launch, op, write_trace

MI300 = "gpu/tracelens_mi300__resnet_act_checkpoint.json.gz"


def _events() -> list[dict]:
    with gzip.open(corpus(MI300)) as f:
        return json.load(f)["traceEvents"]


def _comm_kernels(events):
    return [e for e in events if e.get("cat") == "kernel" and "ncclDevKernel" in e["name"]]


def test_launchless_kernels_without_an_annotation_stay_unknown():
    """Must not fire: nothing encloses the first 5 kernels, so no kind is invented."""
    events = _events()
    kernels = sorted(_comm_kernels(events), key=lambda e: e["ts"])
    annotations = [
        e for e in events if e.get("cat") == "gpu_user_annotation" and e["name"][:5] == "nccl:"
    ]
    bare = [
        k for k in kernels if not any(a["ts"] <= k["ts"] < a["ts"] + a["dur"] for a in annotations)
    ]
    assert len(kernels) == 17 and len(bare) == 5
    calls = sorted(collectives(load(corpus(MI300))).calls, key=lambda c: c.start)
    assert [c.kind for c in calls[:5]] == ["unknown"] * 5
    assert [c.kind for c in calls[5:]].count("broadcast") == 6
    assert [c.kind for c in calls[5:]].count("all_reduce") == 6


def test_annotation_names_the_kernels_when_the_host_side_is_missing(tmp_path):
    """Must fire: the same real trace with its device lanes only (as in a file that holds
    another process's device events): the 12 annotated kernels keep their kinds."""
    device_only = [
        e
        for e in _events()
        if e.get("ph") == "M"
        or e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
        or (e.get("cat") == "gpu_user_annotation" and e["name"].startswith("nccl:"))
    ]
    trace = load(write_trace(tmp_path / "device_only.json", device_only))
    assert not (trace.launch_of >= 0).any()
    kinds = [c.kind for c in collectives(trace).calls]
    assert kinds.count("broadcast") == 6 and kinds.count("all_reduce") == 6
    assert kinds.count("unknown") == 5


def test_only_an_annotation_on_the_kernels_own_stream_counts(tmp_path):
    """A SendRecv kernel with no launch: named all_to_all by the annotation on its stream,
    not by one on another stream, and not by one that ends before it does."""
    send_recv = "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"
    events = [
        op("ProfilerStep#1", 0, 1000),
        op("aten::mul", 10, 5),
        launch(11, 2, 1),
        kernel("elementwise_kernel", 20, 5, 1),
        kernel(send_recv, 100, 50, 2, stream=7),
        {**op("nccl:all_to_all", 100, 50, pid=0, tid=7), "cat": "gpu_user_annotation"},
        kernel(send_recv, 300, 50, 3, stream=8),
        {**op("nccl:all_to_all", 300, 50, pid=0, tid=7), "cat": "gpu_user_annotation"},
        kernel(send_recv, 500, 50, 4, stream=7),
        {**op("nccl:all_reduce", 500, 20, pid=0, tid=7), "cat": "gpu_user_annotation"},
    ]
    calls = sorted(collectives(load(write_trace(tmp_path / "t.json", events))).calls,
                   key=lambda c: c.start)  # fmt: skip
    assert [c.kind for c in calls] == ["all_to_all", "send_recv", "send_recv"]
