"""Gradient clipping by global norm and by value.

    total = ||(g_1, ..., g_n)||_p        (all parameters' grads as one vector)
    g_i  <- g_i * min(1, max_norm / (total + 1e-6))

Clipping the global norm keeps the update's direction and bounds its length, so one bad
batch (a loss spike) cannot throw the weights far; clipping by value changes direction.

Lab: 04_training_loop
Paper: Pascanu, Mikolov & Bengio 2013, "On the difficulty of training recurrent neural
networks"
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from minitorch.autograd import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_"]


def clip_grad_norm_(params: Iterable[Tensor], max_norm: float, norm_type: float = 2.0) -> float:
    """Scale all grads so their global ``norm_type``-norm is at most ``max_norm``.

    Returns the norm before clipping (inf/nan if a grad is not finite), as torch does.
    """
    grads = [(p, g) for p in params if (g := p.grad) is not None]
    if not grads:
        return 0.0
    if norm_type == float("inf"):
        total = max(float(np.abs(g).max(initial=0.0)) for _, g in grads)
    else:
        total = sum(float((np.abs(g.astype(np.float64)) ** norm_type).sum()) for _, g in grads)
        total = total ** (1.0 / norm_type)
    coef = min(max_norm / (total + 1e-6), 1.0)
    if coef < 1.0:
        for p, g in grads:
            p.grad = g * np.asarray(coef, dtype=g.dtype)  # a new array, never in place
    return total


def clip_grad_value_(params: Iterable[Tensor], clip_value: float) -> None:
    """Clamp every gradient element to [-clip_value, clip_value]."""
    for p in params:
        if p.grad is not None:
            p.grad = np.clip(p.grad, -clip_value, clip_value)
