"""Graders of exercises 01.4 and 01.5: Kahan and pairwise sums, bit-exact and within bounds."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from a2s.checks.cases import Case, fresh, run_cases
from a2s.checks.core import CheckFailure, assert_true, fresh_rng, grader, plain, rng

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


def _sum_cases(exercise: str) -> list[tuple[str, np.ndarray]]:
    """24 seeded arrays (3 kinds x 8 sizes up to 30,000), then 3 fresh ones (new each run)."""
    out, new = [], fresh_rng(exercise)
    for g, sizes, mark in (
        (rng(104), (2, 3, 9, 17, 100, 1000, 4097, 30_000), str),
        (new, (int(new.integers(2, 5000)),), fresh),
    ):
        for n in sizes:
            out.append((mark(f"normal, n = {n:,}"), g.standard_normal(n)))
            out.append((mark(f"uniform(0, 1), n = {n:,}"), g.random(n)))
            mixed = g.standard_normal(n) * 10.0 ** g.integers(-4, 4, n)
            out.append((mark(f"mixed magnitudes, n = {n:,}"), mixed))
    return [(name, x.astype(np.float32)) for name, x in out]


_ADVERSARIAL = np.concatenate([[1.0], np.full(65_536, 2.0**-25)]).astype(np.float32)


def _named(student: Callable[..., object], named: list, what: str) -> None:
    run_cases(
        student,
        [Case(case, (x,), np.float32(want), hint=hint) for case, x, want, hint in named],
        read=lambda got, case: _scalar_f32(got, case, what),
        message=lambda c, got, want, hint: f"[{c.label}] got {got!s}, expected {want!s}. {hint}",
    )


def _check_sum(
    student: Callable[..., object],
    ref: Callable[[np.ndarray], np.float32],
    name: str,
    bound_k: Callable[[int], float],
    hint: str,
    exercise: str,
) -> tuple[int, float]:
    """Bit-exact with ``ref`` on random cases and within gamma-style bounds; worst error / uS."""
    worst, count = 0.0, 0
    for case, x in _sum_cases(exercise):
        got = _scalar_f32(student(x.copy()), case, name)
        want = ref(x)
        if got != want:
            raise CheckFailure(
                f"[{case}] got {got!s}, expected {want!s} (a float32 {name} loop, "
                f"in the order specified). {hint}"
            )
        exact, abs_sum = _exact(x)
        err = abs(float(got) - exact)
        assert_true(
            err <= bound_k(len(x)) * abs_sum,
            f"[{case}] error {err:.3g} exceeds the bound {bound_k(len(x)) * abs_sum:.3g}.",
        )
        worst = max(worst, err / (U * abs_sum))
        count += len(x)
    return count, worst


def _gamma(k: int) -> float:
    return k * U / (1 - k * U)


@grader("01.4", blocks=(f"{_N}.summation:kahan_sum",), forbid=_FORBID, hand="parts")
def check_kahan_sum(kahan_sum: Callable[..., object]) -> str:
    """Exercise 01.4: float32 Kahan summation, bit-exact, within 2u sum|x|, beats naive."""
    named = [
        ("empty", np.array([], np.float32), 0.0, "The empty sum is 0."),
        ("one value", np.array([2.5], np.float32), 2.5, ""),
        (
            "1 + 2^-24 + 2^-24",
            np.array([1.0, 2.0**-24, 2.0**-24], np.float32),
            1.0 + 2.0**-23,
            "Each 2^-24 alone is lost against 1.0 (a tie, rounded to even); the compensation c "
            "must carry it into the next step. Plain summation gives 1.0.",
        ),
    ]
    _named(kahan_sum, named, "kahan_sum")
    count, worst = _check_sum(
        kahan_sum,
        _kahan_loop,
        "Kahan",
        lambda n: 2 * U + 4 * n * U * U,
        "Every operation in float32 (np.float32 scalars), in the textbook order: y = v - c; "
        "t = s + y; c = (t - s) - y; s = t. Neumaier's variant, a float64 accumulator or "
        "plain summation give different bits.",
        "01.4",
    )
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
    a = 2.0**-24
    named = [
        ("empty", np.array([], np.float32), 0.0, "The empty sum is 0."),
        (
            "8 values are one naive block",
            np.array([1.0] + [a] * 7, np.float32),
            1.0,
            "Blocks of at most 8 values are summed naively, left to right, without halving "
            "further (each 2^-24 then ties with 1.0 and is lost).",
        ),
        (
            "9 values split 4 | 5",
            np.array([a] * 4 + [1.0] + [a] * 4, np.float32),
            1.0 + 4 * a,
            "Split at n // 2: the left half is the first n // 2 values (4 of 9). Splitting 5 | 4 "
            "gives 1 + 8 * 2^-24 here.",
        ),
    ]
    _named(pairwise_sum, named, "pairwise_sum")

    def depth(n: int) -> int:
        return n - 1 if n <= 8 else 1 + max(depth(n // 2), depth(n - n // 2))

    count, worst = _check_sum(
        pairwise_sum,
        _pairwise_loop,
        "pairwise",
        lambda n: _gamma(depth(n)),
        "Sum x[:n // 2] and x[n // 2:] recursively and add the two; at n <= 8 sum naively "
        "from 0 in float32. np.sum uses other blocks (128) and gives different bits.",
        "01.5",
    )
    exact, abs_sum = _exact(_ADVERSARIAL)
    got = _scalar_f32(pairwise_sum(_ADVERSARIAL), "1 + 65,536 x 2^-25", "pairwise_sum")
    err = abs(float(got) - exact)
    bound = _gamma(depth(_ADVERSARIAL.size)) * abs_sum
    assert_true(
        err <= bound,
        f"[1 + 65,536 x 2^-25] error {err:.3g} exceeds gamma_d sum|x| = "
        f"{bound:.3g}; plain summation loses all 65,536 small terms ({2.0**-9:.3g}).",
    )
    return (
        f"{count:,} values in 27 sums (3 fresh) bit-exact with the n // 2 split; worst error "
        f"{worst:.2f} u*sum|x| (bound at n = 30,000: gamma_{depth(30_000)}, naive's: "
        f"gamma_29,999)"
    )
