"""Grader of exercise 32.4: find the straggler from per-rank compute times.

``find_stragglers(compute, factor)`` takes ``compute[step][rank]`` (seconds of compute before
the all-reduce) and returns the sorted ranks whose median over the steps exceeds ``factor``
times the median of the *other* ranks' medians. The truth sorts to take medians
(:mod:`._truth`). The cases hold what a plausible wrong answer misses: one noisy step (a mean
flags it, a median does not), two ranks (a median over all ranks, itself included, is the
pair's mean), an even number of steps, a rank at exactly ``factor``, two stragglers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import Mistake
from a2s.checks.core import CheckFailure, grader
from a2s.checks.lab32._truth import median, slow_ranks
from a2s.checks.table import Table

__all__ = ["STRAGGLERS", "check_find_stragglers"]


def _steps(per_rank: list[float], n: int = 9, noise: float = 0.0, seed: int = 0) -> list:
    g = np.random.default_rng(seed)
    return [[float(c * (1 + noise * g.uniform(-1, 1))) for c in per_rank] for _ in range(n)]


def _spike(rows: list, step: int, rank: int, times: float) -> list:
    rows[step][rank] *= times
    return rows


_NAMED = [
    ("4 even ranks", (_steps([1.0, 1.0, 1.0, 1.0], noise=0.05), 1.5)),
    ("rank 2 at 2x", (_steps([1.0, 1.0, 2.0, 1.0], noise=0.05), 1.5)),
    ("2 ranks, rank 1 at 1.6x", (_steps([1.0, 1.6]), 1.5)),
    ("one step of rank 0 at 10x", (_spike(_steps([1.0, 1.0, 1.0]), 4, 0, 10.0), 1.5)),
    ("rank 1 at exactly the factor", (_steps([1.0, 1.5, 1.0]), 1.5)),
    ("8 ranks, ranks 3 and 5 at 3x", (_steps([1, 1, 1, 3, 1, 3, 1, 1], noise=0.1), 2.0)),
    (
        "4 steps (an even count): rank 1's middle two are 1.0 and 2.2",
        ([[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 2.2, 1.0], [1.0, 2.2, 1.0]], 1.5),
    ),
]


def _draw(gen: Any, i: int) -> tuple:
    ranks = int(gen.integers(2, 9))
    per = [1.0] * ranks
    for r in gen.choice(ranks, size=int(gen.integers(0, 2 if ranks < 4 else 3)), replace=False):
        per[int(r)] = float(gen.uniform(1.1, 4.0))
    rows = _steps(per, n=int(gen.integers(4, 12)), noise=0.1, seed=int(gen.integers(1 << 30)))
    if gen.random() < 0.5:
        rows = _spike(rows, int(gen.integers(len(rows))), int(gen.integers(ranks)), 20.0)
    factor = float(gen.choice([1.3, 1.5, 2.0]))
    return (f"random {ranks} ranks {i}: factor {factor}", (rows, factor))


def _draw_fresh(gen: Any, i: int) -> tuple:
    """A random job with one step of a healthy rank 20x slower (a mean flags it, a median
    not): drawn jobs have it only half the time, so a lookup with a mean fallback passed."""
    label, (rows, factor) = _draw(gen, i)
    base = slow_ranks(rows, factor)
    healthy = [r for r in range(len(rows[0])) if r not in base] or [0]
    rows = _spike([list(r) for r in rows], int(gen.integers(len(rows))), healthy[0], 20.0)
    return (f"fresh {label}", (rows, factor))


def _means(compute: list, factor: float) -> list[int]:
    return slow_ranks(
        [[float(np.mean([row[r] for row in compute])) for r in range(len(compute[0]))]], factor
    )


def _with_itself(compute: list, factor: float) -> list[int]:
    med = [median([row[r] for row in compute]) for r in range(len(compute[0]))]
    return [r for r, m in enumerate(med) if m > factor * median(med)]


def _at_least(compute: list, factor: float) -> list[int]:
    return slow_ranks(compute, factor - 1e-9)


def _lowmedian(compute: list, factor: float) -> list[int]:
    ranks = len(compute[0])  # the lower of the middle two
    med = [sorted(row[r] for row in compute)[(len(compute) - 1) // 2] for r in range(ranks)]
    return [r for r in range(ranks) if med[r] > factor * median(med[:r] + med[r + 1 :])]


_MISTAKES = (
    Mistake(
        " A mean follows one noisy step: take each rank's median over the steps.",
        answer=_means,
    ),
    Mistake(
        " Compare a rank with the median of the *other* ranks: with the rank itself in it (two "
        "ranks: the pair's mean) the baseline moves towards the straggler.",
        answer=_with_itself,
    ),
    Mistake(
        " A straggler is *more* than factor times the others' median: exactly the factor is "
        "not flagged.",
        answer=_at_least,
    ),
    Mistake(
        " With an even number of steps the median is the mean of the middle two.",
        answer=_lowmedian,
    ),
)


def _read(got: Any, label: str) -> list[int]:
    try:
        return sorted(int(r) for r in got)
    except (TypeError, ValueError):
        raise CheckFailure(
            f"[{label}] find_stragglers must return a list of ranks (ints); got "
            f"{type(got).__name__}."
        ) from None


STRAGGLERS = Table(
    "32.4",
    truth=slow_ranks,
    named=_NAMED,
    draw=_draw,
    seeded=8,
    fresh=4,
    draw_fresh=_draw_fresh,
    mistakes=_MISTAKES,
    hint=" Each rank's median over the steps; flag it when it is more than factor times the "
    "median of the other ranks' medians.",
    read=_read,
    what="find_stragglers",
    message="[{label}] find_stragglers returned {got!r}, the stragglers are {want!r}.{hint}",
)


@grader("32.4", blocks=("minitorch.elastic.stragglers", "a2s.checks.lab32._truth:slow_ranks"))
def check_find_stragglers(find_stragglers: Callable[..., object]) -> str:
    """Exercise 32.4: the slow rank named from medians, never a noisy step."""
    n = STRAGGLERS.grade(find_stragglers)
    return f"{n} jobs: every straggler named, no rank flagged for one noisy step"
