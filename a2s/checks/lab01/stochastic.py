"""Grader of stretch exercise 01.7: stochastic rounding to BF16, checked statistically."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.compare import array_out
from a2s.checks.core import assert_true, fresh_rng, grader, plain

__all__ = ["check_stochastic_round"]

_N = "minitorch.numerics"


def _sr_out(student: Callable[..., object], x: np.ndarray, seed: int, case: str) -> np.ndarray:
    got = student(x.copy(), np.random.default_rng(seed))
    return array_out(got, case=case, shape=x.shape, dtype=np.float32, dtype_hint="return float32.")


def _unbiased(
    student: Callable[..., object], value: float, p: float, n: int, seed: int, case: str
) -> None:
    """n draws at ``value``: each a BF16 neighbour, rounded up with probability p (6 sigma)."""
    x = np.full(n, value, np.float32)
    got = _sr_out(student, x, seed, case)
    w = x.view(np.uint32)
    down = (w & 0xFFFF0000).view(np.float32)
    up = ((w & 0xFFFF0000) + 0x10000).view(np.float32)
    assert_true(
        bool(((got == down) | (got == up)).all()),
        f"[{case}] results must be one of the two BF16 neighbours {down[0]!r} and "
        f"{up[0]!r}; got e.g. {got[(got != down) & (got != up)][:1]}.",
    )
    p_up = float((got == up).mean())
    sigma = math.sqrt(p * (1 - p) / n)
    assert_true(
        abs(p_up - p) <= 6 * sigma,
        f"[{case}] rounded away from zero in {p_up:.4f} of draws; unbiased rounding "
        f"needs probability (|x| - down) / (up - down) = {p:.4f} (6 sigma = "
        f"{6 * sigma:.4f}). Round-to-nearest never rounds up below half-way; a coin "
        "flip is unbiased only at ties.",
    )


@grader("01.7", blocks=(f"{_N}.stochastic:stochastic_round_to_bf16",), hand="property")
def check_stochastic_round(stochastic_round_bf16: Callable[..., object]) -> str:
    """Stretch 01.7: stochastic rounding to BF16: bracketing, unbiased, seeded."""
    exact = np.array([1.0, -2.5, 0.0, 2.0**-133, 3.3895314e38, np.inf, -np.inf], np.float32)
    got = _sr_out(stochastic_round_bf16, exact, 0, "values already in BF16")
    assert_true(
        np.array_equal(got, exact),
        f"[values already in BF16] {exact} became {got}: values on the BF16 grid must not move.",
    )
    got = _sr_out(stochastic_round_bf16, np.array([np.nan], np.float32), 0, "NaN")
    assert_true(bool(np.isnan(got).all()), "[NaN] NaN must stay NaN (not inf: handle it first).")
    n, samples = 100_000, 0
    for value, p in (
        (1.0 + 2.0**-10, 1 / 8),
        (1.0 + 2.0**-8, 1 / 2),
        (-(1.0 + 5 * 2.0**-10), 5 / 8),
    ):
        _unbiased(stochastic_round_bf16, value, p, n, 1, f"x = {value!r}")
        samples += n
    new = fresh_rng("01.7")  # a fresh position between two BF16 values, and a fresh seed
    low, sign = int(new.integers(1 << 12, 15 << 12)), float(new.choice([-1.0, 1.0]))
    high = int(new.integers(0x3000, 0x4F00)) << 16  # exponents around 1: 2^-31 .. 2^31
    value = sign * float(np.array([high | low], np.uint32).view(np.float32)[0])
    _unbiased(
        stochastic_round_bf16,
        value,
        low / 65536,
        50_000,
        int(new.integers(1 << 30)),
        fresh(f"x = {value!r}"),
    )
    samples += 50_000
    y = np.linspace(-3, 3, 1000, dtype=np.float32)
    a, b = (_sr_out(stochastic_round_bf16, y, s, "seeded") for s in (7, 7))
    c = _sr_out(stochastic_round_bf16, y, 8, "seeded")
    assert_true(
        np.array_equal(a, b) and not np.array_equal(a, c),
        "[seeded] use the generator passed in (rng.integers / rng.random): the same "
        "seed must give the same result and another seed a different one.",
    )
    walkers, steps = np.ones(64, np.float32), 2000
    gen = np.random.default_rng(9)
    for _ in range(steps):
        walkers = np.asarray(plain(stochastic_round_bf16(walkers + np.float32(2.0**-10), gen)))
    mean, target = float(walkers.astype(np.float64).mean()), 1.0 + steps * 2.0**-10
    assert_true(
        abs(mean - target) < 0.15,
        f"[accumulation] 64 BF16 accumulators of {steps} x 2^-10 average {mean:.3f}, "
        f"expected about {target:.3f}.",
    )
    return (
        f"{samples:,} roundings unbiased within 6 sigma; {steps} updates of 2^-10 to BF16 "
        f"1.0 average {mean:.2f} (round-to-nearest stays at 1.00)"
    )
