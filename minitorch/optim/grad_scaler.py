"""Dynamic loss scaling for FP16 training (torch.amp.GradScaler's protocol).

FP16 gradients below 2^-24 flush to zero. Multiplying the loss by a scale S multiplies
every gradient by S (backward is linear), lifting them into range; before the optimizer
step the FP32 grads are divided by S again. S adapts:

    any grad inf/nan  ->  skip this step, S <- S * backoff     (overflow: S is too big)
    growth_interval clean steps in a row  ->  S <- S * growth  (try a bigger S)

    scaler.scale(loss).backward(); scaler.step(opt); scaler.update()

Lab: 04_training_loop
Paper: Micikevicius et al., ICLR 2018 (arXiv 2017), "Mixed Precision Training"
"""

from __future__ import annotations

import numpy as np

from minitorch.autograd import Tensor
from minitorch.optim.optimizer import Optimizer

__all__ = ["GradScaler"]


class GradScaler:
    """Scale the loss, unscale and check the grads, skip bad steps, adapt the scale."""

    def __init__(
        self,
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
    ) -> None:
        self.scale_value = init_scale
        self.growth_factor, self.backoff_factor = growth_factor, backoff_factor
        self.growth_interval = growth_interval
        self.growth_tracker = 0
        self.found_inf = False
        self._unscaled = False
        self.skipped_steps = 0

    def scale(self, loss: Tensor) -> Tensor:
        """loss * S, so backward produces grads * S."""
        return loss * self.scale_value

    def unscale_(self, optimizer: Optimizer) -> bool:
        """Divide the grads by S (once per step); return whether any is inf or nan."""
        if self._unscaled:
            return self.found_inf
        inv = 1.0 / self.scale_value
        self.found_inf = False
        for p in optimizer.params:
            if p.grad is not None:
                p.grad = p.grad * np.asarray(inv, dtype=p.grad.dtype)
                self.found_inf |= not bool(np.isfinite(p.grad).all())
        self._unscaled = True
        return self.found_inf

    def step(self, optimizer: Optimizer) -> bool:
        """Unscale if needed, then step unless a grad overflowed; return whether it stepped."""
        if self.unscale_(optimizer):
            self.skipped_steps += 1
            return False
        optimizer.step()
        return True

    def update(self) -> float:
        """Adapt S after this step's overflow check (lab 01's update rule); return the new S."""
        from minitorch.numerics.loss_scaling import update_scale

        self.scale_value, self.growth_tracker = update_scale(
            self.scale_value,
            self.growth_tracker,
            self.found_inf,
            growth_factor=self.growth_factor,
            backoff_factor=self.backoff_factor,
            growth_interval=self.growth_interval,
        )
        self._unscaled = False
        self.found_inf = False
        return self.scale_value
