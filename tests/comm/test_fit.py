"""The alpha-beta fit against numpy's least squares and exact lines."""

from __future__ import annotations

import numpy as np
import pytest

from minitorch.comm.fit import fit_alpha_beta, fit_regimes, half_bandwidth_size, predict_time


def test_exact_line_is_recovered() -> None:
    n = np.array([1.0, 1e3, 1e6, 4e6])
    a, b = fit_alpha_beta(n, 3e-6 + n * 1e-10)
    assert a == pytest.approx(3e-6, rel=1e-9) and b == pytest.approx(1e-10, rel=1e-9)


def test_matches_lstsq_on_noise() -> None:
    g = np.random.default_rng(0)
    n = g.uniform(0, 1e6, 20)
    t = 1e-5 + n * 2e-10 + g.normal(0, 1e-6, 20)
    (a, b), *_ = np.linalg.lstsq(np.stack([np.ones_like(n), n], 1), t, rcond=None)
    assert fit_alpha_beta(n, t) == pytest.approx((a, b), rel=1e-9)


def test_predict_and_errors() -> None:
    assert predict_time(1.0, 2.0, 3) == 7.0
    assert predict_time(1.0, 2.0, np.array([0, 1])).tolist() == [1.0, 3.0]
    with pytest.raises(ValueError):
        fit_alpha_beta(np.array([5.0, 5.0]), np.array([1.0, 2.0]))


def test_regimes_take_latency_from_small_sizes() -> None:
    n = np.array([1.0, 64, 1024, 4096, 1 << 20, 1 << 22])
    t = 1e-5 + n * 3e-10
    t[n > 4096] *= 1.2  # large messages off the line: a global intercept would be wrong
    alpha, beta = fit_regimes(n, t)
    assert alpha == pytest.approx(1e-5, rel=1e-6) and beta > 3e-10
    assert half_bandwidth_size(1e-5, 1e-10) == pytest.approx(1e5)
    with pytest.raises(ValueError):
        half_bandwidth_size(1.0, 0.0)
