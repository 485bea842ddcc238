"""Numerical gradient checks: central differences against the autograd engine.

    df/dx_i ~ (f(x + eps e_i) - f(x - eps e_i)) / (2 eps)        error O(eps^2)

In float64 with eps = 1e-6 the truncation error (~eps^2) and the rounding error
(~1e-16 / eps) are both ~1e-10, so agreement to ~1e-6 relative is a strong check. A
non-scalar output y is reduced to L = sum(y * r) with a fixed random r, which tests the
whole Jacobian-vector product without one backward pass per output element.

Lab: 02_autograd_scalar (numerical_derivative), 03_autograd_tensor (gradcheck)
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from minitorch.autograd.tensor import Tensor

__all__ = ["gradcheck", "numerical_derivative", "numerical_grad"]


def numerical_derivative(f: Callable[..., float], *xs: float, eps: float = 1e-6) -> list[float]:
    """Central-difference partial derivatives of a scalar function of floats."""
    grads = []
    for i in range(len(xs)):
        up = [x + eps if j == i else x for j, x in enumerate(xs)]
        down = [x - eps if j == i else x for j, x in enumerate(xs)]
        grads.append((f(*up) - f(*down)) / (2 * eps))
    return grads


def numerical_grad(
    f: Callable[..., float], inputs: list[np.ndarray], eps: float = 1e-6
) -> list[np.ndarray]:
    """Central-difference gradient of scalar ``f(*inputs)`` w.r.t. every input element."""
    grads = []
    for x in inputs:
        gx = np.zeros_like(x, dtype=np.float64)
        for idx in np.ndindex(x.shape):
            old = x[idx]
            x[idx] = old + eps
            up = f(*inputs)
            x[idx] = old - eps
            down = f(*inputs)
            x[idx] = old
            gx[idx] = (up - down) / (2 * eps)
        grads.append(gx)
    return grads


def gradcheck(
    fn: Callable[..., Tensor],
    *inputs: np.ndarray,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    seed: int = 0,
) -> bool:
    """Check autograd's gradients of ``fn(*tensors)`` against central differences.

    Inputs are copied to float64. Returns True, or raises AssertionError naming the input
    and the largest mismatch.
    """
    xs = [np.array(x, dtype=np.float64) for x in inputs]
    tensors = [Tensor(x, requires_grad=True) for x in xs]
    out = fn(*tensors)
    r = np.random.default_rng(seed).standard_normal(out.shape)  # random projection of y
    (out * Tensor(r)).sum().backward()

    def loss(*arrays: np.ndarray) -> float:
        return float((fn(*[Tensor(a) for a in arrays]).data * r).sum())

    for i, (t, num) in enumerate(zip(tensors, numerical_grad(loss, xs, eps), strict=True)):
        ana = t.grad if t.grad is not None else np.zeros_like(num)
        err = np.abs(ana - num)
        if np.any(err > atol + rtol * np.abs(num)):
            j = np.unravel_index(np.argmax(err), err.shape)
            raise AssertionError(
                f"gradcheck: input {i} {t.shape}: max |analytic - numeric| = {err.max():.3g} at "
                f"{tuple(int(k) for k in j)} (analytic {ana[j]:.6g}, numeric {num[j]:.6g})"
            )
    return True
