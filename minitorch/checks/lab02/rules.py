"""Grader of exercise 02.1: an op's value and its local derivatives, against torch float64.

Each rule maps inputs to ``(value, (d value / d input, ...))``. Ground truth is
``torch.autograd.grad`` in float64 on the same inputs; known-wrong rules (tanh' = 1 - tanh,
the product rule with the factors swapped, ...) are recognized and named in the message.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from minitorch.checks.core import CheckFailure, assert_close, grader, rng

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

T = torch.float64
# rule name -> (number of inputs, torch forward, input sampler, [(wrong rule, what it means)])
_RULES: dict[str, tuple[Any, ...]] = {
    "mul": (
        2,
        lambda a, b: a * b,
        lambda g, n: g.uniform(-3, 3, (n, 2)),
        [(lambda a, b: (a, b), "d(ab)/da = b and d(ab)/db = a: the factors are swapped.")],
    ),
    "div": (
        2,
        lambda a, b: a / b,
        lambda g, n: np.stack(
            [g.uniform(-3, 3, n), g.choice([-1, 1], n) * g.uniform(0.3, 3, n)], 1
        ),
        [
            (lambda a, b: (1 / b, a / b**2), "d(a/b)/db = -a/b^2: the sign is missing."),
            (lambda a, b: (1 / b, -1 / b**2), "d(a/b)/db = -a/b^2: the factor a is missing."),
        ],
    ),
    "tanh": (
        1,
        torch.tanh,
        lambda g, n: g.uniform(-4, 4, (n, 1)),
        [
            (lambda x: (1 - math.tanh(x),), "tanh'(x) = 1 - tanh(x)^2, not 1 - tanh(x)."),
            (lambda x: (1 - x * x,), "tanh'(x) = 1 - tanh(x)^2: square the *output* t, not x."),
        ],
    ),
    "sigmoid": (
        1,
        torch.sigmoid,
        lambda g, n: g.uniform(-8, 8, (n, 1)),
        [
            (lambda x: (1 / (1 + math.exp(-x)),), "sigmoid' = s (1 - s), not s."),
            (lambda x: (x * (1 - x),), "sigmoid' = s (1 - s) with s the *output*, not x."),
        ],
    ),
    "pow": (
        1,
        None,  # the exponent is a constant: handled in _torch_rule
        lambda g, n: g.uniform(0.2, 3, (n, 1)),
        [
            (lambda x, k: (x ** (k - 1),), "d/dx x^k = k x^(k-1): the factor k is missing."),
            (lambda x, k: (k * x**k,), "d/dx x^k = k x^(k-1): the exponent drops by one."),
        ],
    ),
}
_EXPONENTS = (2.0, 3.0, 0.5, -1.0, -2.0, 1.5)


def _torch_rule(name: str, args: tuple[float, ...]) -> tuple[float, tuple[float, ...]]:
    n_in, fwd = _RULES[name][0], _RULES[name][1]
    xs = [torch.tensor(a, dtype=T, requires_grad=True) for a in args[:n_in]]
    out = xs[0] ** args[1] if name == "pow" else fwd(*xs)
    grads = torch.autograd.grad(out, xs)
    return out.item(), tuple(g.item() for g in grads)


def _unpack(got: Any, n_in: int, case: str) -> tuple[float, tuple[float, ...]]:
    """Read ``(value, (grads...))`` from the student's rule, with a clear message if not."""
    try:
        value, grads = got
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


def _diagnose(name: str, args: tuple[float, ...], grads: tuple[float, ...]) -> str:
    for wrong, meaning in _RULES[name][3]:
        w = tuple(wrong(*args))
        if all(
            math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) for a, b in zip(grads, w, strict=True)
        ):
            return meaning
    return "Differentiate the op on paper first, then write the formula in terms of its inputs."


def _check_rule(student: Callable[..., Any], name: str, g: np.random.Generator) -> int:
    n_in, _, sample, _ = _RULES[name]
    points = [tuple(float(v) for v in row) for row in sample(g, 200)]
    named = {
        "mul": [(2.0, -3.0)],
        "div": [(1.0, 4.0)],
        "tanh": [(0.0,), (0.5,), (-20.0,)],
        "sigmoid": [(0.0,), (2.0,), (-30.0,)],
        "pow": [(2.0,)],
    }[name]
    cases = 0
    for args in named + points:
        if name == "pow":
            args = (args[0], _EXPONENTS[cases % len(_EXPONENTS)])
        case = f"{name}_rule{args}"
        value, grads = _unpack(student(*args), n_in, case)
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
        assert_close(
            np.array(grads),
            np.array(want_g),
            case=case,
            rtol=1e-9,
            atol=1e-12,
            what="local grads",
            hint=_diagnose(name, args, grads),
        )
        cases += 1
    return cases


@grader("02.1", blocks=_BLOCKS)
def check_local_rules(mul_rule, div_rule, tanh_rule, sigmoid_rule, pow_rule) -> str:
    """Compare five local rules with torch.autograd (float64) on named and random inputs."""
    students = {
        "mul": mul_rule,
        "div": div_rule,
        "tanh": tanh_rule,
        "sigmoid": sigmoid_rule,
        "pow": pow_rule,
    }
    total = sum(_check_rule(s, name, rng(21 + k)) for k, (name, s) in enumerate(students.items()))
    return f"5 rules × {total // 5} inputs match torch.autograd (float64) to 1e-9"
