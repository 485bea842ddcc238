"""The optimizer contract: hold parameters and per-parameter state, update ``p.data``.

An optimizer sees each parameter's ``.grad`` after backward and changes ``p.data`` in
place (parameters are the FP32 master weights, also under mixed precision). Updates run
outside the graph: they are arithmetic on numpy arrays, never recorded. Parameters whose
``grad`` is None (unused this step) are skipped, as in torch.

Lab: 04_training_loop
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from minitorch.autograd import Tensor

__all__ = ["Optimizer"]


class Optimizer:
    """Base class: ``step()`` applies :meth:`update` to every parameter that has a grad."""

    def __init__(self, params: Iterable[Tensor], lr: float) -> None:
        self.params: list[Tensor] = list(params)
        if not self.params:
            raise ValueError("optimizer got an empty parameter list")
        self.lr = lr
        self.state: list[dict[str, Any]] = [{} for _ in self.params]
        self.step_count = 0

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    def step(self) -> None:
        self.step_count += 1
        for p, state in zip(self.params, self.state, strict=True):
            if p.grad is not None:
                self.update(p.data, p.grad, state)

    def update(self, w: np.ndarray, g: np.ndarray, state: dict[str, Any]) -> None:
        """Change the weights ``w`` in place, given their gradient ``g``."""
        raise NotImplementedError
