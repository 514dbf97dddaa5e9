"""CPU training-loop traces recorded once per session for the precision suite.

The expectations in tests/expectations/ that carry `recorded = "NAME"` judge these
traces. Each loop is small (tens of ms per step on a 2-core machine) and recorded in
a fresh interpreter, so torch.compile really compiles inside its window:

- "adam_unfused": 4 Linear layers trained with Adam(foreach=False), one
  per-parameter update loop per step;
- "grad_accum": 4 micro-batches per step (backward each time, gradients
  accumulate), then one SGD step;
- "dataloader_slow": DataLoader(num_workers=0) over a dataset that sleeps 5 ms per
  item (batch 4: ~20 ms of data wait per step against well under 1 ms of compute);
- "compile_window": the first call of a torch.compile'd function inside the
  window (wait=0, warmup=0), so Dynamo and Inductor run in step #0;
- "gpt2_generate": a random 1-layer GPT-2 (no download) generating 4 tokens for 2
  prompts of 5 per step, with shapes: 1 prefill + 3 decode passes a step, the
  DynamicCache grown by torch.cat.
- "matmul_1024" / "matmul_16": `matmul_add`'s step (`torch.add(torch.matmul(x, w), b)`
  inside `record_function("matmul_add")`, fp32, one thread) at 1024 (2.1 GFLOP a step:
  tens of ms inside the BLAS call of aten::mm) and at 16 (8 kFLOP: a few us of math
  against the Python, dispatcher and profiler step around it).
- "attention_by_hand": softmax(q @ k^T / sqrt(d)) @ v written out in a module;
- "classifier_head": matmul with a weight -> softmax -> matmul with a weight (not attention).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import recorded_once

NAMES = (
    "adam_unfused",
    "grad_accum",
    "dataloader_slow",
    "compile_window",
    "gpt2_generate",
    "matmul_1024",
    "matmul_16",
    "attention_by_hand",
    "classifier_head",
)

SCRIPT = r"""
import json
import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile, schedule

from kinetoscope.capture.machine import LoadMeter

out = sys.argv[1]
torch.manual_seed(0)
torch.set_num_threads(1)


def record(name, body, steps=3, wait=1, warmup=1, shapes=False):
    # repeat=1: one cycle, so a later partial cycle cannot overwrite the file; the
    # machine's load over the run goes into the trace as `kinetoscope profile` stores it
    # (capture/machine.py), so the capture grade says when a loaded machine skewed it
    meter = LoadMeter()

    def export(p):
        path = f"{out}/{name}.json"
        p.export_chrome_trace(path)
        with open(path) as handle:
            data = json.load(handle)
        data["kinetoscope"] = {"machine_load": meter.reading()}
        with open(path, "w") as handle:
            json.dump(data, handle)

    with profile(
        activities=[ProfilerActivity.CPU],
        record_shapes=shapes,
        schedule=schedule(wait=wait, warmup=warmup, active=steps, repeat=1),
        on_trace_ready=export,
    ) as prof:
        for _ in range(wait + warmup + steps):
            body()
            prof.step()


def mlp():
    return torch.nn.Sequential(*[torch.nn.Linear(32, 32) for _ in range(4)])


x, y = torch.randn(16, 32), torch.randn(16, 32)

model = mlp()
adam = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=False)


def adam_step():
    adam.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    adam.step()


record("adam_unfused", adam_step)

accum_model = mlp()
sgd = torch.optim.SGD(accum_model.parameters(), lr=1e-3)


def accum_step():
    sgd.zero_grad()
    for xb, yb in zip(x.split(4), y.split(4)):
        torch.nn.functional.mse_loss(accum_model(xb), yb).backward()
    sgd.step()


record("grad_accum", accum_step)


class SlowDataset(torch.utils.data.Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        time.sleep(0.005)  # stands for decoding/augmenting one sample on the host
        return torch.randn(32), torch.randn(32)


loader = iter(torch.utils.data.DataLoader(SlowDataset(), batch_size=4, num_workers=0))
small = torch.nn.Linear(32, 32)


def data_step():
    xb, yb = next(loader)
    torch.nn.functional.mse_loss(small(xb), yb).backward()


record("dataloader_slow", data_step)


@torch.compile
def fn(a, b):
    return torch.relu(a @ b + 1.0).sum(dim=0)


a, b = torch.randn(32, 32), torch.randn(32, 32)
record("compile_window", lambda: fn(a, b), steps=3, wait=0, warmup=0)

import transformers  # the llm extra (installed by the README's and .ci/run's install line)

config = transformers.GPT2Config(
    n_layer=1, n_embd=32, n_head=2, vocab_size=100, n_positions=64, bos_token_id=0,
    eos_token_id=None,
)
gpt2 = transformers.GPT2LMHeadModel(config).eval()
prompt = torch.randint(1, 100, (2, 5))


def generate_step():
    with torch.no_grad():
        gpt2.generate(
            prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=4,
            min_new_tokens=4, do_sample=False, pad_token_id=0,
        )


record("gpt2_generate", generate_step, shapes=True)

def matmul_add(n):
    x, w, bias = torch.randn(n, n), torch.randn(n, n), torch.randn(n)

    def step():
        with torch.profiler.record_function("matmul_add"):
            torch.add(torch.matmul(x, w), bias)

    return step


record("matmul_1024", matmul_add(1024), warmup=3)
# 10 warm-up and 1,000 recorded steps: a few us per step, so one step in which the OS
# preempts aten::mm (tens of us added to "compute") would tip a 10-step window over 25%.
# 50 steps made a 10 ms window, and one preemption between two ops in a full test run
# on 2 cores left 8.14 ms of it with no op (a dead window: not judged, rightly); a
# time slice is milliseconds, so the window is ~40 ms here (21 ms at 500 steps), where
# one such hole is a fifth of it, under the dead-window line of half
record("matmul_16", matmul_add(16), steps=1000, warmup=10)
qkv = torch.nn.Linear(32, 96)
h = torch.randn(2, 16, 32)


def attention_by_hand():
    q, k, v = qkv(h).view(2, 16, 3, 4, 8).permute(2, 0, 3, 1, 4)
    return torch.matmul(torch.softmax(torch.matmul(q, k.transpose(-2, -1)) / 8**0.5, -1), v)


head_w, prototypes = torch.randn(32, 10), torch.randn(10, 32)


def classifier_head():
    return torch.matmul(torch.softmax(torch.matmul(h, head_w), -1), prototypes)


for name, body in (("attention_by_hand", attention_by_hand), ("classifier_head", classifier_head)):
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        for _ in range(3):
            body()
    prof.export_chrome_trace(f"{out}/{name}.json")
"""


@pytest.fixture(scope="session")
def precision_traces(tmp_path_factory) -> dict[str, Path]:
    """Recorded trace name -> path (the whole set is recorded once per session)."""
    pytest.importorskip("torch")

    def record(out: Path) -> None:
        subprocess.run(
            [sys.executable, "-c", SCRIPT, str(out)], check=True, capture_output=True, timeout=500
        )

    out = recorded_once(tmp_path_factory, "precision_traces", record)
    return {name: out / f"{name}.json" for name in NAMES}
