"""AdamW: Adam with weight decay decoupled from the gradient.

With step t, moments m, v and bias corrections, as in torch.optim.AdamW:

    w <- w * (1 - lr * wd)                       decay applied to the weights directly
    m <- beta1 * m + (1 - beta1) * g
    v <- beta2 * v + (1 - beta2) * g^2
    w <- w - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)

In Adam with L2 (decay added to g), the decay term is divided by sqrt(v) like the rest of
the gradient, so weights with large gradients are barely decayed; decoupling makes the
decay the same relative shrink for every weight.

Lab: 04_training_loop
Paper: Loshchilov & Hutter 2019, "Decoupled Weight Decay Regularization"; Kingma & Ba
2015, "Adam: A Method for Stochastic Optimization"
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from minitorch.autograd import Tensor
from minitorch.optim.optimizer import Optimizer

__all__ = ["AdamW"]


class AdamW(Optimizer):
    """AdamW with torch's defaults (lr 1e-3, betas (0.9, 0.999), eps 1e-8, wd 0.01)."""

    def __init__(
        self,
        params: Iterable[Tensor],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
    ) -> None:
        super().__init__(params, lr)
        self.betas, self.eps, self.weight_decay = betas, eps, weight_decay

    def update(self, w: np.ndarray, g: np.ndarray, state: dict[str, Any]) -> None:
        b1, b2 = self.betas
        if not state:
            state.update(step=0, exp_avg=np.zeros_like(w), exp_avg_sq=np.zeros_like(w))
        state["step"] += 1
        t, m, v = state["step"], state["exp_avg"], state["exp_avg_sq"]
        w *= 1 - self.lr * self.weight_decay
        m += (1 - b1) * (g - m)  # = b1 m + (1 - b1) g, torch's lerp form
        v *= b2
        v += (1 - b2) * g * g
        step_size = self.lr / (1 - b1**t)
        denom = np.sqrt(v) / math.sqrt(1 - b2**t) + self.eps
        w -= step_size * (m / denom)
