"""Run one op in minitorch and in torch (float64) and compare forward and every input grad.

    check_op(lambda a, b: a * b, lambda a, b: a * b, rng.standard_normal((2, 3)), np.ones(3))

Both sides receive fresh leaf tensors built from the same arrays; the upstream gradient is
a fixed random array of the output's shape, so the whole vector-Jacobian product is tested
(not just the gradient of a sum).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from minitorch.autograd import Tensor

__all__ = ["check_op", "to_torch"]


def to_torch(a: np.ndarray, requires_grad: bool = True) -> torch.Tensor:
    t = torch.from_numpy(np.array(a, dtype=np.float64))
    return t.requires_grad_(requires_grad)


def _assert_close(got: np.ndarray, want: np.ndarray, what: str, atol: float, rtol: float) -> None:
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != torch {want.shape}"
    if got.size:
        err = np.abs(got - want)
        ok = np.all(err <= atol + rtol * np.abs(want)) or np.array_equal(got, want, equal_nan=True)
        assert ok, f"{what}: max abs error {np.nanmax(err):.3g} (atol {atol}, rtol {rtol})"


def check_op(
    ours: Callable[..., Tensor],
    theirs: Callable[..., torch.Tensor],
    *arrays: np.ndarray,
    grad_of: Sequence[bool] | None = None,
    atol: float = 1e-9,
    rtol: float = 1e-7,
    seed: int = 0,
) -> tuple[Tensor, torch.Tensor]:
    """Compare ``ours(*tensors)`` with ``theirs(*torch_tensors)``: output, then input grads.

    ``grad_of[i]`` False makes input i a constant on both sides.
    """
    grad_of = list(grad_of) if grad_of is not None else [True] * len(arrays)
    xs = [np.array(a, dtype=np.float64) for a in arrays]
    mt = [Tensor(x.copy(), requires_grad=r) for x, r in zip(xs, grad_of, strict=True)]
    tt = [to_torch(x, r) for x, r in zip(xs, grad_of, strict=True)]
    out, ref = ours(*mt), theirs(*tt)
    _assert_close(out.data, ref.detach().numpy(), "forward", atol, rtol)
    if not any(grad_of):
        return out, ref
    g = np.random.default_rng(seed).standard_normal(ref.shape)
    out.backward(g)
    ref.backward(torch.from_numpy(g))
    for i, (m, t) in enumerate(zip(mt, tt, strict=True)):
        if grad_of[i]:
            want = t.grad.numpy() if t.grad is not None else np.zeros(t.shape)
            got = m.grad if m.grad is not None else np.zeros(m.shape)
            _assert_close(got, want, f"grad of input {i}", atol, rtol)
    return out, ref
