"""Grader of exercise 02.1: an op's value and its local derivatives, against torch float64.

Each rule maps inputs to ``(value, (d value / d input, ...))``. Ground truth is
``torch.autograd.grad`` in float64 on the same inputs; known-wrong rules (tanh' = 1 - tanh,
the product rule with the factors swapped, ...) are recognized and named in the message.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from a2s.checks.cases import Mistake, fresh
from a2s.checks.core import CheckFailure, StudentError, assert_close, fresh_rng, grader, plain, rng
from a2s.checks.vjp import torch_grad

__all__ = ["check_local_rules"]

_EW = "minitorch.autograd.ops_elementwise"
_BLOCKS = (
    "minitorch.autograd.scalar:Value",
    "minitorch.autograd.gradcheck:numerical_derivative",
    *(
        f"{_EW}:{op}{suffix}"
        for op in ("mul", "div", "tanh", "sigmoid", "pow")
        for suffix in ("", "_backward")
    ),
)

# rule name -> (number of inputs, torch forward, input sampler, [known mistakes])
_RULES: dict[str, tuple[Any, ...]] = {
    "mul": (
        2,
        lambda a, b: a * b,
        lambda g, n: g.uniform(-3, 3, (n, 2)),
        [
            Mistake(
                "d(ab)/da = b and d(ab)/db = a: the factors are swapped.",
                answer=lambda a, b: (a, b),
            )
        ],
    ),
    "div": (
        2,
        lambda a, b: a / b,
        lambda g, n: np.stack(
            [g.uniform(-3, 3, n), g.choice([-1, 1], n) * g.uniform(0.3, 3, n)], 1
        ),
        [
            Mistake(
                "d(a/b)/db = -a/b^2: the sign is missing.", answer=lambda a, b: (1 / b, a / b**2)
            ),
            Mistake(
                "d(a/b)/db = -a/b^2: the factor a is missing.",
                answer=lambda a, b: (1 / b, -1 / b**2),
            ),
        ],
    ),
    "tanh": (
        1,
        torch.tanh,
        lambda g, n: g.uniform(-4, 4, (n, 1)),
        [
            Mistake(
                "tanh'(x) = 1 - tanh(x)^2, not 1 - tanh(x).", answer=lambda x: (1 - math.tanh(x),)
            ),
            Mistake(
                "tanh'(x) = 1 - tanh(x)^2: square the *output* t, not x.",
                answer=lambda x: (1 - x * x,),
            ),
        ],
    ),
    "sigmoid": (
        1,
        torch.sigmoid,
        lambda g, n: g.uniform(-8, 8, (n, 1)),
        [
            Mistake("sigmoid' = s (1 - s), not s.", answer=lambda x: (1 / (1 + math.exp(-x)),)),
            Mistake(
                "sigmoid' = s (1 - s) with s the *output*, not x.", answer=lambda x: (x * (1 - x),)
            ),
        ],
    ),
    "pow": (
        1,
        None,
        lambda g, n: g.uniform(0.2, 3, (n, 1)),
        [  # the exponent k is a constant
            Mistake(
                "d/dx x^k = k x^(k-1): the factor k is missing.",
                answer=lambda x, k: (x ** (k - 1),),
            ),
            Mistake(
                "d/dx x^k = k x^(k-1): the exponent drops by one.", answer=lambda x, k: (k * x**k,)
            ),
        ],
    ),
}
_EXPONENTS = (2.0, 3.0, 0.5, -1.0, -2.0, 1.5)
_NAMED: dict[str, list[tuple[float, ...]]] = {
    "mul": [(2.0, -3.0)],
    "div": [(1.0, 4.0)],
    "tanh": [(0.0,), (0.5,), (-20.0,)],
    "sigmoid": [(0.0,), (2.0,), (-30.0,), (-1000.0,), (1000.0,)],  # +-1000: exp overflows
    "pow": [(2.0,)],
}
_OVERFLOW = (
    "sigmoid must not overflow: 1 / (1 + exp(-x)) computes exp(1000) at x = -1000 "
    "(math.exp raises, np.exp warns and returns inf). Use 0.5 * (1 + tanh(x / 2)), or "
    "exp(x) / (1 + exp(x)) for x < 0: both give 0 there without overflowing."
)


def _torch_rule(name: str, args: tuple[float, ...]) -> tuple[float, np.ndarray]:
    if name == "pow":  # the exponent is a constant, not an input
        return torch_grad(lambda x: x ** args[1], args[0])
    return torch_grad(_RULES[name][1], *args)


def _unpack(got: Any, n_in: int, case: str) -> tuple[float, tuple[float, ...]]:
    """Read ``(value, (grads...))`` from the student's rule, with a clear message if not."""
    try:
        value, grads = plain(got, what="the rule's result", case=case)
        grads = tuple(float(g) for g in grads)
        value = float(value)
    except (TypeError, ValueError):
        raise CheckFailure(
            f"[{case}] a rule returns (value, local_grads) with local_grads a tuple of "
            f"{n_in} float(s), e.g. (t, (1 - t * t,)); got {got!r}."
        ) from None
    if len(grads) != n_in:
        raise CheckFailure(f"[{case}] expected {n_in} local grad(s), one per input; got {grads}.")
    return value, grads


def _call(student: Callable[..., Any], args: tuple[float, ...], case: str) -> Any:
    """Run a rule with overflow warnings as errors: an overflow fails with its own message."""
    with warnings.catch_warnings(), np.errstate(over="raise"):
        warnings.simplefilter("error", RuntimeWarning)
        try:
            return student(*args)
        except StudentError as exc:
            cause = exc.__cause__
            if isinstance(cause, (OverflowError, FloatingPointError, RuntimeWarning)):
                msg = f"[{case}] {type(cause).__name__}: {cause}. {_OVERFLOW}"
                raise CheckFailure(msg) from None
            raise


def _close(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return all(math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12) for x, y in zip(a, b, strict=True))


def _check_rule(student: Callable[..., Any], name: str, k: int) -> int:
    n_in, _, sample, mistakes = _RULES[name]
    new = fresh_rng(f"02.1 {name}")
    points = [(args, False) for args in _NAMED[name]]
    points += [(tuple(float(v) for v in row), False) for row in sample(rng(21 + k), 200)]
    points += [(tuple(float(v) for v in row), True) for row in sample(new, 10)]
    for i, (args, is_fresh) in enumerate(points):
        if name == "pow":
            args = (args[0], _EXPONENTS[i % len(_EXPONENTS)])
        case = fresh(f"{name}_rule{args}") if is_fresh else f"{name}_rule{args}"
        value, grads = _unpack(_call(student, args, case), n_in, case)
        want_v, want_g = _torch_rule(name, args)
        assert_close(
            value,
            want_v,
            case=case,
            rtol=1e-9,
            atol=1e-12,
            what="value",
            hint="The value is the op's ordinary result.",
        )
        hint = next((m.message for m in mistakes if m.matches(grads, args, _close)), _PAPER)
        assert_close(
            np.array(grads), want_g, case=case, rtol=1e-9, atol=1e-12, what="local grads", hint=hint
        )
    return len(points)


_PAPER = "Differentiate the op on paper first, then write the formula in terms of its inputs."


@grader("02.1", blocks=_BLOCKS, hand="parts")
def check_local_rules(mul_rule, div_rule, tanh_rule, sigmoid_rule, pow_rule) -> str:
    """Compare five local rules with torch.autograd (float64) on named and random inputs."""
    students = {
        "mul": mul_rule,
        "div": div_rule,
        "tanh": tanh_rule,
        "sigmoid": sigmoid_rule,
        "pow": pow_rule,
    }
    total = sum(_check_rule(s, name, k) for k, (name, s) in enumerate(students.items()))
    return (
        f"5 rules x {total // 5} inputs (10 fresh each) match torch.autograd (float64) to 1e-9; "
        "sigmoid(-1000) without overflow"
    )
