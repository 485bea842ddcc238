"""Grader of exercise 02.6: one SGD step of a scalar MLP on the logistic loss.

Step by step against a torch float64 twin of the same network (same initial weights,
``torch.optim.SGD``): the returned loss and every parameter after each of three steps. Then
60 steps on a seeded moons set must halve the loss and classify >= 80% of it correctly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from a2s.checks.cases import fresh
from a2s.checks.compare import number
from a2s.checks.core import assert_close, assert_true, fresh_rng, grader, plain
from a2s.checks.twins import ScalarMLPTwin
from minitorch.autograd.scalar_nn import MLP
from minitorch.data.toy2d import make_moons, signed

__all__ = ["check_train_step"]

ACCURACY = 0.8  # a correct step reaches 37 of 40 (92.5%) here: the margin is for rounding


def _loss(twin: ScalarMLPTwin, x: np.ndarray, y: np.ndarray) -> torch.Tensor:
    margin = torch.as_tensor(y) * twin.scores(x)
    return torch.log(1 + torch.exp(-margin)).mean()


def _flat(model: MLP, case: str) -> np.ndarray:
    return np.array([plain(p.data, what="p.data", case=case) for p in model.parameters()])


def _data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, list[list[float]], list[float]]:
    x, y = make_moons(n, noise=0.1, seed=seed)
    ys = signed(y)
    return x, ys, [[float(a), float(b)] for a, b in x], [float(v) for v in ys]


def _vs_torch(student: Callable[..., Any], seeds: tuple[int, int], steps: int, new: bool) -> int:
    """``steps`` steps of the student's train_step against torch.optim.SGD on a twin."""
    model, lr = MLP(2, [4, 4, 1], seed=seeds[0]), 0.5
    x, ys, xs, yl = _data(16, seed=seeds[1])
    twin = ScalarMLPTwin.of(model)
    opt = torch.optim.SGD(twin.parameters(), lr=lr)
    for step in range(steps):
        case = f"step {step + 1} of {steps}, MLP 2-4-4-1, 16 points, lr {lr}"
        case = fresh(case) if new else case
        before = _flat(model, case)
        opt.zero_grad()
        loss = _loss(twin, x, ys)
        loss.backward()
        opt.step()
        got = student(model, xs, yl, lr)
        got = number(got, case=case, message=f"[{case}] return the loss as a float, got {got!r}.")
        want = loss.item()
        hint = (
            "The loss is the *mean* over examples of log(1 + exp(-y * score)), before the update."
        )
        if np.isclose(got, want * len(xs)):
            hint = "You returned the *sum* of the example losses: divide by their number (mean)."
        assert_close(got, want, case=case, rtol=1e-9, atol=1e-12, what="returned loss", hint=hint)
        after, torch_after = _flat(model, case), twin.flat()
        step_taken = before - torch_after
        hint = "Update each parameter with p.data -= lr * p.grad, after loss.backward()."
        if np.allclose(after, before):
            hint = "The parameters did not change: update p.data -= lr * p.grad."
        elif np.allclose(after, before + step_taken):
            hint = "The parameters moved uphill: it is p.data -= lr * p.grad (minus: descend)."
        elif step > 0:
            hint = (
                "Step 1 matched but this one does not: set every p.grad = 0.0 before backward. "
                "backward *adds* into grad, so without zeroing you step on the sum of all past "
                "gradients (torch's optimizer.zero_grad())."
            )
        assert_close(
            after,
            torch_after,
            case=case,
            rtol=1e-9,
            atol=1e-12,
            what="parameters after the step (model.parameters() order)",
            hint=hint,
        )
    return len(model.parameters())


def _accuracy(model: MLP, x: np.ndarray, ys: np.ndarray) -> float:
    with torch.no_grad():
        return float(((ScalarMLPTwin.of(model).scores(x) > 0).numpy() == (ys > 0)).mean())


@grader("02.6", hand="trajectory")
def check_train_step(student) -> str:
    """Three steps against torch.optim.SGD, then 60 steps on moons: accuracy >= 80%."""
    n_params = _vs_torch(student, (5, 3), 3, new=False)
    new = fresh_rng("02.6")
    _vs_torch(student, (int(new.integers(1 << 30)), int(new.integers(1 << 30))), 2, new=True)
    model, lr, steps = MLP(2, [4, 4, 1], seed=0), 1.5, 60
    x, ys, xs, yl = _data(40, seed=0)
    losses = [float(plain(student(model, xs, yl, lr), what="loss")) for _ in range(steps)]
    acc = _accuracy(model, x, ys)
    assert_true(
        losses[-1] < 0.5 * losses[0],
        f"[moons, 40 points, MLP 2-4-4-1, lr {lr}] the loss went from {losses[0]:.3f} to "
        f"{losses[-1]:.3f} in {steps} steps; it should at least halve.",
    )
    assert_true(
        acc >= ACCURACY,
        f"[moons, 40 points] training accuracy {acc:.0%} after {steps} steps, expected >= "
        f"{ACCURACY:.0%} (a correct step reaches 37 of 40, 92.5%, here).",
    )
    return (
        f"3 steps = torch.optim.SGD on {n_params} parameters; moons: loss {losses[0]:.3f} -> "
        f"{losses[-1]:.3f}, accuracy {acc:.0%} in {steps} steps"
    )
