"""`dataloader` (06): a training loop fed by a DataLoader whose items cost real CPU work.

Each item is an image synthesised on demand and preprocessed (a few blur passes,
normalisation, a flip), as an augmentation pipeline would; the model is a tiny
two-layer MLP trained with SGD. What it teaches: the data-bound case. With
`--num-workers 0` the main process builds every batch inside
`enumerate(DataLoader)#...__next__`, so a large share of each step is loading
and the device (or the training math on CPU) waits; with workers the batches are
prepared in parallel and `__next__` only hands over a finished one.
`--pin-memory` pins host buffers so copies to a GPU can be asynchronous;
`prefetch_factor` (batches each worker keeps ready, only with workers) is set by
`kinetoscope tune`. One iterator serves the whole run, so `persistent_workers`
(which keeps workers alive across iterators, i.e. epochs) could change nothing here.
`read_ms` adds a per-item read latency (a sleep, as reading from a disk or a
network store waits without using a core): loading that workers speed up by
waiting side by side even on a machine with no idle core.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

from ...errors import UsageError
from . import Context

NAME = "dataloader"
FOLDER = "06_dataloader"
CLASSES = 10
#: map-style length; batches are made on demand, so this only bounds how long the loop may run
LENGTH = 1 << 30


@dataclass(frozen=True)
class Params:
    batch: int = 32
    image: int = 32
    blur: int = 8
    hidden: int = 256
    num_workers: int = 0
    pin_memory: bool = False
    prefetch_factor: int = 2  # torch's default; used only when num_workers > 0
    read_ms: float = 0.0  # per-item read latency (sleep), as a disk or network read

    def __post_init__(self) -> None:
        # torch's DataLoader refuses a prefetch_factor without workers; say it in our terms
        if self.prefetch_factor != 2 and self.num_workers == 0:
            raise UsageError(
                f"dataloader --prefetch-factor {self.prefetch_factor} needs --num-workers >= 1 "
                "(only worker processes prefetch)"
            )
        if self.prefetch_factor < 1 or self.read_ms < 0:
            raise UsageError("dataloader --prefetch-factor must be >= 1 and --read-ms >= 0")


def tag(p: Params) -> str:
    pin = "_pin" if p.pin_memory else ""
    return f"w{p.num_workers}{pin}_b{p.batch}_i{p.image}_blur{p.blur}_h{p.hidden}"


def knobs(p: Params) -> list[str]:
    """Name parts for settings away from their defaults that `tag` does not show."""
    parts = [f"pf{p.prefetch_factor}"] if p.num_workers and p.prefetch_factor != 2 else []
    return parts + ([f"read{p.read_ms:g}ms"] if p.read_ms else [])


class SyntheticImages(Dataset):
    """Images made on demand, deterministic per index, preprocessed on the CPU."""

    def __init__(self, image: int, blur: int, read_ms: float = 0.0) -> None:
        self.image = image
        self.blur = blur
        self.read_s = read_ms / 1000

    def __len__(self) -> int:
        return LENGTH

    def __getitem__(self, index: int):
        if self.read_s:
            time.sleep(self.read_s)
        generator = torch.Generator().manual_seed(index)
        x = torch.rand(1, 3, self.image, self.image, generator=generator)
        for _ in range(self.blur):
            x = F.avg_pool2d(x, 3, stride=1, padding=1)
        x = (x - x.mean()) / (x.std() + 1e-6)
        if index % 2:
            x = x.flip(-1)
        return x[0], index % CLASSES


def build(p: Params, ctx: Context):
    loader = DataLoader(
        SyntheticImages(p.image, p.blur, p.read_ms),
        batch_size=p.batch,
        num_workers=p.num_workers,
        pin_memory=p.pin_memory,
        prefetch_factor=p.prefetch_factor if p.num_workers else None,
        drop_last=True,
    )
    batches = iter(loader)
    next(batches)  # wait for the workers to start, so their start-up is not profiled
    features = 3 * p.image * p.image
    model = torch.nn.Sequential(
        torch.nn.Flatten(),
        torch.nn.Linear(features, p.hidden),
        torch.nn.ReLU(),
        torch.nn.Linear(p.hidden, CLASSES),
    ).to(device=ctx.device, dtype=ctx.dtype)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    forward = ctx.compile(model)

    def step() -> None:
        images, labels = next(batches)
        with torch.profiler.record_function("train_step"):
            images = images.to(ctx.device, ctx.dtype, non_blocking=p.pin_memory)
            labels = labels.to(ctx.device, non_blocking=p.pin_memory)
            loss = F.cross_entropy(forward(images), labels)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()

    return step
