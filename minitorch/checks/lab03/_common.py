"""Helpers shared by the lab 03 graders: torch float64 ground truth and array hygiene."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from minitorch.checks.core import CheckFailure, assert_close, assert_true

__all__ = ["ENGINE", "call_pure", "close", "looks_like", "out_shape", "torch_vjp"]

# every exercise writes a rule on numpy arrays: the engine's backward pass is off limits
ENGINE = (
    "minitorch.autograd.engine:backward",
    "minitorch.autograd.gradcheck:numerical_grad",
    "minitorch.autograd.gradcheck:gradcheck",
)


def torch_vjp(
    fn: Callable[..., torch.Tensor], arrays: Sequence[np.ndarray], g: np.ndarray | None = None
) -> tuple[np.ndarray, list[np.ndarray]]:
    """Run ``fn`` on float64 leaves made from ``arrays``; return (output, grads given g).

    Without ``g`` a scalar output is differentiated (seed 1). Inputs torch leaves untouched
    by the output get zero gradients (as in the engine).
    """
    leaves = [torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=True) for a in arrays]
    out = fn(*leaves)
    seed = torch.ones_like(out) if g is None else torch.tensor(g, dtype=torch.float64)
    out.backward(seed)
    grads = [(t.grad if t.grad is not None else torch.zeros_like(t)).numpy() for t in leaves]
    return out.detach().numpy(), grads


def call_pure(student: Callable[..., Any], *args: Any, case: str) -> Any:
    """Call the student with copies of the array arguments; fail if they modified them."""
    copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    result = student(*copies)
    for before, after in zip(args, copies, strict=True):
        if isinstance(before, np.ndarray):
            assert_true(
                np.array_equal(before, after, equal_nan=True),
                f"[{case}] your function modified one of its input arrays in place; the engine "
                "still needs them (another rule may read the same array): work on copies.",
            )
    return result


def close(
    got: Any, want: np.ndarray, *, case: str, what: str, hint: str = "", rtol: float = 1e-8
) -> float:
    """float64 comparison: rtol 1e-8, atol rtol/100 relative to the largest expected value."""
    scale = float(np.max(np.abs(want))) if np.size(want) else 1.0
    if isinstance(got, (tuple, list)):
        raise CheckFailure(f"[{case}] {what} is a {type(got).__name__}; return one array.")
    return assert_close(
        got, want, case=case, rtol=rtol, atol=rtol / 100 * max(scale, 1.0), what=what, hint=hint
    )


def looks_like(got: Any, candidate: np.ndarray) -> bool:
    """Whether ``got`` equals ``candidate`` (a known-wrong answer), to pick the hint."""
    a = np.asarray(got, dtype=np.float64)
    if a.shape != candidate.shape or not a.size:
        return False
    return bool(np.allclose(a, candidate, rtol=1e-6, atol=1e-9))


def out_shape(size: int, k: int, stride: int, pad: int) -> int:
    """Output length of a window sweep: floor((size + 2 pad - k) / stride) + 1."""
    return (size + 2 * pad - k) // stride + 1
