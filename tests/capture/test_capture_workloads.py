"""Each built-in workload, profiled for real on this machine at tiny sizes."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

pytest.importorskip("torch")

import kinetoscope  # noqa: E402
from kinetoscope.capture.runner import CaptureOptions, run_workload  # noqa: E402
from kinetoscope.capture.schedule import Schedule  # noqa: E402
from kinetoscope.trace import Cat  # noqa: E402

from ..capture_helpers import step_numbers  # noqa: E402


def capture(tmp_path: Path, name: str, overrides: dict | None = None, **options):
    result = run_workload(
        name, overrides or {}, CaptureOptions(device="cpu", out=tmp_path, **options)
    )
    assert len(result.written) == 1
    written = result.written[0]
    assert written.table.is_file()
    return result, kinetoscope.load(written.trace)


def test_matmul_add_writes_tagged_trace_with_annotation_steps_and_metadata(tmp_path):
    result, trace = capture(tmp_path, "matmul_add", {"size": 16})
    assert result.written[0].trace == tmp_path / "01_matmul_add" / "16_fp32_cold_eager.json"
    assert "matmul_add" in trace.names
    assert {"aten::mm", "aten::add"} <= set(trace.names)
    assert step_numbers(trace) == [2, 3, 4]
    meta = trace.meta.kinetoscope
    assert meta["workload"] == "matmul_add"
    assert meta["params"] == {"size": 16, "batched": False}
    assert meta["device"]["type"] == "cpu"
    assert meta["torch_version"] == __import__("torch").__version__
    assert meta["schedule"] == {"wait": 1, "warmup": 1, "active": 3, "repeat": 1}
    assert meta["warmup_iters"] == 0
    table = result.written[0].table.read_text()
    assert "aten::mm" in table and "Self CPU time total" in table


def test_batched_matmul_dispatches_to_bmm(tmp_path):
    result, trace = capture(tmp_path, "matmul_add", {"size": 8, "batched": True})
    assert result.tag == "8_fp32_cold_eager_batched"
    assert "aten::bmm" in trace.names
    assert "aten::mm" not in trace.names


@pytest.mark.parametrize(
    ("name", "overrides", "annotation", "op"),
    [
        ("linear", {"batch": 4, "in_dim": 8, "out_dim": 8}, "linear", "aten::addmm"),
        ("mlp", {"batch": 1, "seq": 4, "dim": 8, "hidden": 16}, "mlp", "aten::gelu"),
        (
            "attention",
            {"impl": "naive", "seq": 8, "head_dim": 8},
            "attention_naive",
            "aten::softmax",
        ),
        (
            "attention",
            {"impl": "sdpa", "seq": 8, "head_dim": 8},
            "attention_sdpa",
            "aten::scaled_dot_product_attention",
        ),
    ],
)
def test_workload_trace_has_its_annotation_op_and_schedule(
    tmp_path, name, overrides, annotation, op
):
    _, trace = capture(tmp_path, name, overrides)
    assert annotation in trace.names
    assert op in trace.names
    assert step_numbers(trace) == [2, 3, 4]


def test_dataloader_without_workers_loads_inside_the_step(tmp_path):
    result, trace = capture(
        tmp_path, "dataloader", {"batch": 4, "image": 8, "blur": 1, "hidden": 8}
    )
    assert result.tag == "w0_b4_i8_blur1_h8_fp32_cold_eager"
    assert "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__" in trace.names
    # the item preprocessing runs in the main process, so its ops are in the trace
    assert "aten::avg_pool2d" in trace.names
    assert {"train_step", "Optimizer.step#SGD.step"} <= set(trace.names)
    assert step_numbers(trace) == [2, 3, 4]


def test_dataloader_with_workers_only_hands_over_batches(tmp_path):
    overrides = {"batch": 4, "image": 8, "blur": 1, "hidden": 8, "num_workers": 2}
    _, trace = capture(tmp_path, "dataloader", overrides)
    assert "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__" in trace.names
    assert "aten::avg_pool2d" not in trace.names


@pytest.mark.skipif(
    importlib.util.find_spec("transformers") is None,
    reason="transformers not installed (pip install 'kinetoscope[llm]')",
)
def test_transformer_forward_and_generate(tmp_path):
    overrides = {"layers": 1, "hidden": 64, "seq": 8, "new_tokens": 2}
    result, trace = capture(tmp_path, "transformer", overrides)
    assert result.written[0].trace.parent.name == "05_llm"
    assert {"forward", "generate"} <= set(trace.names)
    assert step_numbers(trace) == [2, 3, 4]


@pytest.mark.skipif(
    not any(shutil.which(c) for c in ("g++", "c++", "clang++")),
    reason="torch.compile on CPU needs a C++ compiler",
)
def test_compiled_run_shows_compiled_region(tmp_path):
    result, trace = capture(tmp_path, "matmul_add", {"size": 8}, compile=True)
    assert result.tag == "8_fp32_cold_compile"
    assert any(name.startswith("Torch-Compiled Region") for name in trace.names)
    assert trace.meta.kinetoscope["compile"] == "default"


def test_schedule_repeat_warmup_iterations_and_gzip(tmp_path):
    schedule = Schedule(wait=0, warmup=1, active=2, repeat=2)
    result = run_workload(
        "matmul_add",
        {"size": 8},
        CaptureOptions(device="cpu", out=tmp_path, schedule=schedule, warmup=2, gzip=True),
    )
    names = [w.trace.name for w in result.written]
    # warm whatever the count (2 is in the metadata and the table header)
    assert names == ["8_fp32_warm_eager_cycle1.json.gz", "8_fp32_warm_eager_cycle2.json.gz"]
    assert "# kinetoscope: warmup_iters = 2" in result.written[1].table.read_text()
    first, second = (kinetoscope.load(w.trace) for w in result.written)
    assert step_numbers(first) == [1, 2]
    assert step_numbers(second) == [4, 5]
    assert second.meta.kinetoscope["warmup_iters"] == 2
    # one numbering: the second cycle is 2 in the name, the metadata and the table header
    assert (first.meta.kinetoscope["cycle"], second.meta.kinetoscope["cycle"]) == (1, 2)
    assert "# kinetoscope: cycle = 2" in result.written[1].table.read_text()


def test_recording_options_reach_the_trace(tmp_path):
    result, trace = capture(
        tmp_path,
        "linear",
        {"batch": 4, "in_dim": 8, "out_dim": 8},
        record_shapes=True,
        profile_memory=True,
        with_stack=True,
    )
    assert len(trace.memory.index) > 0  # [memory] allocation events
    assert trace.input_dims  # shapes recorded
    assert trace.mask(Cat.PYTHON).any()  # Python frames from with_stack
    meta = trace.meta.kinetoscope
    assert meta["record_shapes"] and meta["profile_memory"] and meta["with_stack"]
    # what was recorded shows in the name: not the plain run's name with `_2`
    assert result.written[0].trace.name == "4x8x8_fp32_cold_eager_shapes_memory_stack.json"
