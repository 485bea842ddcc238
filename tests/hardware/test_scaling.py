"""Amdahl, Gustafson and the fitted serial fraction against closed forms."""

from __future__ import annotations

import numpy as np
import pytest

from minitorch.hardware import amdahl_speedup, fit_serial_fraction, gustafson_speedup


def test_laws_at_known_points() -> None:
    assert amdahl_speedup(0.25, 4) == pytest.approx(16 / 7)
    assert gustafson_speedup(0.25, 4) == pytest.approx(3.25)
    assert amdahl_speedup(0.0, 64) == pytest.approx(64)
    assert amdahl_speedup(1.0, 64) == pytest.approx(1)
    assert amdahl_speedup(0.05, 1e9) == pytest.approx(20, rel=1e-6)  # the cap 1/f
    for f in (0.0, 0.3, 1.0):
        assert amdahl_speedup(f, 1) == pytest.approx(1) == gustafson_speedup(f, 1)


def test_gustafson_never_below_amdahl() -> None:
    for f in np.linspace(0, 1, 11):
        for p in (1, 2, 8, 100):
            assert gustafson_speedup(f, p) >= amdahl_speedup(f, p) - 1e-12


@pytest.mark.parametrize("f", [0.0, 0.1, 0.5, 0.9])
def test_fit_recovers_exact_fraction(f: float) -> None:
    p = [1, 2, 4, 8]
    t = [3.7 * (f + (1 - f) / q) for q in p]
    assert fit_serial_fraction(p, t) == pytest.approx(f, abs=1e-12)


def test_fit_is_least_squares_with_repeats() -> None:
    p, t = [1, 2, 1, 2, 4], [2.0, 1.3, 2.1, 1.2, 0.9]
    a, b = np.polyfit(1 / np.asarray(p, float), t, 1)[::-1]
    assert fit_serial_fraction(p, t) == pytest.approx(a / (a + b))


def test_fit_needs_two_worker_counts() -> None:
    with pytest.raises(ValueError):
        fit_serial_fraction([2, 2], [1.0, 1.1])
