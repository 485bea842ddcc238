"""Optimizer trajectories: a student's update rule against a torch optimizer, step by step.

Both sides descend the same ill-conditioned quadratic from the same start, each computing
the gradient at its *own* weights, so an error compounds as it would in training. Torch's
side is a real ``torch.optim`` optimizer on one float64 parameter; the student's side is a
step function the grader wraps (it carries the optimizer state between calls).

    problem = quadratic(rng(20))
    w0 = rng(120).standard_normal(problem.shape)
    want = torch_trajectory(lambda ps: torch.optim.SGD(ps, lr=0.1), problem, w0, 100)
    worst = follow(step, problem, w0, want, name="plain SGD", hint="w <- w - lr * g")
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from a2s.checks.compare import unchanged
from a2s.checks.core import assert_close

__all__ = ["Quadratic", "Rule", "follow", "quadratic", "rule_trajectory", "torch_trajectory"]

# a modelled update rule, right or wrong: (w, g, state, t) -> new w, ``state`` its own dict
Rule = Callable[[np.ndarray, np.ndarray, dict, int], np.ndarray]


@dataclass(frozen=True, slots=True)
class Quadratic:
    """f(w) = 1/2 w^T A w - b^T w on a matrix parameter; grad = A w - b (float64)."""

    a: np.ndarray  # (d, d) symmetric positive definite
    b: np.ndarray  # (d,)
    shape: tuple[int, int]

    def grad(self, w: np.ndarray) -> np.ndarray:
        return (self.a @ w.reshape(-1) - self.b).reshape(self.shape)


def quadratic(
    g: np.random.Generator, shape: tuple[int, int] = (3, 4), spread: float = 30.0
) -> Quadratic:
    """An ill-conditioned quadratic: curvatures from 1/spread to 1 along random directions."""
    d = shape[0] * shape[1]
    q, _ = np.linalg.qr(g.standard_normal((d, d)))
    curv = np.geomspace(1.0 / spread, 1.0, d)
    return Quadratic((q * curv) @ q.T, g.standard_normal(d), shape)


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


def rule_trajectory(rule: Rule, problem: Quadratic, w0: np.ndarray, steps: int) -> list[np.ndarray]:
    """The weights after each of ``steps`` steps of a numpy ``rule`` (a modelled mistake)."""
    w, out = w0.copy(), []
    state: dict[str, np.ndarray] = {}
    for t in range(1, steps + 1):
        w = rule(w, problem.grad(w), state, t)
        out.append(w)
    return out


def _chooser(
    mistakes: Sequence[tuple[str, Rule]], problem: Quadratic, w0: np.ndarray, t: int, rule: str
) -> Callable[[np.ndarray, np.ndarray], str]:
    """A hint for a mismatch at step ``t``: the message of the modelled mistake whose own
    trajectory reaches the learner's weights at that step, else the configuration's rule."""

    def hint(got: np.ndarray, want: np.ndarray) -> str:
        for message, wrong in mistakes:
            with np.errstate(all="ignore"):
                theirs = rule_trajectory(wrong, problem, w0, t)[-1]
                if got.shape == theirs.shape and np.allclose(got, theirs, rtol=1e-6, atol=1e-6):
                    return message
        return rule

    return hint


def _in_place(case: str) -> str:
    return (
        f"[{case}] your function changed the `grad` array in place. An optimizer must not "
        "touch the gradient (torch keeps p.grad for logging and clipping): use g = grad + "
        "..., which makes a new array, instead of +=."
    )


def follow(
    step: Callable[[np.ndarray, np.ndarray, int, str], np.ndarray],
    problem: Quadratic,
    w0: np.ndarray,
    want: list[np.ndarray],
    *,
    name: str,
    hint: str,
    mistakes: Sequence[tuple[str, Rule]] = (),
) -> float:
    """Drive ``step(w, grad, t, case) -> new w`` from ``w0``; compare every step with ``want``.

    ``t`` counts from 1. The gradient handed to ``step`` must come back unmodified. On the
    first step that differs, a mistake's message is shown only if that modelled rule, run
    from ``w0``, gives the learner's weights at that step; otherwise ``hint`` (the rule the
    configuration checks). Returns the largest deviation from torch over the trajectory.
    """
    w, worst = w0.copy(), 0.0
    for t in range(1, len(want) + 1):
        g = problem.grad(w)
        g_before = g.copy()
        case = f"{name}, step {t}" + (" (the first step)" if t == 1 else "")
        w = step(w.copy(), g, t, case)
        unchanged(g_before, g, _in_place(case))
        chosen = _chooser(mistakes, problem, w0, t, hint)
        err = assert_close(w, want[t - 1], case=case, rtol=1e-6, atol=1e-6, hint=chosen)
        worst = max(worst, err)
    return worst
