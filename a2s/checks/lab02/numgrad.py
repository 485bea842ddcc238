"""Grader of exercise 02.4: the gradient by central differences.

Ground truth is torch.autograd in float64 on the same function. Beyond the values, the
grader enforces the method: the error must shrink as O(h^2) (a forward difference shrinks as
O(h) and is rejected), f is called about 2 times per input, and the inputs are left as given.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from a2s.checks.cases import fresh
from a2s.checks.core import CheckFailure, assert_close, fresh_rng, grader, plain, rng
from a2s.checks.vjp import torch_grad

__all__ = ["check_numerical_grad"]

_G = "minitorch.autograd.gradcheck"
BLOCKS = (
    f"{_G}:numerical_derivative",
    f"{_G}:numerical_grad",
    f"{_G}:gradcheck",
    "minitorch.autograd.scalar:Value",
)

# name -> (float version, torch version, number of inputs)
_FNS: dict[str, tuple[Callable[..., float], Callable[..., torch.Tensor], int]] = {
    "x^3": (lambda x: x**3, lambda x: x**3, 1),
    "exp(x) sin(y)": (
        lambda x, y: math.exp(x) * math.sin(y),
        lambda x, y: torch.exp(x) * torch.sin(y),
        2,
    ),
    "tanh(x y - z) + x / (1 + y^2)": (
        lambda x, y, z: math.tanh(x * y - z) + x / (1 + y * y),
        lambda x, y, z: torch.tanh(x * y - z) + x / (1 + y * y),
        3,
    ),
    "log(1 + x^2) cos(y) + w^2 z": (
        lambda x, y, z, w: math.log(1 + x * x) * math.cos(y) + w * w * z,
        lambda x, y, z, w: torch.log(1 + x * x) * torch.cos(y) + w * w * z,
        4,
    ),
}


def _torch_grad(name: str, xs: list[float]) -> np.ndarray:
    return torch_grad(_FNS[name][1], *xs)[1]


def _call(student: Callable[..., Any], name: str, xs: list[float], h: float) -> np.ndarray:
    """Run the student's function with a counting f; check calls, inputs and the result."""
    f, _, n = _FNS[name]
    calls = [0]

    def counted(*args: float) -> float:
        calls[0] += 1
        if len(args) != n or not all(isinstance(a, (int, float)) for a in args):
            raise CheckFailure(f"[{name}] f takes {n} float(s) (call it as f(*xs)); got {args!r}.")
        return f(*args)

    given = list(xs)
    case = f"{name} at {np.round(given, 3).tolist()}, h = {h:g}"
    got = plain(student(counted, xs, h), what="numerical_grad", case=case)
    if list(xs) != given:
        raise CheckFailure(f"[{case}] your function changed xs to {xs}: perturb a copy.")
    if not 2 * n <= calls[0] <= 2 * n + 1:
        raise CheckFailure(
            f"[{case}] f was called {calls[0]} times for {n} input(s); central differences need "
            f"2 per input ({2 * n}): perturb one input at a time, f(x + h e_i) and f(x - h e_i)."
        )
    try:
        arr = np.array([float(v) for v in got])
    except TypeError:
        raise CheckFailure(f"[{case}] return a list of {n} floats, got {got!r}.") from None
    if arr.shape != (n,):
        raise CheckFailure(f"[{case}] return one partial derivative per input ({n}), got {got}.")
    return arr


def _cube_hint(got: float, h: float) -> str:
    """Name the mistake from the x^3 case: its central difference is exactly 12 + h^2."""
    hint = "The central difference of x^3 at 2 is exactly 3x^2 + h^2 = 12 + h^2. "
    if np.isclose(got, 12 + 6 * h + h * h, rtol=1e-9):
        return hint + "You got 12 + 6h + h^2: a forward difference (f(x + h) - f(x)) / h."
    if np.isclose(got, 2 * (12 + h * h), rtol=1e-9):
        return hint + "You got twice that: the 1/2 is missing (divide by 2h)."
    return hint


def _order(student: Callable[..., Any]) -> float:
    """Slope of log(error) against log(h) on exp(x) sin(y): 2 for central, 1 for forward."""
    xs = [0.3, 1.1]
    exact = _torch_grad("exp(x) sin(y)", xs)
    errs = [
        float(np.max(np.abs(_call(student, "exp(x) sin(y)", xs, h) - exact))) for h in (1e-2, 1e-3)
    ]
    slope = math.log10(errs[0] / errs[1]) if errs[1] > 0 else math.inf
    if slope < 1.7:
        raise CheckFailure(
            f"[exp(x) sin(y), h = 1e-2 then 1e-3] the error went from {errs[0]:.2e} to "
            f"{errs[1]:.2e}: it shrinks as O(h^{slope:.1f}). A central difference "
            "(f(x + h) - f(x - h)) / 2h cancels the h f''/2 term and shrinks as O(h^2); a "
            "forward difference (f(x + h) - f(x)) / h does not."
        )
    return slope


def _all_at_once_hint(got: Any, want: np.ndarray) -> str:
    """The hint for perturbing every input at once: each entry is then the sum of the gradient."""
    try:
        arr = np.asarray(got, dtype=np.float64).reshape(want.shape)
    except (TypeError, ValueError):
        return ""
    if want.size > 1 and np.allclose(arr, np.full_like(want, want.sum()), rtol=1e-4, atol=1e-6):
        return "Every entry is the sum of the gradient: perturb one input at a time (x + h e_i)."
    return ""


@grader("02.4", blocks=BLOCKS, hand="property")
def check_numerical_grad(student) -> str:
    """Exact case x^3, the O(h^2) order, then random points against torch.autograd."""
    for h in (1e-1, 1e-2):  # (x+h)^3 - (x-h)^3 = 6 x^2 h + 2 h^3: central gives 3x^2 + h^2
        got = _call(student, "x^3", [2.0], h)
        assert_close(
            got,
            np.array([12.0 + h * h]),
            case=f"x^3 at 2, h = {h:g}",
            rtol=1e-9,
            atol=1e-10,
            what="derivative",
            hint=_cube_hint(float(got[0]), h),
        )
    slope = _order(student)
    cases = 0
    for g, per, mark in ((rng(24), 5, str), (fresh_rng("02.4"), 1, fresh)):
        for name, (_, _, n) in _FNS.items():
            for _ in range(per):
                xs = [float(v) for v in g.uniform(-1.5, 1.5, n)]
                got, want = _call(student, name, xs, 1e-5), _torch_grad(name, xs)
                assert_close(
                    got,
                    want,
                    case=mark(f"{name} at {np.round(xs, 3).tolist()}"),
                    rtol=1e-6,
                    atol=1e-8,
                    what="gradient",
                    hint=_all_at_once_hint(got, want),
                )
                cases += 1
    return f"{cases + 4} cases vs torch.autograd to 1e-6; error shrinks as O(h^{slope:.2f})"
