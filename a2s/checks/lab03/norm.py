"""Grader of exercise 03.6: batch-norm backward in training mode, against torch autograd.

Besides matching ``F.batch_norm(training=True)`` in float64, the input gradient must
satisfy the two identities that the mean and variance terms produce, per channel:

    sum(dL/dx) = 0               (shifting x leaves y unchanged)
    sum(dL/dx * xhat) = 0        (scaling x leaves y unchanged)

A gradient without the mean-of-gradient terms breaks both, whatever the shapes.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch.nn.functional as F

from a2s.checks.cases import fresh
from a2s.checks.compare import call_pure, close, looks_like
from a2s.checks.core import CheckFailure, assert_true, fresh_rng, grader, rng
from a2s.checks.vjp import ENGINE, torch_vjp

__all__ = ["check_batch_norm_backward"]

_N = "minitorch.autograd.ops_norm"
# (label, x shape, eps, upstream gradient: "random" | "ones" | "xhat")
Case = tuple[str, tuple[int, ...], float, str]
_NAMED: list[Case] = [
    ("(N, C) = (4, 3)", (4, 3), 1e-5, "random"),
    ("a constant upstream gradient must vanish", (5, 2), 1e-5, "ones"),
    ("g = xhat must vanish (scaling x changes nothing)", (6, 3), 1e-5, "xhat"),
    ("(N, C, H, W): statistics over N, H and W", (2, 3, 4, 5), 1e-5, "random"),
    ("N = 2: the variance is biased (divide by m)", (2, 4), 1e-5, "random"),
    ("N = 1 with a 3x3 image", (1, 2, 3, 3), 1e-5, "random"),
    ("eps = 0.1 matters for a small variance", (8, 2), 0.1, "random"),
    ("one channel", (7, 1), 1e-5, "random"),
]
_MEAN_TERMS = (
    "The mean-of-gradient terms are missing: mu and var depend on every x of the channel, "
    "so dL/dx = gamma/(m sigma) * (m g - sum(g) - xhat * sum(g * xhat)), not g * gamma / sigma."
)
_VAR_TERM = (
    "The term through the variance is missing or wrong: subtract xhat * sum(g * xhat) "
    "(sums per channel, over every axis but 1)."
)
_AXES = (
    "Statistics are per channel (axis 1) over *every other* axis: (0,) for (N, C), (0, 2, 3) "
    "for (N, C, H, W); reduce with keepdims=True so they broadcast back."
)
_EPS = "eps belongs inside the square root of every 1/sigma: 1 / sqrt(var + eps)."
_GAMMA = "dL/dgamma = sum(g * xhat) per channel: shape (C,)."
_BETA = "dL/dbeta = sum(g) per channel: shape (C,)."
_BIASED = (
    "Training-mode batch norm normalizes with the biased variance (divide by m, np.var's "
    "default), not the unbiased one (m - 1) that goes into running_var."
)


def _reference_parts(
    x: np.ndarray, eps: float, axes: tuple[int, ...] | None = None, ddof: int = 0
) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    axes = (0, *range(2, x.ndim)) if axes is None else axes
    mu, var = x.mean(axis=axes, keepdims=True), x.var(axis=axes, keepdims=True, ddof=ddof)
    return (x - mu) / np.sqrt(var + eps), 1.0 / np.sqrt(var + eps), axes


def _full(
    dxhat: np.ndarray, xhat: np.ndarray, invstd: np.ndarray, axes: tuple[int, ...]
) -> np.ndarray:
    m = xhat.size // invstd.size
    s1, s2 = dxhat.sum(axis=axes, keepdims=True), (dxhat * xhat).sum(axis=axes, keepdims=True)
    return invstd / m * (m * dxhat - s1 - xhat * s2)


def _wrong_candidates(
    x: np.ndarray, gamma: np.ndarray, g: np.ndarray, eps: float
) -> dict[str, np.ndarray]:
    """Known-wrong input gradients, to name the mistake in the message."""
    _xhat, invstd, axes = _reference_parts(x, eps)
    dxhat = g * gamma.reshape((1, -1) + (1,) * (x.ndim - 2))
    m = x.size // x.shape[1]
    found = {
        _MEAN_TERMS: dxhat * invstd,
        _VAR_TERM: invstd / m * (m * dxhat - dxhat.sum(axis=axes, keepdims=True)),
        _EPS: _full(dxhat, *_reference_parts(x, 0.0)[:2], axes),
    }
    if m > 1:
        found[_BIASED] = _full(dxhat, *_reference_parts(x, eps, ddof=1)[:2], axes)
    if x.ndim > 2:
        found[_AXES] = _full(dxhat, *_reference_parts(x, eps, axes=(0,)))
    return found


def _invariants(gx: np.ndarray, want: np.ndarray, x: np.ndarray, eps: float, case: str) -> None:
    """sum(dx) = 0 exactly; sum(dx * xhat) = 0 up to a term of order eps / var (torch's)."""
    xhat, _, axes = _reference_parts(x, eps)
    scale = float(np.abs(want).sum()) + 1e-3
    checks = [
        ("sum(dL/dx)", gx.sum(axis=axes), np.zeros(x.shape[1]), _MEAN_TERMS),
        ("sum(dL/dx * xhat)", (gx * xhat).sum(axis=axes), (want * xhat).sum(axis=axes), _VAR_TERM),
    ]
    for name, value, target, hint in checks:
        assert_true(
            bool(np.all(np.abs(value - target) <= 1e-8 * scale)),
            f"[{case}] per channel, {name} should be {np.round(target, 6).tolist()} (0 up to "
            f"eps) but is {np.round(value, 6).tolist()}. {hint}",
        )


def _one(
    student: Callable[..., object], x: np.ndarray, g: np.ndarray, eps: float, case: str
) -> float:
    c = int(x.shape[1])
    gamma, beta = rng(c + len(case)).standard_normal(c) + 1.5, np.zeros(c)
    _, (wx, wgamma, wbeta) = torch_vjp(
        lambda t, w, b: F.batch_norm(t, None, None, w, b, training=True, eps=eps),
        [x, gamma, beta],
        g,
    )
    got = call_pure(student, x, gamma, g, eps, case=case)
    if not (isinstance(got, (tuple, list)) and len(got) == 3):
        raise CheckFailure(f"[{case}] return the triple (grad_x, grad_gamma, grad_beta).")
    gx, what = np.asarray(got[0]), f"grad_x {x.shape}"
    wrong = _wrong_candidates(x, gamma, g, eps)
    hint = next((h for h, cand in wrong.items() if looks_like(gx, cand)), "")
    if hint:  # a known mistake: name it
        close(gx, wx, case=case, what=what, hint=hint)
    if gx.shape == x.shape:
        _invariants(gx, wx, x, eps, case)
    err = close(gx, wx, case=case, what=what, hint=_AXES)
    err = max(err, close(got[1], wgamma, case=case, what="grad_gamma", hint=_GAMMA))
    return max(err, close(got[2], wbeta, case=case, what="grad_beta", hint=_BETA))


def _random_cases(gen: np.random.Generator, n: int, mark: Callable[[str], str] = str) -> list[Case]:
    cases = []
    for i in range(n):
        shape = tuple(int(v) for v in gen.integers(1, 5, int(gen.choice([2, 3, 4]))))
        if shape[0] * int(np.prod(shape[2:])) < 2:  # one value per channel has no variance
            shape = (shape[0] + 1, *shape[1:])
        cases.append((mark(f"random case {i}: x {shape}"), shape, 1e-5, "random"))
    return cases


@grader(
    "03.6",
    blocks=(
        f"{_N}:batch_norm",
        f"{_N}:batch_norm_backward",
        f"{_N}:_dx",
        f"{_N}:_normalize",
        f"{_N}:layer_norm",
        f"{_N}:layer_norm_backward",
        "minitorch.nn.norm:BatchNorm",
        *ENGINE,
    ),
    hand="parts",
)
def check_batch_norm_backward(batch_norm_backward: Callable[..., object]) -> str:
    """Exercise 03.6: training-mode batch-norm gradients for x, gamma and beta."""
    gen, worst = rng(306), 0.0
    cases = _NAMED + _random_cases(rng(316), 30) + _random_cases(fresh_rng("03.6"), 5, fresh)
    for case, shape, eps, kind in cases:
        x = gen.standard_normal(shape) * gen.uniform(0.5, 3) + gen.uniform(-5, 5)
        if kind == "random":
            g = gen.standard_normal(shape)
        else:
            g = np.ones(shape) if kind == "ones" else _reference_parts(x, eps)[0]
        worst = max(worst, _one(batch_norm_backward, x, g, eps, case))
    return (
        f"{len(cases)} cases (2-D and 4-D, N = 1, eps = 0.1; 5 fresh) match torch, max error "
        f"{worst:.1e}; sum(dx) = sum(dx * xhat) = 0 per channel"
    )
