"""Grader of exercise 32.2: how often to checkpoint, from the save cost and the MTBF.

``checkpoint_interval(cost, mtbf)`` returns Daly's higher-order optimum of the compute time
between checkpoints: ``sqrt(2δM)·[1 + (1/3)·sqrt(δ/2M) + (1/9)·(δ/2M)] − δ`` for ``δ < 2M``
and ``M`` otherwise (Daly 2006). The truth is that closed form, written in :mod:`._truth`.
The cases span the regimes: a cheap save on a reliable machine (Young's first order is
close), a save that costs a sizeable part of the MTBF (it is not), the boundary ``δ = 2M``,
past it, and a free save.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from a2s.checks.cases import Mistake
from a2s.checks.core import CheckFailure, grader
from a2s.checks.lab32._truth import daly, young
from a2s.checks.table import Table
from a2s.checks.values import plain

__all__ = ["INTERVAL", "check_checkpoint_interval"]

_H, _MIN = 3600.0, 60.0

_NAMED = [
    ("a 5 min save, a 24 h MTBF", (5 * _MIN, 24 * _H)),
    ("a 1 min save, a 1 h MTBF", (_MIN, _H)),
    ("a 30 s save on 4,096 GPUs (MTBF 3 h)", (30.0, 3 * _H)),
    ("a 20 min save, a 1 h MTBF", (20 * _MIN, _H)),
    ("a save of exactly 2 MTBF", (2 * _H, _H)),
    ("a save longer than 2 MTBF", (3 * _H, _H)),
    ("a free save", (0.0, _H)),
]


def _draw(gen: Any, i: int) -> tuple:
    mtbf = float(gen.uniform(0.5, 48)) * _H
    cost = mtbf * float(10 ** gen.uniform(-5, 0.5))
    return (f"random cost {cost:.1f} s, MTBF {mtbf:.0f} s", (cost, mtbf))


def _uncapped(cost: float, mtbf: float) -> float:
    r = cost / (2.0 * mtbf)
    return young(cost, mtbf) * (1.0 + math.sqrt(r) / 3.0 + r / 9.0) - cost


_MISTAKES = (
    Mistake(
        " That is Young's first-order sqrt(2δM): Daly's higher-order terms and the − δ matter "
        "once δ is a sizeable part of M.",
        answer=lambda c, m: young(c, m) if c < 2 * m else float(m),
    ),
    Mistake(
        " Daly's bracket is the interval plus δ: subtract the save cost δ at the end.",
        answer=lambda c, m: _uncapped(c, m) + c if c < 2 * m else float(m),
    ),
    Mistake(
        " For δ >= 2M the series no longer holds: Daly's optimum is then M itself.",
        answer=_uncapped,
    ),
)


def _read(got: Any, label: str) -> float:
    try:
        return float(got)
    except (TypeError, ValueError):
        raise CheckFailure(
            f"[{label}] checkpoint_interval must return a number of seconds; got "
            f"{type(got).__name__}."
        ) from None


INTERVAL = Table(
    "32.2",
    truth=daly,
    named=_NAMED,
    draw=_draw,
    seeded=8,
    fresh=4,
    mistakes=_MISTAKES,
    hint=" τ = sqrt(2δM)·[1 + sqrt(δ/2M)/3 + (δ/2M)/9] − δ for δ < 2M, else M.",
    read=_read,
    same=lambda got, want: math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-9),
    what="checkpoint_interval",
    message="[{label}] checkpoint_interval returned {got!r} s, Daly's optimum is {want!r} s.{hint}",
)


@grader("32.2", blocks=("minitorch.elastic.interval", "a2s.checks.lab32._truth:daly"))
def check_checkpoint_interval(checkpoint_interval: Callable[[float, float], object]) -> str:
    """Exercise 32.2: Daly's optimum interval in every regime."""
    n = INTERVAL.grade(checkpoint_interval)
    got = _read(plain(checkpoint_interval(5 * _MIN, 24 * _H)), "δ = 5 min, M = 24 h")
    return f"{n} cases match Daly's closed form; δ = 5 min, M = 24 h: τ = {got / _MIN:.1f} min"
