"""The GPU check kit: everything a GPU run can check at once (docs/gpu.md).

The machines kinetoscope is built on have no GPU, so the checks that need one
wait here for the first machine that has one: `python -m pytest -m gpu -p no:randomly
tests/test_gpu_kit.py`. Excluded from the default run (pyproject addopts), skipped
with the reason where torch or a CUDA/ROCm device is missing. Each check records a
real run through the CLI (`kinetoscope profile`, `kinetoscope tune`) and asserts what
the mechanism predicts:

- matmul_add at 64 (a 64 x 64 product is a few microseconds of device work behind
  a launch that costs about as much: overhead-bound) and 8192 (1.1 TFLOP a step,
  over a millisecond of tensor-core work per launch even on an H100: compute-bound),
  each cold (no warm-up), warm and compiled. The first run on an H100 (2026-11-25)
  used 4096: its bf16 GEMM lasts 171 us there, the cold and compiled host steps
  300-600 us, and the device idled a quarter of the window: "mixed" was the trace's
  truth, the size was too small for the claim;
- attention pinned to each SDPA backend: the attention analysis names the backend
  that was asked for;
- a transformer `generate()`: the LLM view splits each generate into one prefill and
  decode passes, and the tiny model's decode is launch-bound (llm-decode-overhead);
- `tune`'s GPU knobs: the pin_memory, CUDA-graph (compile reduce-overhead), bf16 and
  TF32 trials run, and their traces show the knob took effect (pinned copies, graph
  launches, bf16 params, and fp32-gemm-tf32 firing on the fp32 baseline's FFMA
  GEMMs but not on the TF32 trial's).

Every run's numbers go to `$KINETOSCOPE_GPU_OUT/results.md` (default: a pytest temp
folder, printed at the end), for docs/accuracy.md's "On a GPU" section.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import numpy as np
import pytest

import kinetoscope
from kinetoscope.analysis.llm import llm_view
from kinetoscope.rules.engine import run_rules

from .capture_helpers import error_lines, run_cli

pytestmark = pytest.mark.gpu

GRAPH_LAUNCHES = ("cudaGraphLaunch", "hipGraphLaunch")
TUNE_QUICK = ["--warmup", "2", "--blocks", "3", "--block-steps", "2", "--format", "json"]


def no_gpu_reason() -> str | None:
    """Why this machine cannot run the kit, in one line; None when it can."""
    if importlib.util.find_spec("torch") is None:
        return "needs torch with CUDA or ROCm: torch is not installed"
    import torch

    if torch.cuda.is_available():
        return None
    build = torch.version.cuda or torch.version.hip
    if build is None:
        return (
            f"needs a CUDA or ROCm device: torch {torch.__version__} is a CPU-only build "
            "(torch.version.cuda and torch.version.hip are None)"
        )
    return (
        f"needs a CUDA or ROCm device: torch {torch.__version__} (built for "
        f"{'CUDA' if torch.version.cuda else 'ROCm'} {build}) finds none "
        "(torch.cuda.is_available() is False)"
    )


@pytest.fixture(scope="module")
def gpu():
    """The device the kit runs on; skips every test of the module without one."""
    reason = no_gpu_reason()
    if reason:
        pytest.skip(reason)
    import torch

    return {
        "name": torch.cuda.get_device_name(0),
        "capability": ".".join(map(str, torch.cuda.get_device_capability(0))),
        "rocm": torch.version.hip is not None,
        "torch": torch.__version__,
        "build": torch.version.cuda or torch.version.hip,
    }


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    where = os.environ.get("KINETOSCOPE_GPU_OUT")
    path = Path(where) if where else tmp_path_factory.mktemp("gpu_kit")
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="module")
def results(gpu, out):
    """Rows each check adds; written as results.md and results.json when the module ends."""
    rows: list[dict] = []
    yield rows
    head = (
        f"GPU kit on {gpu['name']} (compute capability {gpu['capability']}), torch "
        f"{gpu['torch']} ({'ROCm' if gpu['rocm'] else 'CUDA'} {gpu['build']})"
    )
    lines = [head, "", "| check | run | result |", "|---|---|---|"]
    lines += [f"| {r['check']} | {r['run']} | {r['result']} |" for r in rows]
    (out / "results.md").write_text("\n".join(lines) + "\n")
    (out / "results.json").write_text(json.dumps({"device": gpu, "rows": rows}, indent=2))
    print(f"\nGPU kit results: {out / 'results.md'}")


def _profile(out: Path, *args: str) -> Path:
    """`kinetoscope profile ARGS --device cuda` into its own folder; the trace it wrote."""
    folder = out / "_".join(a.strip("-") for a in args)
    done = run_cli("profile", *args, "--device", "cuda", "--out", str(folder), "--force")
    if done.returncode == 2 and "cannot run" in done.stderr:
        pytest.skip(" ".join(error_lines(done.stderr)))  # a backend this GPU does not have
    assert done.returncode == 0, done.stderr
    (trace,) = [p for p in folder.rglob("*.json") if p.parent != folder]
    return trace


# ---- matmul_add: the verdict at both ends of the size range ---------------------------

MODES = {"cold": ["--warmup", "0"], "warm": ["--warmup", "5"],
         "compiled": ["--warmup", "5", "--compile"]}  # fmt: skip
EXPECTED = {64: "overhead-bound", 8192: "compute-bound"}


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("size", sorted(EXPECTED))
def test_matmul_add_verdict(gpu, out, results, size, mode):
    trace = _profile(out, "matmul_add", "--size", str(size), *MODES[mode])
    report = kinetoscope.explain(trace)
    results.append(
        {
            "check": "matmul_add verdict",
            "run": f"size {size}, {mode}",
            "result": report.verdict.summary,
        }
    )
    assert report.verdict.regime == EXPECTED[size], report.verdict.summary


# ---- attention: each SDPA backend named ------------------------------------------------


@pytest.mark.parametrize("backend", ["math", "efficient", "flash", "cudnn"])
def test_attention_backend_is_named(gpu, out, results, backend):
    from kinetoscope.analysis.attention import attention_use

    if backend == "cudnn" and gpu["rocm"]:
        pytest.skip("cuDNN attention is NVIDIA-only")
    trace_path = _profile(out, "attention", "--backend", backend, "--record-shapes")
    use = attention_use(kinetoscope.load(trace_path))
    kernels = use.uses[0].kernel_names.most_common(2) if use.uses else []
    results.append(
        {"check": "attention backend", "run": f"--backend {backend}",
         "result": f"named {use.backends()}, kernels {kernels}"}
    )  # fmt: skip
    assert use.backends()[:1] == [backend], use.backends()
    assert use.uses[0].kernels > 0  # the backend op launched device work


# ---- transformer generate(): prefill and decode split ----------------------------------


def test_generate_splits_prefill_and_decode(gpu, out, results):
    """Each of the 3 recorded steps is one generate() of 8 new tokens: a prefill on the
    32-token prompt, then 7 decode passes on one token each, every one launching kernels.
    A 2-layer, 128-wide model's decode kernels last microseconds: the device idles
    between launches, so llm-decode-overhead fires."""
    trace_path = _profile(
        out, "transformer", "--mode", "generate", "--layers", "2", "--hidden", "128",
        "--seq", "32", "--new-tokens", "8", "--record-shapes",
    )  # fmt: skip
    trace = kinetoscope.load(trace_path)
    view = llm_view(trace)
    assert view is not None and view.source == "shapes"
    assert [p.phase for p in view.passes] == (["prefill"] + ["decode"] * 7) * 3
    assert [p.tokens for p in view.passes] == ([32] + [1] * 7) * 3
    assert all(p.kernels > 0 and p.device_busy_us > 0 for p in view.passes)
    fired = {f.id for f in run_rules(trace, only=["llm-decode-overhead"]).findings}
    results.append(
        {"check": "generate()", "run": "2 layers, 128 wide, 32-token prompt, 8 new tokens",
         "result": f"TTFT {view.ttft_us:.0f} us, TPOT {view.tpot_us:.0f} us, decode device "
         f"busy {sum(p.device_busy_us for p in view.phase('decode')):.0f} us of "
         f"{sum(p.dur for p in view.phase('decode')):.0f} us, fired {sorted(fired)}"}
    )  # fmt: skip
    assert fired == {"llm-decode-overhead"}


def test_compiled_generate_passes_are_the_compiled_calls(gpu, out, results):
    """With --compile, Inductor fuses the embedding into its kernels: the forwards are the
    calls of the compiled frame (Torch-Compiled Region), 1 prefill + 7 decodes a step."""
    trace_path = _profile(
        out, "transformer", "--mode", "generate", "--layers", "2", "--hidden", "128",
        "--seq", "32", "--new-tokens", "8", "--compile", "--warmup", "2",
    )  # fmt: skip
    view = llm_view(kinetoscope.load(trace_path))
    assert view is not None, "no LLM passes in the compiled generate() trace"
    results.append(
        {"check": "compiled generate()", "run": "--compile, warm",
         "result": f"{view.source}: {[p.phase for p in view.passes][:8]}..., TTFT "
         f"{view.ttft_us:.0f} us, TPOT {view.tpot_us:.0f} us"}
    )  # fmt: skip
    assert [p.phase for p in view.passes] == (["prefill"] + ["decode"] * 7) * 3


# ---- tune: the GPU knobs' trials run and take effect -----------------------------------


def _tune(out: Path, name: str, *args: str) -> dict:
    done = run_cli("tune", *args, "--device", "cuda", "--out", str(out / name), *TUNE_QUICK)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _trial(doc: dict, setting: dict) -> dict:
    trial = next(t for t in doc["trials"] if t["setting"] == setting)
    assert trial["error"] is None and trial["block_seconds"], trial
    return trial


def _speed(trial: dict) -> str:
    """The trial's speed-up over its reference: ratio and its noise band."""
    s = trial["speed"]
    return f"{s['ratio']:.2f}x ({s['low']:.2f}-{s['high']:.2f})" if s else "-"


def _names(trial: dict) -> list[str]:
    """The distinct event names of a trial's trace."""
    return kinetoscope.load(trial["trace"]).names


def _events_named(trial: dict, names: tuple[str, ...]) -> int:
    """How many events of a trial's trace carry one of `names`."""
    trace = kinetoscope.load(trial["trace"])
    ids = trace.name_ids_matching(lambda n: n in names)
    return int(np.isin(trace.name_id, ids).sum())


def test_tune_pin_memory_trial_copies_from_pinned_memory(gpu, out, results):
    doc = _tune(out, "tune_pin", "dataloader", "--batch", "8", "--blur", "1",
                "--knob", "pin_memory=true")  # fmt: skip
    trial = _trial(doc, {"pin_memory": True})
    pinned = [n for n in _names(trial) if "Pinned" in n and "HtoD" in n]
    results.append({"check": "tune pin_memory", "run": "dataloader",
                    "result": f"speed {_speed(trial)}, copies {sorted(set(pinned))}"})  # fmt: skip
    if not gpu["rocm"]:  # CUPTI names a copy by its source memory: "Memcpy HtoD (Pinned -> Device)"
        assert pinned, "no HtoD copy from pinned memory in the pin_memory trial's trace"


def test_tune_cuda_graph_trial_replays_graphs(gpu, out, results):
    doc = _tune(out, "tune_graphs", "matmul_add", "--size", "64",
                "--knob", "compile=reduce-overhead")  # fmt: skip
    trial = _trial(doc, {"compile": "reduce-overhead"})
    launches = _events_named(trial, GRAPH_LAUNCHES)
    results.append({"check": "tune CUDA graphs", "run": "matmul_add 64",
                    "result": f"speed {_speed(trial)}, {launches} graph launches"})  # fmt: skip
    assert launches > 0, "compile=reduce-overhead recorded no graph launch"


def test_tune_bf16_and_tf32_trials_run(gpu, out, results):
    """On an fp32 baseline (--dtype fp32: the workload's GPU default is bf16, and a bf16
    baseline made both trials reruns of it on the first H100 run), the bf16 trial runs bf16
    and the TF32 trial moves the GEMMs off FFMA: fp32-gemm-tf32 fires on the baseline's
    trace and not on the TF32 trial's, whose GEMM kernels are other kernels."""
    doc = _tune(out, "tune_math", "matmul_add", "--size", "4096", "--dtype", "fp32",
                "--knob", "dtype=bf16", "--knob", "tf32=true")  # fmt: skip
    baseline = next(t for t in doc["trials"] if t["stage"] == "baseline")
    bf16 = _trial(doc, {"dtype": "bf16"})
    tf32 = _trial(doc, {"tf32": True})
    assert baseline["params"].get("dtype") == "fp32" and bf16["params"].get("dtype") == "bf16"
    fired = {
        name: {f.id for f in run_rules(kinetoscope.load(t["trace"])).findings}
        for name, t in (("baseline", baseline), ("tf32", tf32))
    }
    gemms = {name: _gemm_kernels(t) for name, t in (("baseline", baseline), ("tf32", tf32))}
    results.append({"check": "tune bf16 / TF32", "run": "matmul_add 4096 fp32",
                    "result": f"bf16 speed {_speed(bf16)}, tf32 speed {_speed(tf32)}, "
                    f"GEMM kernels fp32 {gemms['baseline']} -> TF32 {gemms['tf32']}, "
                    f"fp32-gemm-tf32 fired: baseline {'fp32-gemm-tf32' in fired['baseline']}, "
                    f"TF32 trial {'fp32-gemm-tf32' in fired['tf32']}"})  # fmt: skip
    if not gpu["rocm"]:  # TF32 tensor cores: NVIDIA Ampere and newer
        assert "fp32-gemm-tf32" in fired["baseline"], gemms["baseline"]
        assert "fp32-gemm-tf32" not in fired["tf32"], gemms["tf32"]
        assert gemms["tf32"] != gemms["baseline"]


def _gemm_kernels(trial: dict) -> list[str]:
    """The GEMM kernels of a trial's trace, as the kernel-name decoder classifies them."""
    from kinetoscope.analysis.kernel_names import decode

    return sorted(n for n in _names(trial) if decode(n).kind == "gemm")
