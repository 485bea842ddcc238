"""Grader of exercise 34.3: predict the tokens one target pass yields, before measuring them.

With gamma draft tokens each accepted with probability alpha, independently, a step emits
i + 1 tokens when the first i are accepted and the next is not, and gamma + 1 when all are:
E = sum_{i=0}^{gamma} alpha^i = (1 - alpha^(gamma + 1)) / (1 - alpha) (Leviathan et al. 2023).
The truth is that sum, written as a loop; alpha = 1 gives gamma + 1. Each case runs the
learner's function in a forked child (:func:`~a2s.checks.harness.run_apart`): the grader's
frames, where the expected value lies, are not on its stack.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import Mistake
from a2s.checks.compare import number
from a2s.checks.core import grader
from a2s.checks.harness import run_apart
from a2s.checks.lab34._truth import tokens_per_pass
from a2s.checks.table import Table

__all__ = ["check_expected_tokens"]

_MISTAKES = (
    Mistake(
        "Count the bonus token: a step that accepts i draft tokens emits i + 1 (the target's "
        "own token at the rejection, or after the last draft), so the sum runs to alpha^gamma: "
        "(1 - alpha^(gamma + 1)) / (1 - alpha).",
        answer=lambda a, g: tokens_per_pass(a, g) - a**g,
    ),
    Mistake(
        "Acceptances stop at the first rejection: the i-th draft token counts only if all "
        "before it were accepted (probability alpha^i), so E is not 1 + gamma alpha.",
        answer=lambda a, g: 1 + g * a,
    ),
    Mistake(
        "That is the number of draft tokens accepted, E - 1: add the token every pass emits.",
        answer=lambda a, g: tokens_per_pass(a, g) - 1,
    ),
)


def _read(got: Any, label: str) -> float:
    return float(number(got, case=label, message=f"[{label}] return one float"))


def _draw(g: np.random.Generator, i: int) -> tuple[str, tuple[Any, ...]]:
    a, gamma = round(float(g.uniform(0.05, 0.95)), 3), int(g.integers(1, 9))
    return f"alpha {a}, gamma {gamma}", (a, gamma)


SPEEDUP = Table(
    "34.3",
    truth=tokens_per_pass,
    named=[
        ("alpha 0.5, gamma 1", (0.5, 1)),
        ("alpha 0.8, gamma 4", (0.8, 4)),
        ("alpha 0: every draft rejected", (0.0, 4)),
        ("alpha 1: every draft accepted", (1.0, 5)),
        ("gamma 0: no draft", (0.7, 0)),
    ],
    draw=_draw,
    seeded=4,
    fresh=2,
    mistakes=_MISTAKES,
    hint="E[tokens per target pass] = sum_{i=0}^{gamma} alpha^i = "
    "(1 - alpha^(gamma + 1)) / (1 - alpha), and gamma + 1 at alpha = 1.",
    read=_read,
    # each case in a forked child: the cases' frames (and ``want``) are not the learner's to read
    prepare=lambda f: lambda *args: run_apart(f, *args),
    same=lambda got, want: bool(np.isclose(got, want, rtol=1e-9, atol=1e-12)),
    what="expected_tokens",
    message="[{label}] expected_tokens returned {got!r}, expected {want:.6g}.{hint}",
)


@grader(
    "34.3",
    blocks=(
        "minitorch.model.speculative:expected_tokens",
        "minitorch.model.speculative:walltime_factor",
    ),
)
def check_expected_tokens(expected_tokens: Callable[..., Any]) -> str:
    """Exercise 34.3: expected_tokens(alpha, gamma) -> mean tokens per target pass."""
    n = SPEEDUP.grade(expected_tokens)
    return (
        f"{n} cases (2 fresh) match the closed form; at alpha 0.8, gamma 4 a target pass "
        f"yields {tokens_per_pass(0.8, 4):.2f} tokens"
    )
