"""Learning-rate schedule: linear warmup, then cosine decay to a floor.

    lr(s) = base * (s + 1) / warmup                          for s < warmup
    lr(s) = floor + (base - floor) * (1 + cos(pi * p)) / 2   p = (s - warmup) / (total - warmup)

Warmup keeps the first updates small while Adam's second-moment estimate is still noisy;
cosine decay spends most steps near the base rate and anneals smoothly at the end. After
``total`` steps the rate stays at ``floor``.

Lab: 04_training_loop
Paper: Loshchilov & Hutter 2017, "SGDR: Stochastic Gradient Descent with Warm Restarts";
Goyal et al. 2017, "Accurate, Large Minibatch SGD" (warmup)
"""

from __future__ import annotations

import math

from minitorch.optim.optimizer import Optimizer

__all__ = ["WarmupCosine", "warmup_cosine"]


def warmup_cosine(
    step: int, base_lr: float, warmup_steps: int, total_steps: int, min_lr: float = 0.0
) -> float:
    """The learning rate at ``step`` (0-based) of a warmup + cosine schedule."""
    if step < warmup_steps:
        return base_lr * (step + 1) / warmup_steps
    span = max(total_steps - warmup_steps, 1)
    progress = min((step - warmup_steps) / span, 1.0)
    return min_lr + (base_lr - min_lr) * 0.5 * (1.0 + math.cos(math.pi * progress))


class WarmupCosine:
    """Drive ``optimizer.lr`` by :func:`warmup_cosine`; call :meth:`step` once per step."""

    def __init__(
        self, optimizer: Optimizer, warmup_steps: int, total_steps: int, min_lr: float = 0.0
    ) -> None:
        self.optimizer, self.base_lr = optimizer, optimizer.lr
        self.warmup_steps, self.total_steps, self.min_lr = warmup_steps, total_steps, min_lr
        self.last_step = 0
        optimizer.lr = self.lr_at(0)

    def lr_at(self, step: int) -> float:
        return warmup_cosine(step, self.base_lr, self.warmup_steps, self.total_steps, self.min_lr)

    def step(self) -> float:
        """Advance one step and set the optimizer's learning rate for the next update."""
        self.last_step += 1
        self.optimizer.lr = self.lr_at(self.last_step)
        return self.optimizer.lr
