"""Grader of exercise 33.4: the distillation loss and its gradient.

``distill_loss(zs, zt, targets, T, alpha)`` returns ``(loss, grad)``: the mean over positions
whose target is not ``IGNORE`` (-1) of ``alpha T^2 KL(p_t^T || p_s^T) + (1 - alpha) CE(zs, y)``,
``p^T = softmax(z / T)``, and its gradient in ``zs`` (zero on ignored rows). The truth is a
loop over the rows with ``math`` (``_truth.distill_loop``); the gradient is what shows the
``T^2`` at work (the soft term's gradient is ``alpha T (p_s^T - p_t^T)``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import Mistake
from a2s.checks.core import CheckFailure, grader
from a2s.checks.harness import run_apart
from a2s.checks.lab33._truth import distill_loop
from a2s.checks.table import Table

__all__ = ["DISTILL", "check_distill_loss"]

_BLOCKS = ("minitorch.model.distill", "minitorch.autograd:cross_entropy")
IGNORE = -1


def _truth(zs: np.ndarray, zt: np.ndarray, y: np.ndarray, t: float, a: float) -> Any:
    return distill_loop(zs, zt, y, t, a, IGNORE)


def _no_t2(zs: np.ndarray, zt: np.ndarray, y: np.ndarray, t: float, a: float) -> Any:
    (l1, g1), (l0, g0) = _truth(zs, zt, y, t, a), _truth(zs, zt, y, t, 0.0)
    soft_l, soft_g = l1 - (1 - a) * l0, g1 - (1 - a) * g0
    return (1 - a) * l0 + soft_l / t**2, (1 - a) * g0 + soft_g / t**2


def _t_hard(zs: np.ndarray, zt: np.ndarray, y: np.ndarray, t: float, a: float) -> Any:
    """The hard term at temperature T too."""
    (l1, g1), (l0, g0) = _truth(zs, zt, y, t, a), _truth(zs, zt, y, t, 0.0)
    soft_l, soft_g = l1 - (1 - a) * l0, g1 - (1 - a) * g0
    lt, gt = _truth(zs / t, zt, y, 1.0, 0.0)
    return soft_l + (1 - a) * lt, soft_g + (1 - a) * gt / t


def _teacher_at_one(zs: np.ndarray, zt: np.ndarray, y: np.ndarray, t: float, a: float) -> Any:
    return _truth(zs, zt * t, y, t, a)


def _all_rows(zs: np.ndarray, zt: np.ndarray, y: np.ndarray, t: float, a: float) -> Any:
    return _truth(zs, zt, np.where(y == IGNORE, 0, y), t, a)


def _over_n(zs: np.ndarray, zt: np.ndarray, y: np.ndarray, t: float, a: float) -> Any:
    """The mean over all N rows, the ignored ones adding 0."""
    loss, grad = _truth(zs, zt, y, t, a)
    share = float(np.sum(y != IGNORE)) / len(y)
    return loss * share, grad * share


def _no_chain(zs: np.ndarray, zt: np.ndarray, y: np.ndarray, t: float, a: float) -> Any:
    """The soft gradient alpha T^2 (p_s - p_t): the 1 / T of d(z / T) / dz forgotten."""
    (l1, g1), (_, g0) = _truth(zs, zt, y, t, a), _truth(zs, zt, y, t, 0.0)
    return l1, (1 - a) * g0 + (g1 - (1 - a) * g0) * t


def _kl_reversed(zs: np.ndarray, zt: np.ndarray, y: np.ndarray, t: float, a: float) -> Any:
    """KL(p_s || p_t) in the loss (the gradient written from the formula)."""
    (_, g1), (l0, _) = _truth(zs, zt, y, t, a), _truth(zs, zt, y, t, 0.0)
    rows = [i for i in range(len(y)) if int(y[i]) != IGNORE]
    ps, pt = _softmax(zs[rows] / t), _softmax(zt[rows] / t)
    kl = float((ps * (np.log(ps) - np.log(pt))).sum()) / len(rows)
    return (1 - a) * l0 + a * t * t * kl, g1


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


_MISTAKES = (
    Mistake(
        "Multiply the soft term by T^2: its gradient is (p_s - p_t) / T, so without T^2 it "
        "fades as T grows (Hinton et al. 2015).",
        answer=_no_t2,
    ),
    Mistake(
        "The hard term is the ordinary cross entropy of the student's logits at T = 1; only "
        "the soft term uses z / T.",
        answer=_t_hard,
    ),
    Mistake(
        "Soften the teacher as well: p_t = softmax(z_t / T), the same T as the student's.",
        answer=_teacher_at_one,
    ),
    Mistake(
        "Skip the positions whose target is IGNORE (-1): they are neither in the mean nor in "
        "the gradient (their rows are 0).",
        answer=_all_rows,
    ),
    Mistake(
        "The mean is over the R scored rows, not over all N: divide the loss and the gradient "
        "by the number of positions whose target is not IGNORE.",
        answer=_over_n,
    ),
    Mistake(
        "The chain rule through z / T: the soft term's gradient is alpha T (p_s - p_t) "
        "(T^2 times the 1 / T of d(z / T) / dz), not alpha T^2 (p_s - p_t).",
        answer=_no_chain,
    ),
    Mistake(
        "The KL runs from the teacher: KL(p_t || p_s) = sum p_t (log p_t - log p_s), the "
        "teacher's probabilities weighting the sum.",
        answer=_kl_reversed,
    ),
)


def _read(got: Any, label: str) -> tuple[float, np.ndarray]:
    if not (isinstance(got, (tuple, list)) and len(got) == 2):
        raise CheckFailure(f"[{label}] return the pair (loss, grad), got {type(got).__name__}.")
    try:
        return float(got[0]), np.asarray(got[1], dtype=np.float64)
    except (TypeError, ValueError):
        raise CheckFailure(f"[{label}] loss is one number and grad an (N, V) array.") from None


def _same(got: tuple[float, np.ndarray], want: tuple[float, np.ndarray]) -> bool:
    (lg, gg), (lw, gw) = got, want
    return (
        gg.shape == gw.shape
        and bool(np.isclose(lg, lw, rtol=1e-7, atol=1e-10))
        and bool(np.allclose(gg, gw, rtol=1e-6, atol=1e-9))
    )


def _message(case: Any, got: Any, want: Any, hint: str) -> str:
    (lg, gg), (lw, gw) = got, want
    if gg.shape != gw.shape:
        return (
            f"[{case.label}] grad has shape {gg.shape}, expected {gw.shape} (one row per position)."
        )
    part = "the loss" if not np.isclose(lg, lw, rtol=1e-7, atol=1e-10) else "the gradient"
    return f"[{case.label}] {part} is wrong: loss {lg:.6g}, expected {lw:.6g}. {hint}"


def _case(g: np.random.Generator, n: int, v: int, t: float, a: float, drop: int) -> tuple:
    zs, zt = g.standard_normal((n, v)) * 2, g.standard_normal((n, v)) * 3
    y = g.integers(0, v, n)
    y[g.choice(n, drop, replace=False)] = IGNORE
    return zs, zt, y, t, a


def _draw(g: np.random.Generator, i: int) -> tuple[str, tuple[Any, ...]]:
    n, v = int(g.integers(2, 12)), int(g.integers(2, 20))
    t, a = float(g.choice([1.0, 2.0, 4.0, 0.5])), float(g.choice([0.0, 0.3, 0.5, 0.9, 1.0]))
    return f"N {n}, V {v}, T {t}, alpha {a}", _case(g, n, v, t, a, int(g.integers(0, n)))


def _draw_fresh(g: np.random.Generator, i: int) -> tuple[str, tuple[Any, ...]]:
    """As :func:`_draw`, with at least one ignored position: a mean over all N rows (or a
    lookup falling back on one) differs from the mean over the scored rows on every run."""
    n, v = int(g.integers(3, 12)), int(g.integers(2, 20))
    t, a = float(g.choice([1.0, 2.0, 4.0, 0.5])), float(g.choice([0.3, 0.5, 0.9, 1.0]))
    return f"N {n}, V {v}, T {t}, alpha {a}", _case(g, n, v, t, a, int(g.integers(1, n)))


_G = np.random.default_rng(3304)
DISTILL = Table(
    "33.4",
    truth=_truth,
    named=[
        ("N 4, V 5, T 2, alpha 0.5", _case(_G, 4, 5, 2.0, 0.5, 0)),
        ("T 4, alpha 1 (soft only)", _case(_G, 3, 6, 4.0, 1.0, 0)),
        ("ignored positions, T 2, alpha 0.5", _case(_G, 6, 4, 2.0, 0.5, 2)),
        ("T 1, alpha 0 (cross entropy alone)", _case(_G, 3, 7, 1.0, 0.0, 1)),
    ],
    draw=_draw,
    seeded=3,
    fresh=2,
    draw_fresh=_draw_fresh,
    mistakes=_MISTAKES,
    hint="loss = mean over scored rows of alpha T^2 KL(softmax(zt/T) || softmax(zs/T)) + "
    "(1 - alpha) CE(zs, y); grad = (alpha T (p_s^T - p_t^T) + (1 - alpha)(softmax(zs) - "
    "onehot(y))) / rows.",
    same=_same,
    read=_read,
    what="distill_loss",
    message=_message,
    # apart: the learner's function runs in a forked child; the case runner's frames stay here
    prepare=lambda f: lambda *args: run_apart(f, *args),
)


@grader("33.4", blocks=_BLOCKS)
def check_distill_loss(distill_loss: Callable[..., Any]) -> str:
    """Exercise 33.4: distill_loss(zs, zt, targets, T, alpha) -> (loss, grad)."""
    n = DISTILL.grade(distill_loss)
    return (
        f"{n} cases: loss and gradient equal a row-by-row loop; with T^2 the soft gradient "
        "keeps its size as T changes"
    )
