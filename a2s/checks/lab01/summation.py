"""Graders of exercises 01.4 and 01.5: Kahan and pairwise sums, bit-exact and within bounds."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from a2s.checks.core import CheckFailure, assert_true, grader, plain
from a2s.checks.table import Table

__all__ = ["check_kahan_sum", "check_pairwise_sum"]

_N = "minitorch.numerics"
_FORBID = ("torch", "numpy:sum", "math:fsum")  # the library sums this exercise writes
U = 2.0**-24  # float32 unit roundoff


def _scalar_f32(got: object, case: str, what: str) -> np.float32:
    """The student's sum as float32, refusing results that are not float32 values."""
    try:
        value = float(plain(got, what=what, case=case))
    except (TypeError, ValueError):
        msg = f"[{case}] {what} must return a number, got {type(got).__name__}."
        raise CheckFailure(msg) from None
    if not math.isnan(value) and float(np.float32(value)) != value:
        raise CheckFailure(
            f"[{case}] {what} returned {value!r}, which is not a float32 value: accumulate in "
            "np.float32 (a Python float is float64 and hides the error this exercise is about)."
        )
    return np.float32(value)


def _kahan_loop(x: np.ndarray) -> np.float32:
    """Kahan summation in float32, written out: the grader's ground truth."""
    s, c = np.float32(0.0), np.float32(0.0)
    for v in x:
        y = v - c
        t = s + y
        c = (t - s) - y
        s = t
    return s


def _pairwise_loop(x: np.ndarray) -> np.float32:
    """Pairwise summation with the lab's split (n // 2 | rest, naive blocks of <= 8)."""
    if len(x) <= 8:
        s = np.float32(0.0)
        for v in x:
            s = s + v
        return s
    return _pairwise_loop(x[: len(x) // 2]) + _pairwise_loop(x[len(x) // 2 :])


def _exact(x: np.ndarray) -> tuple[float, float]:
    """(exact sum, sum of |x|) via math.fsum."""
    xs = x.astype(np.float64).tolist()
    return math.fsum(xs), math.fsum(abs(v) for v in xs)


_SIZES = (2, 3, 9, 17, 100, 1000, 4097, 30_000)


def _arrays(g: np.random.Generator, n: int) -> list[tuple[str, tuple[np.ndarray]]]:
    """Three float32 arrays of ``n`` values: normal, uniform(0, 1), mixed magnitudes."""
    normal, uniform = g.standard_normal(n), g.random(n)
    mixed = g.standard_normal(n) * 10.0 ** g.integers(-4, 4, n)
    kinds = ("normal", "uniform(0, 1)", "mixed magnitudes")
    return [
        (f"{kind}, n = {n:,}", (x.astype(np.float32),))
        for kind, x in zip(kinds, (normal, uniform, mixed), strict=True)
    ]


def _tables(
    exercise: str, what: str, name: str, ref: Callable[..., object], named: list, hint: str
) -> tuple[Table, Table]:
    """The named cases (exact answers) and 24 seeded arrays (3 kinds x 8 sizes up to 30,000),
    then 3 fresh ones (new each run), bit-exact with the float32 loop ``ref``."""
    first = Table(
        exercise,
        truth=ref,
        named=named,
        read=lambda got, case: _scalar_f32(got, case, what),
        message=lambda c, got, want, hint: f"[{c.label}] got {got!s}, expected {want!s}. {hint}",
    )
    drawn = Table(
        exercise,
        truth=ref,
        draw=lambda g, i: _arrays(g, _SIZES[i]),
        draw_fresh=lambda g, i: _arrays(g, int(g.integers(2, 5000))),
        seeded=len(_SIZES),
        fresh=1,
        hint=hint,
        read=lambda got, case: _scalar_f32(got, case, name),
        what=name,
        message=f"[{{label}}] got {{got!s}}, expected {{want!s}} (a float32 {name} loop, "
        "in the order specified).{hint}",
        seed=104,
    )
    return first, drawn


def _bounded(table: Table, bound_k: Callable[[int], float]) -> tuple[int, float]:
    """Values summed and the worst error / u sum|x| of the (bit-exact) answers, within bounds."""
    worst, count = 0.0, 0
    for case in table.cases():
        (x,) = case.args
        exact, abs_sum = _exact(x)
        err = abs(float(case.want()) - exact)
        assert_true(
            err <= bound_k(len(x)) * abs_sum,
            f"[{case.label}] error {err:.3g} exceeds the bound {bound_k(len(x)) * abs_sum:.3g}.",
        )
        worst = max(worst, err / (U * abs_sum))
        count += len(x)
    return count, worst


def _gamma(k: int) -> float:
    return k * U / (1 - k * U)


_ADVERSARIAL = np.concatenate([[1.0], np.full(65_536, 2.0**-25)]).astype(np.float32)
_A = 2.0**-24
KAHAN, KAHAN_DRAWN = _tables(
    "01.4",
    "kahan_sum",
    "Kahan",
    _kahan_loop,
    [
        ("empty", (np.array([], np.float32),), "The empty sum is 0.", np.float32(0.0)),
        ("one value", (np.array([2.5], np.float32),), "", np.float32(2.5)),
        (
            "1 + 2^-24 + 2^-24",
            (np.array([1.0, _A, _A], np.float32),),
            "Each 2^-24 alone is lost against 1.0 (a tie, rounded to even); the compensation c "
            "must carry it into the next step. Plain summation gives 1.0.",
            np.float32(1.0 + 2.0**-23),
        ),
    ],
    "Every operation in float32 (np.float32 scalars), in the textbook order: y = v - c; "
    "t = s + y; c = (t - s) - y; s = t. Neumaier's variant, a float64 accumulator or "
    "plain summation give different bits.",
)
PAIRWISE, PAIRWISE_DRAWN = _tables(
    "01.5",
    "pairwise_sum",
    "pairwise",
    _pairwise_loop,
    [
        ("empty", (np.array([], np.float32),), "The empty sum is 0.", np.float32(0.0)),
        (
            "8 values are one naive block",
            (np.array([1.0] + [_A] * 7, np.float32),),
            "Blocks of at most 8 values are summed naively, left to right, without halving "
            "further (each 2^-24 then ties with 1.0 and is lost).",
            np.float32(1.0),
        ),
        (
            "9 values split 4 | 5",
            (np.array([_A] * 4 + [1.0] + [_A] * 4, np.float32),),
            "Split at n // 2: the left half is the first n // 2 values (4 of 9). Splitting 5 | 4 "
            "gives 1 + 8 * 2^-24 here.",
            np.float32(1.0 + 4 * _A),
        ),
    ],
    "Sum x[:n // 2] and x[n // 2:] recursively and add the two; at n <= 8 sum naively "
    "from 0 in float32. np.sum uses other blocks (128) and gives different bits.",
)


def _depth(n: int) -> int:
    return n - 1 if n <= 8 else 1 + max(_depth(n // 2), _depth(n - n // 2))


@grader("01.4", blocks=(f"{_N}.summation:kahan_sum",), forbid=_FORBID, hand="parts")
def check_kahan_sum(kahan_sum: Callable[..., object]) -> str:
    """Exercise 01.4: float32 Kahan summation, bit-exact, within 2u sum|x|, beats naive."""
    KAHAN.grade(kahan_sum)
    KAHAN_DRAWN.grade(kahan_sum)
    count, worst = _bounded(KAHAN_DRAWN, lambda n: 2 * U + 4 * n * U * U)
    exact, _ = _exact(_ADVERSARIAL)
    naive = np.float32(0.0)
    for v in _ADVERSARIAL:
        naive = naive + v
    got = _scalar_f32(kahan_sum(_ADVERSARIAL), "1 + 65,536 x 2^-25", "kahan_sum")
    assert_true(
        float(got) == exact and float(naive) != exact,
        f"[1 + 65,536 x 2^-25] got {got!s}, exact {exact!r}, naive {naive!s}: Kahan must "
        "recover every small term that plain summation drops.",
    )
    return (
        f"{count:,} values in 27 sums (3 fresh) bit-exact with float32 Kahan; worst error "
        f"{worst:.2f} u*sum|x| (bound 2); on 1 + 65,536 x 2^-25 naive is off by "
        f"{exact - float(naive):.2g}, yours by 0"
    )


@grader("01.5", blocks=(f"{_N}.summation:pairwise_sum",), forbid=_FORBID, hand="parts")
def check_pairwise_sum(pairwise_sum: Callable[..., object]) -> str:
    """Exercise 01.5: pairwise summation with the n // 2 split, bit-exact and within gamma_d."""
    PAIRWISE.grade(pairwise_sum)
    PAIRWISE_DRAWN.grade(pairwise_sum)
    count, worst = _bounded(PAIRWISE_DRAWN, lambda n: _gamma(_depth(n)))
    exact, abs_sum = _exact(_ADVERSARIAL)
    got = _scalar_f32(pairwise_sum(_ADVERSARIAL), "1 + 65,536 x 2^-25", "pairwise_sum")
    err = abs(float(got) - exact)
    bound = _gamma(_depth(_ADVERSARIAL.size)) * abs_sum
    assert_true(
        err <= bound,
        f"[1 + 65,536 x 2^-25] error {err:.3g} exceeds gamma_d sum|x| = "
        f"{bound:.3g}; plain summation loses all 65,536 small terms ({2.0**-9:.3g}).",
    )
    return (
        f"{count:,} values in 27 sums (3 fresh) bit-exact with the n // 2 split; worst error "
        f"{worst:.2f} u*sum|x| (bound at n = 30,000: gamma_{_depth(30_000)}, naive's: "
        f"gamma_29,999)"
    )
