"""Ground truth for backward rules: torch autograd in float64, on numpy arrays or floats.

* :func:`torch_vjp`: run a torch function on float64 leaves made from numpy arrays and return
  its output and the vector-Jacobian product with a given upstream gradient.
* :func:`torch_grad`: value and gradient of a scalar function of a few floats.
* :data:`ENGINE`: the engine's entry points, blocked in every exercise that writes a rule.
* :func:`out_shape`: the output length of a window sweep (conv, pooling).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

__all__ = ["ENGINE", "out_shape", "torch_grad", "torch_vjp"]

# an exercise that writes a rule on numpy arrays may not run the engine's backward pass
ENGINE = (
    "minitorch.autograd.engine:backward",
    "minitorch.autograd.gradcheck:numerical_grad",
    "minitorch.autograd.gradcheck:gradcheck",
)


def torch_vjp(
    fn: Callable[..., torch.Tensor], arrays: Sequence[np.ndarray], g: np.ndarray | None = None
) -> tuple[np.ndarray, list[np.ndarray]]:
    """Run ``fn`` on float64 leaves made from ``arrays``; return (output, grads given g).

    Without ``g`` a scalar output is differentiated (seed 1). Inputs the output does not
    touch get zero gradients (as in the engine).
    """
    leaves = [torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=True) for a in arrays]
    out = fn(*leaves)
    seed = torch.ones_like(out) if g is None else torch.tensor(g, dtype=torch.float64)
    out.backward(seed)
    grads = [(t.grad if t.grad is not None else torch.zeros_like(t)).numpy() for t in leaves]
    return out.detach().numpy(), grads


def torch_grad(fn: Callable[..., torch.Tensor], *xs: float) -> tuple[float, np.ndarray]:
    """Value and gradient of a scalar function of floats: (f(xs), [df/dx_i]) in float64."""
    leaves = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in xs]
    out = fn(*leaves)
    grads = torch.autograd.grad(out, leaves, allow_unused=True)
    return out.item(), np.array([0.0 if g is None else g.item() for g in grads])


def out_shape(size: int, k: int, stride: int, pad: int) -> int:
    """Output length of a window sweep: floor((size + 2 pad - k) / stride) + 1."""
    return (size + 2 * pad - k) // stride + 1
