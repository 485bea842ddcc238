"""Shared by the lab 04 graders: a quadratic problem, torch twins of minitorch models."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from minitorch.checks.core import CheckFailure, StudentError, assert_true, rng
from minitorch.nn import Linear, Module, ReLU, Tanh

__all__ = [
    "Quadratic",
    "as_float_array",
    "call",
    "quadratic",
    "torch_mlp",
    "unchanged_input",
]


@dataclass(frozen=True, slots=True)
class Quadratic:
    """f(w) = 1/2 w^T A w - b^T w on a matrix parameter; grad = A w - b (float64)."""

    a: np.ndarray  # (d, d) symmetric positive definite
    b: np.ndarray  # (d,)
    shape: tuple[int, int]

    def grad(self, w: np.ndarray) -> np.ndarray:
        return (self.a @ w.reshape(-1) - self.b).reshape(self.shape)


def quadratic(seed: int, shape: tuple[int, int] = (3, 4), spread: float = 30.0) -> Quadratic:
    """An ill-conditioned quadratic: curvatures from 1/spread to 1 along random directions."""
    g = rng(seed)
    d = shape[0] * shape[1]
    q, _ = np.linalg.qr(g.standard_normal((d, d)))
    curv = np.geomspace(1.0 / spread, 1.0, d)
    return Quadratic((q * curv) @ q.T, g.standard_normal(d), shape)


def as_float_array(x: Any, case: str, what: str) -> np.ndarray:
    """The student's array result as numpy, with a readable failure when it is not one."""
    if hasattr(x, "detach"):
        x = x.detach().numpy()
    if hasattr(x, "data") and not isinstance(x, np.ndarray):
        x = x.data
    try:
        return np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise CheckFailure(
            f"[{case}] {what}: expected a numpy array, got {type(x).__name__}"
        ) from None


def unchanged_input(before: np.ndarray, after: np.ndarray, case: str, name: str) -> None:
    assert_true(
        np.array_equal(before, after),
        f"[{case}] your function changed the `{name}` array in place. An optimizer must not "
        f"touch the gradient (torch keeps p.grad for logging and clipping): use g = {name} + "
        "..., which makes a new array, instead of +=.",
    )


def torch_mlp(model: Module) -> torch.nn.Sequential:
    """A float64 torch copy of a minitorch Linear/ReLU/Tanh stack with the same weights."""
    layers: list[torch.nn.Module] = []
    for m in model:  # a Sequential iterates its modules
        if isinstance(m, Linear):
            t = torch.nn.Linear(m.in_features, m.out_features, bias=m.bias is not None)
            with torch.no_grad():
                t.weight.copy_(torch.from_numpy(m.weight.data.astype(np.float64)))
                if m.bias is not None:
                    t.bias.copy_(torch.from_numpy(m.bias.data.astype(np.float64)))
            layers.append(t.double())
        elif isinstance(m, (ReLU, Tanh)):
            layers.append(torch.nn.ReLU() if isinstance(m, ReLU) else torch.nn.Tanh())
        else:
            raise TypeError(f"no torch twin for {type(m).__name__}")
    return torch.nn.Sequential(*layers)


def call(student: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call the (guarded) student function; a TypeError about arguments gets a clear message."""
    try:
        return student(*args, **kwargs)
    except StudentError as exc:
        if isinstance(exc.__cause__, TypeError) and "argument" in str(exc.__cause__):
            raise CheckFailure(
                f"{exc} — keep the signature of the exercise cell (names and keywords)."
            ) from None
        raise


def torch_trajectory(
    make_opt: Callable[[list[torch.nn.Parameter]], torch.optim.Optimizer],
    problem: Quadratic,
    w0: np.ndarray,
    steps: int,
) -> list[np.ndarray]:
    """Run a torch optimizer on ``problem`` from ``w0``; return the weights after each step."""
    w = torch.nn.Parameter(torch.from_numpy(w0.copy()))
    opt = make_opt([w])
    out = []
    for _ in range(steps):
        w.grad = torch.from_numpy(problem.grad(w.detach().numpy()))
        opt.step()
        out.append(w.detach().numpy().copy())
    return out
