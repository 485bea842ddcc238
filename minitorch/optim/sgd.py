"""Stochastic gradient descent with momentum, Nesterov momentum and L2 weight decay.

Exactly torch.optim.SGD's update, with g = grad + wd * w:

    b <- g                              (first step)
    b <- mu * b + (1 - dampening) * g   (later steps)
    d  = g + mu * b   if nesterov else   b
    w <- w - lr * d

Nesterov evaluates the momentum step "ahead": the update uses the gradient plus the
velocity it is about to add, which damps oscillation on ill-conditioned problems.

Lab: 04_training_loop
Paper: Sutskever, Martens, Dahl & Hinton 2013, "On the importance of initialization and
momentum in deep learning"
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from minitorch.autograd import Tensor
from minitorch.optim.optimizer import Optimizer

__all__ = ["SGD"]


class SGD(Optimizer):
    """SGD; ``momentum=0`` is plain gradient descent."""

    def __init__(
        self,
        params: Iterable[Tensor],
        lr: float,
        momentum: float = 0.0,
        dampening: float = 0.0,
        weight_decay: float = 0.0,
        nesterov: bool = False,
    ) -> None:
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum needs momentum > 0 and zero dampening")
        super().__init__(params, lr)
        self.momentum, self.dampening = momentum, dampening
        self.weight_decay, self.nesterov = weight_decay, nesterov

    def update(self, w: np.ndarray, g: np.ndarray, state: dict[str, Any]) -> None:
        if self.weight_decay:
            g = g + self.weight_decay * w
        if self.momentum:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = np.array(g, copy=True)
            else:
                buf *= self.momentum
                buf += (1 - self.dampening) * g
            g = g + self.momentum * buf if self.nesterov else buf
        w -= self.lr * g  # in place: the parameter keeps its array
