"""Amdahl's and Gustafson's laws, and the serial fraction fitted from measured times.

A program whose serial part takes a fraction ``f`` of its one-worker time speeds up on ``p``
workers, for a **fixed problem** (Amdahl 1967), by

$$S_A(p) = \\frac{1}{f + (1 - f)/p} \\;\\le\\; \\frac{1}{f},$$

and, for a problem **grown with p** so that the parallel part fills the workers for the same
time (Gustafson 1988, ``f`` measured on the ``p``-worker run), by the scaled speedup

$$S_G(p) = f + p(1 - f) = p - f(p - 1).$$

Fitting ``f``: under Amdahl's model the time on ``p`` workers is ``T(p) = a + b/p`` with
``a = f T_1`` and ``b = (1 - f) T_1``: a straight line in ``1/p``. Least squares over all the
measured ``(p, T)`` pairs gives ``a, b`` and ``f = a / (a + b)``.

Lab: 05_roofline
Paper: Amdahl 1967, "Validity of the single processor approach to achieving large scale
computing capabilities"; Gustafson 1988, "Reevaluating Amdahl's law", CACM 31(5)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["amdahl_speedup", "fit_serial_fraction", "gustafson_speedup"]


def amdahl_speedup(serial_fraction: float, workers: float) -> float:
    """Fixed-size speedup on ``workers``: ``1 / (f + (1 - f) / p)``."""
    f = serial_fraction
    return 1.0 / (f + (1.0 - f) / workers)


def gustafson_speedup(serial_fraction: float, workers: float) -> float:
    """Scaled speedup on ``workers``: ``f + p (1 - f)``."""
    f = serial_fraction
    return f + workers * (1.0 - f)


def fit_serial_fraction(workers: Sequence[float], seconds: Sequence[float]) -> float:
    """Least-squares fit of ``T(p) = a + b/p``; return ``a / (a + b)``, clipped to [0, 1]."""
    p = np.asarray(workers, dtype=np.float64)
    t = np.asarray(seconds, dtype=np.float64)
    if p.shape != t.shape or p.size < 2 or np.unique(p).size < 2:
        raise ValueError("need times at two or more different worker counts")
    design = np.stack([np.ones_like(p), 1.0 / p], axis=1)
    (a, b), *_ = np.linalg.lstsq(design, t, rcond=None)
    return float(np.clip(a / (a + b), 0.0, 1.0))
