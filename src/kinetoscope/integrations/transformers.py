"""`KinetoscopeCallback` for the Hugging Face `Trainer`.

    trainer = Trainer(model=model, args=args, train_dataset=data,
                      callbacks=[KinetoscopeCallback(out="traces/run")])

Steps are the Trainer's optimizer steps (`on_step_end`), profiled with the
series' schedule (wait 1, warm-up 1, active 3, one cycle by default) on rank 0
only unless `ranks` says otherwise. After each cycle the verdict line is
printed and logged (the `transformers` logger, and the run's `log_history`);
`KinetoscopeCallback.attach(trainer, ...)` also sends the cycle's numbers
through `Trainer.log`, so TensorBoard, W&B or whatever `report_to` names
receive them.
"""

from __future__ import annotations

from transformers import TrainerCallback
from transformers.utils import logging

from .cycle import CycleResult
from .stepper import ProfilingCallback

logger = logging.get_logger("transformers.trainer")


class KinetoscopeCallback(ProfilingCallback, TrainerCallback):
    """See the module's docstring; the arguments are `ProfilingCallback`'s."""

    trainer = None  # set by `attach`: then each cycle's numbers go through Trainer.log

    @classmethod
    def attach(cls, trainer, **options) -> KinetoscopeCallback:
        """Add a callback to `trainer` that also logs each cycle through `trainer.log`."""
        callback = cls(**options)
        callback.trainer = trainer
        trainer.add_callback(callback)
        return callback

    def on_train_begin(self, args, state, control, **kwargs):
        self.steps.start(args.process_index)

    def on_step_end(self, args, state, control, **kwargs):
        self._log(state, self.steps.step())

    def on_train_end(self, args, state, control, **kwargs):
        self._log(state, self.steps.stop())

    def _log(self, state, results: list[CycleResult]) -> None:
        for result in results:
            self.results.append(result)
            if self.trainer is not None:
                self.trainer.log(result.numbers)  # log_history and every report_to callback
            else:
                state.log_history.append({**result.numbers, "step": state.global_step})

    def echo(self, line: str) -> None:
        print(line, flush=True)
        logger.info(line)
