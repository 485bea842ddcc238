"""Dynamic loss scaling: keep FP16 gradients above the underflow line without overflowing.

Gradients of a loss are often below FP16's smallest subnormal (6e-8) and flush to zero.
Multiplying the loss by a scale S multiplies every gradient by S (chain rule), lifting them
into range; the optimizer step divides by S again. S is chosen dynamically:

    found_inf:  S <- S * backoff (0.5), tracker <- 0, and the step is skipped
    otherwise:  tracker <- tracker + 1; once tracker == growth_interval (2000):
                S <- S * growth (2.0) (kept only if finite in float32), tracker <- 0

so S hovers just below the largest scale that does not overflow. This is exactly
``torch._amp_update_scale_`` as used by ``torch.amp.GradScaler.update``.

Lab: 01_numerics
Paper: Micikevicius et al., ICLR 2018 (arXiv 2017), "Mixed Precision Training"
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["DynamicLossScaler", "update_scale"]


def update_scale(
    scale: float,
    growth_tracker: int,
    found_inf: bool,
    growth_factor: float = 2.0,
    backoff_factor: float = 0.5,
    growth_interval: int = 2000,
) -> tuple[float, int]:
    """Return the next ``(scale, growth_tracker)`` after a step with or without inf/NaN grads.

    The scale is stored in float32, like torch's: a product is rounded to float32, and a
    growth that would reach inf leaves the scale unchanged (the tracker still resets).
    """
    if found_inf:
        return float(np.float32(scale * backoff_factor)), 0
    successful = growth_tracker + 1
    if successful < growth_interval:
        return scale, successful
    with np.errstate(over="ignore"):  # a growth past float32's max is refused below
        grown = np.float32(scale * growth_factor)
    return (float(grown) if np.isfinite(grown) else scale), 0


@dataclass(slots=True)
class DynamicLossScaler:
    """A minimal GradScaler: scale the loss, unscale and check the grads, update the scale.

    loss = scaler.scale_loss(loss); ...backward...
    found_inf = scaler.unscale_(grads)
    if not found_inf: optimizer_step()
    scaler.update(found_inf)
    """

    scale: float = 2.0**16
    growth_factor: float = 2.0
    backoff_factor: float = 0.5
    growth_interval: int = 2000
    growth_tracker: int = 0

    def scale_loss(self, loss: np.ndarray) -> np.ndarray:
        """Multiply the loss by the current scale (the gradients follow by the chain rule)."""
        return loss * np.float32(self.scale)

    def unscale_(self, grads: list[np.ndarray]) -> bool:
        """Divide every gradient by the scale in place; return True if any is inf or NaN."""
        inv = np.float32(1.0 / self.scale)  # torch: reciprocal in float64, then float32
        found_inf = False
        for g in grads:
            g *= inv
            found_inf = found_inf or not bool(np.isfinite(g).all())
        return found_inf

    def update(self, found_inf: bool) -> None:
        """Advance the scale and growth tracker after one step (see :func:`update_scale`)."""
        self.scale, self.growth_tracker = update_scale(
            self.scale,
            self.growth_tracker,
            found_inf,
            self.growth_factor,
            self.backoff_factor,
            self.growth_interval,
        )
