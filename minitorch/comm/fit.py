"""The alpha-beta (Hockney) model of a message: t(n) = alpha + n * beta, fitted by least squares.

``alpha`` is the per-message latency (seconds), ``beta`` the per-byte time (1 / bandwidth).
The fit minimises sum_i (t_i - alpha - n_i beta)^2, whose closed form is

    beta = sum (n_i - n̄)(t_i - t̄) / sum (n_i - n̄)^2,    alpha = t̄ - beta n̄.

Over sizes spanning many decades the squared errors of the largest messages dominate, so the
intercept of one global fit is not a latency (it can even be negative): :func:`fit_regimes`
takes alpha from the small sizes and beta from all of them. ``alpha / beta`` is the
half-bandwidth size n_1/2, where start-up and transfer cost the same.

Lab: 22 (RDMA and transport).
Paper: Hockney, "The communication challenge for MPP: Intel Paragon and Meiko CS-2",
Parallel Computing 20(3), 1994.
"""

from __future__ import annotations

import numpy as np

__all__ = ["fit_alpha_beta", "fit_regimes", "half_bandwidth_size", "predict_time"]


def fit_alpha_beta(sizes: np.ndarray, times: np.ndarray) -> tuple[float, float]:
    """Least-squares ``(alpha, beta)`` of ``times ≈ alpha + sizes * beta`` (two distinct sizes+)."""
    n = np.asarray(sizes, dtype=np.float64)
    t = np.asarray(times, dtype=np.float64)
    if n.shape != t.shape or n.size < 2 or np.ptp(n) == 0:
        raise ValueError("need matching sizes and times with at least two distinct sizes")
    dn, dt = n - n.mean(), t - t.mean()
    beta = float((dn * dt).sum() / (dn * dn).sum())
    return float(t.mean() - beta * n.mean()), beta


def predict_time(alpha: float, beta: float, nbytes: int | np.ndarray) -> float | np.ndarray:
    """The model's time of a message of ``nbytes``."""
    if np.ndim(nbytes):
        return alpha + np.asarray(nbytes, dtype=np.float64) * beta
    return float(alpha + float(nbytes) * beta)


def fit_regimes(sizes: np.ndarray, times: np.ndarray, small: int = 4096) -> tuple[float, float]:
    """``(alpha, beta)``: alpha from the fit over sizes <= ``small``, beta from all sizes."""
    n = np.asarray(sizes, dtype=np.float64)
    t = np.asarray(times, dtype=np.float64)
    keep = n <= small
    alpha = fit_alpha_beta(n[keep], t[keep])[0]
    return alpha, fit_alpha_beta(n, t)[1]


def half_bandwidth_size(alpha: float, beta: float) -> float:
    """n_1/2 = alpha / beta: the message size whose transfer time equals the start-up."""
    if beta <= 0:
        raise ValueError("beta must be positive")
    return alpha / beta
