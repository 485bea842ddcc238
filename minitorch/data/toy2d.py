"""Two-class 2-D toy datasets, generated from a seed: interleaved moons and twin spirals.

Both return points ``X: (n, 2) float64`` and labels ``y: (n,) int64`` in {0, 1}, class 0
first (``n // 2`` points, the odd one to class 1), then shuffled with the same seed.
``signed(y)`` maps labels to -1/+1 for margin losses (hinge, logistic).

    X, y = make_moons(100, noise=0.1, seed=0)      # two half circles, one upside down
    X, y = make_spirals(200, turns=1.5, seed=0)    # two arms winding around the origin

Lab: 02_autograd_scalar
"""

from __future__ import annotations

import numpy as np

__all__ = ["make_moons", "make_spirals", "signed"]


def _split(n: int) -> tuple[int, int]:
    if n < 2:
        raise ValueError(f"need at least 2 points (one per class), got n={n}")
    return n // 2, n - n // 2


def _finish(
    parts: tuple[np.ndarray, np.ndarray], noise: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Stack both classes, add Gaussian noise, shuffle (all from one generator)."""
    x = np.concatenate(parts)  # (n, 2)
    y = np.concatenate([np.zeros(len(parts[0]), np.int64), np.ones(len(parts[1]), np.int64)])
    if noise:
        x = x + noise * rng.standard_normal(x.shape)
    perm = rng.permutation(len(x))
    return x[perm], y[perm]


def make_moons(n: int, noise: float = 0.1, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two interleaved half circles of radius 1.

    Class 0: (cos t, sin t) for t in [0, pi]; class 1: (1 - cos t, 1/2 - sin t). Angles are
    evenly spaced (not random), so ``noise=0`` gives points exactly on the two arcs.
    """
    n0, n1 = _split(n)
    t0, t1 = np.linspace(0, np.pi, n0), np.linspace(0, np.pi, n1)
    upper = np.stack([np.cos(t0), np.sin(t0)], axis=1)
    lower = np.stack([1 - np.cos(t1), 0.5 - np.sin(t1)], axis=1)
    return _finish((upper, lower), noise, np.random.default_rng(seed))


def make_spirals(
    n: int, turns: float = 1.25, noise: float = 0.05, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Two spiral arms, class 1 the point reflection of class 0, radius growing to 1.

    Arm 0: r (cos a, sin a) with r = t and a = 2 pi turns t, for t evenly spaced in
    [0.1, 1]; arm 1 is -(arm 0). More ``turns`` make the classes harder to separate.
    """
    n0, n1 = _split(n)

    def arm(m: int, sign: float) -> np.ndarray:
        t = np.linspace(0.1, 1.0, m)
        a = 2 * np.pi * turns * t
        return sign * np.stack([t * np.cos(a), t * np.sin(a)], axis=1)

    return _finish((arm(n0, 1.0), arm(n1, -1.0)), noise, np.random.default_rng(seed))


def signed(y: np.ndarray) -> np.ndarray:
    """Map labels {0, 1} to {-1.0, +1.0}."""
    return 2.0 * np.asarray(y, dtype=np.float64) - 1.0
