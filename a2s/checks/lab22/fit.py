"""Grader of exercise 22.3: the least-squares alpha-beta fit t = alpha + n * beta.

Ground truth is the 2x2 normal equations solved by Cramer's rule in a plain loop over the
points, on synthetic data (a known line plus noise, drawn here), never a timing. Library fits
(``numpy.polyfit``, ``numpy.linalg``, ``statistics.linear_regression``) are forbidden: the
exercise is to write the fit.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from a2s.checks.cases import Mistake
from a2s.checks.core import DEFAULT_FORBID, grader, rng
from a2s.checks.table import Table

__all__ = ["check_fit_alpha_beta"]


def _normal_equations(n: np.ndarray, t: np.ndarray) -> tuple[float, float]:
    s0 = s1 = s2 = y0 = y1 = 0.0
    for x, y in zip(n.tolist(), t.tolist(), strict=True):
        s0, s1, s2, y0, y1 = s0 + 1, s1 + x, s2 + x * x, y0 + y, y1 + x * y
    det = s0 * s2 - s1 * s1
    return (y0 * s2 - s1 * y1) / det, (s0 * y1 - s1 * y0) / det


def _through_origin(n: np.ndarray, t: np.ndarray) -> tuple[float, float]:
    return 0.0, float((n * t).sum() / (n * n).sum())


def _swapped(n: np.ndarray, t: np.ndarray) -> tuple[float, float]:
    a, b = _normal_equations(n, t)
    return b, a


def _endpoints(n: np.ndarray, t: np.ndarray) -> tuple[float, float]:
    i, j = int(np.argmin(n)), int(np.argmax(n))
    b = (t[j] - t[i]) / (n[j] - n[i])
    return float(t[i] - b * n[i]), float(b)


_MISTAKES = (
    Mistake(
        " You fitted a line through the origin: alpha is the intercept, fit it too.",
        answer=_through_origin,
    ),
    Mistake(
        " Return (alpha, beta): the intercept (seconds) first, the slope (s/byte) second.",
        answer=_swapped,
    ),
    Mistake(
        " You drew the line through the smallest and largest message only; least squares "
        "uses every point (beta = cov(n, t) / var(n)).",
        answer=_endpoints,
    ),
)


def _line(g: np.random.Generator, k: int, noise: float) -> tuple[np.ndarray, np.ndarray]:
    n = np.unique(np.round(2.0 ** g.uniform(0, 24, k)))
    if n.size < 2:
        n = np.array([1.0, 1024.0])
    alpha, beta = g.uniform(1e-6, 50e-6), 1 / g.uniform(1e8, 2e10)
    t = alpha + n * beta
    return n, t * (1 + noise * g.standard_normal(n.size))


def _named() -> list[tuple[str, tuple[np.ndarray, np.ndarray]]]:
    g = rng(22)
    return [
        ("two sizes: the line through them", (np.array([0.0, 1e6]), np.array([5e-6, 105e-6]))),
        ("an exact line, 8 sizes", _line(g, 8, 0.0)),
        ("noisy times (5 %), 12 sizes", _line(g, 12, 0.05)),
        (
            "a size measured twice",
            (np.array([64.0, 64, 4096, 1e6]), np.array([3e-6, 4e-6, 5e-6, 90e-6])),
        ),
    ]


def _same(got: Any, want: Any) -> bool:
    try:
        ga, gb = (float(v) for v in got)
    except (TypeError, ValueError):
        return False
    wa, wb = want
    scale = max(abs(wa), abs(wb) * 1e6, 1e-12)
    return abs(ga - wa) <= 1e-6 * scale + 1e-15 and abs(gb - wb) <= 1e-6 * abs(wb) + 1e-18


_FORBID = (
    *DEFAULT_FORBID,
    "numpy.linalg",
    "numpy:polyfit",
    "numpy.polynomial",
    "scipy",
    "statistics:linear_regression",  # the standard library's least-squares line
)


FIT = Table(
    "22.3",
    truth=_normal_equations,
    named=_named(),
    draw=lambda g, i: (f"random line {i}, {10 + i} sizes, 10 % noise", _line(g, 10 + i, 0.1)),
    fresh=3,
    mistakes=_MISTAKES,
    same=_same,
    what="fit_alpha_beta",
    message=(
        "[{label}] fit_alpha_beta returned {got!r}; least squares gives alpha = "
        "{want[0]:.4g} s, beta = {want[1]:.4g} s/B.{hint}"
    ),
)


@grader("22.3", blocks=("minitorch.comm.fit:fit_alpha_beta",), forbid=_FORBID)
def check_fit_alpha_beta(student: Any) -> str:
    k = FIT.grade(student)
    return f"{k} data sets match the closed-form least squares (to 1e-6 relative)"
