"""Grader of exercise 35.1: GRPO's group-relative advantages.

``group_advantages(rewards, group_size)`` returns, for rewards laid out group after group,
A_i = (r_i - mean of its group) / (sample std of its group + 1e-6). The truth is a plain loop
(``_truth.advantages_loop``); the named cases hold the edges a plausible wrong answer needs: a
group whose rewards are all equal (advantage 0, not NaN), groups of different means (the
baseline is the group's, not the batch's), G = 2.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import Mistake
from a2s.checks.compare import float_array
from a2s.checks.core import CheckFailure, grader
from a2s.checks.harness import run_apart
from a2s.checks.lab35._truth import advantages_loop
from a2s.checks.table import Table

__all__ = ["check_group_advantages"]

_MISTAKES = (
    Mistake(
        "A group whose rewards are all equal has std 0: add eps = 1e-6 to the std before "
        "dividing, so its advantages are 0 (it teaches nothing), not NaN.",
        answer=lambda r, g: advantages_loop(r, g, "no eps"),
    ),
    Mistake(
        "Normalise within each prompt's own group of G completions (its mean, its std), not "
        "over the whole batch: GRPO compares answers to the same question.",
        answer=lambda r, g: advantages_loop(r, g, "batch"),
    ),
    Mistake(
        "Divide by the sample std of the group (variance over G - 1, as torch.std does by "
        "default), not the population std (over G).",
        answer=lambda r, g: advantages_loop(r, g, "population std"),
    ),
    Mistake(
        "Scale by the group's std: A_i = (r_i - mean) / (std + eps). Without it (as Dr. GRPO "
        "proposes) the advantages are not the ones this lab's GRPO uses.",
        answer=lambda r, g: advantages_loop(r, g, "no std"),
    ),
)


def _read(got: Any, label: str) -> np.ndarray:
    arr = float_array(got, label, "group_advantages")
    if arr.ndim != 1:
        raise CheckFailure(
            f"[{label}] return one advantage per reward, a 1-D array; got {arr.shape}"
        )
    return arr


def _same(got: np.ndarray, want: Any) -> bool:
    w = np.asarray(want, np.float64)
    return got.shape == w.shape and bool(np.allclose(got, w, rtol=1e-6, atol=1e-8))


def _draw(g: np.random.Generator, i: int) -> tuple[str, tuple[Any, ...]]:
    size, groups = int(g.integers(2, 9)), int(g.integers(1, 5))
    r = g.integers(0, 2, size * groups).astype(float) if i % 2 else g.uniform(0, 1, size * groups)
    return f"{groups} groups of {size}", (r.round(3).tolist(), size)


ADVANTAGES = Table(
    "35.1",
    truth=advantages_loop,
    named=[
        ("one group of 4, rewards 0/1", ([1.0, 0.0, 0.0, 1.0], 4)),
        ("a group of equal rewards: advantage 0, not NaN", ([1.0, 1.0, 1.0, 0.0, 1.0, 0.0], 3)),
        ("two groups of different means", ([1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0], 4)),
        ("G = 2, partial rewards", ([0.25, 0.75, 0.5, 0.0], 2)),
    ],
    draw=_draw,
    seeded=4,
    fresh=2,
    mistakes=_MISTAKES,
    hint="A_i = (r_i - mean(group)) / (std(group, ddof=1) + 1e-6), the same for every "
    "completion of a group, groups laid out one after the other.",
    read=_read,
    same=_same,
    # each case in a forked child: the cases' frames (and ``want``) are not the learner's
    prepare=lambda f: lambda *args: run_apart(f, *args),
    what="group_advantages",
    message="[{label}] group_advantages returned {got}, expected {want}.{hint}",
)


@grader("35.1", blocks=("minitorch.rl.grpo", "minitorch.rl.trainer"))
def check_group_advantages(group_advantages: Callable[..., Any]) -> str:
    """Exercise 35.1: group_advantages(rewards, group_size) -> (B,) advantages."""
    n = ADVANTAGES.grade(group_advantages)
    return f"{n} reward batches (2 fresh) match the plain loop; an all-equal group gets 0"
