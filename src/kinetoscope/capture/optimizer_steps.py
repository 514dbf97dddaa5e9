"""Step boundaries at `optimizer.step()`, placed after the step's profiler range closes.

torch runs global optimizer post-step hooks *inside* the
`Optimizer.step#<Class>.step` range, so a `prof.step()` there would start
`ProfilerStep#N+1` inside the previous iteration's optimizer range and break the
nesting of every event around it. Instead, each optimizer class gets an outer
wrapper when an instance is built (via `Optimizer._patch_step_function`, which
`Optimizer.__init__` calls), and the wrapper marks the step once the original
`step()` has returned. Schedulers built later wrap that outer function too. A
`step()` that bypasses the wrapper still counts, through the post-step hook.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

_MISSING = object()


class OptimizerSteps:
    """Calls `on_step()` after every optimizer step while installed; `remove()` undoes it."""

    def __init__(self, torch, on_step: Callable[[], None]) -> None:
        from torch.optim.optimizer import register_optimizer_step_post_hook

        self.on_step = on_step
        self.depth = 0  # > 0 while inside a wrapped step()
        self.optimizer_cls = torch.optim.Optimizer
        self.original_patch = self.optimizer_cls.__dict__.get("_patch_step_function")
        self.wrapped: dict[type, object] = {}  # class -> its own `step` attribute before
        if self.original_patch is not None:
            original = self.original_patch

            def patch_step_function(optimizer) -> None:
                original(optimizer)
                self._wrap(type(optimizer))

            self.optimizer_cls._patch_step_function = patch_step_function
        self.hook = register_optimizer_step_post_hook(self._post_hook)

    def _wrap(self, cls: type) -> None:
        inner = cls.step
        if getattr(inner, "_kinetoscope_steps", None) is self:
            return
        self.wrapped.setdefault(cls, cls.__dict__.get("step", _MISSING))

        @functools.wraps(inner)
        def step(*args, **kwargs):
            self.depth += 1
            try:
                out = inner(*args, **kwargs)
            finally:
                self.depth -= 1
            if self.depth == 0:
                self.on_step()
            return out

        step.hooked = True  # torch's marker: do not wrap this again
        step._kinetoscope_steps = self
        cls.step = step

    def _post_hook(self, _optimizer, _args, _kwargs) -> None:
        if self.depth == 0:  # a step() that did not go through our wrapper
            self.on_step()

    def remove(self) -> None:
        self.hook.remove()
        if self.original_patch is not None:
            self.optimizer_cls._patch_step_function = self.original_patch
        for cls, own in self.wrapped.items():
            if own is _MISSING:
                del cls.step
            else:
                cls.step = own
