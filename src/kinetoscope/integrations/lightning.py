"""`KinetoscopeCallback` for Lightning (`lightning` or `pytorch_lightning`).

    trainer = L.Trainer(max_steps=100, callbacks=[KinetoscopeCallback(out="traces/run")])

A step is one `on_train_batch_end`, profiled with the series' schedule (wait 1,
warm-up 1, active 3, one cycle by default) on global rank 0 only unless `ranks`
says otherwise. After each cycle the verdict line is printed and the cycle's
numbers go to every logger of the Trainer (`log_metrics`), so TensorBoard, CSV
or W&B loggers receive them.
"""

from __future__ import annotations

from .cycle import CycleResult
from .stepper import ProfilingCallback

try:  # the unified package first; the standalone one is the same API
    from lightning.pytorch.callbacks import Callback
except ModuleNotFoundError:  # pragma: no cover - depends on what is installed
    from pytorch_lightning.callbacks import Callback


class KinetoscopeCallback(ProfilingCallback, Callback):
    """See the module's docstring; the arguments are `ProfilingCallback`'s."""

    def on_train_start(self, trainer, pl_module) -> None:
        self.steps.start(trainer.global_rank)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        self._log(trainer, self.steps.step())

    def on_train_end(self, trainer, pl_module) -> None:
        self._log(trainer, self.steps.stop())

    def on_exception(self, trainer, pl_module, exception) -> None:
        self.steps.stop(failed=True)

    def _log(self, trainer, results: list[CycleResult]) -> None:
        for result in results:
            self.results.append(result)
            for logger in trainer.loggers:
                logger.log_metrics(result.numbers, step=trainer.global_step)
