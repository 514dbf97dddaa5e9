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

import os
from collections.abc import Iterable

from transformers import TrainerCallback
from transformers.utils import logging

from .cycle import CycleResult
from .stepper import ProfiledSteps

logger = logging.get_logger("transformers.trainer")


class KinetoscopeCallback(TrainerCallback):
    def __init__(
        self,
        out: str | os.PathLike = "traces/run",
        wait: int = 1,
        warmup: int = 1,
        active: int = 3,
        repeat: int = 1,
        explain: bool = True,
        expect: Iterable[str] | str | None = None,
        on_fail: str = "warn",
        ranks: Iterable[int] = (0,),
        **profile_options,
    ) -> None:
        """`profile_options` go to `kinetoscope.profile` (`record_shapes`,
        `profile_memory`, `with_stack`, `gzip`, `device`, ...)."""
        self.steps = ProfiledSteps(
            out,
            (wait, warmup, active, repeat),
            explain=explain,
            expect=expect,
            on_fail=on_fail,
            ranks=ranks,
            echo=self._echo,
            **profile_options,
        )
        self.trainer = None
        self.results: list[CycleResult] = []

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

    @staticmethod
    def _echo(line: str) -> None:
        print(line, flush=True)
        logger.info(line)
