"""Image-like data generated in code: ten noisy line-drawn shapes on a small grid.

Each sample is one of ten 8x8 glyphs (bars, diagonals, plus, cross, box, ring, L, T) drawn
at a random position of a ``size`` x ``size`` canvas with a random brightness, plus
Gaussian pixel noise. A nearest-centroid classifier gets about 85% of the test set (the
shift blurs the centroids), a small MLP over 90%: enough signal to learn in seconds,
enough noise that the loss curve has something to show.

    x, y = make_shapes(3000, seed=0)      # x: (3000, 10, 10) float32, y: (3000,) int64
    x_test, y_test = make_shapes(1000, seed=1)

Everything comes from one seeded ``numpy.random.Generator``: the same seed gives the
same bytes on every machine. No download, no file.

Lab: 04_training_loop
"""

from __future__ import annotations

import numpy as np

__all__ = ["GLYPH", "SHAPE_NAMES", "glyphs", "make_shapes"]

GLYPH = 8  # side of a glyph, pixels
SHAPE_NAMES: tuple[str, ...] = (
    "h-bar",
    "v-bar",
    "diagonal",
    "anti-diag",
    "plus",
    "cross",
    "box",
    "ring",
    "L",
    "T",
)


def glyphs() -> np.ndarray:
    """The ten clean templates, one per class: (10, 8, 8) float32 of 0s and 1s."""
    k = GLYPH
    g = np.zeros((len(SHAPE_NAMES), k, k), np.float32)
    i = np.arange(k)
    mid = slice(k // 2 - 1, k // 2 + 1)  # a two-pixel stroke through the centre
    g[0, mid, :] = 1
    g[1, :, mid] = 1
    g[2, i, i] = 1
    g[3, i, k - 1 - i] = 1
    g[4, mid, :] = 1
    g[4, :, mid] = 1
    g[5, i, i] = 1
    g[5, i, k - 1 - i] = 1
    g[6, [0, -1], :] = 1
    g[6, :, [0, -1]] = 1
    yy, xx = np.mgrid[:k, :k] - (k - 1) / 2
    r = np.hypot(yy, xx)
    g[7] = (r < k / 2 - 0.5) & (r > k / 2 - 2)
    g[8, :, 0] = 1
    g[8, -1, :] = 1
    g[9, 0, :] = 1
    g[9, :, mid] = 1
    return g


def make_shapes(
    n: int, *, size: int = 10, noise: float = 0.3, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Draw ``n`` noisy shapes: images (n, size, size) float32 and labels (n,) int64.

    Classes are balanced (``n // 10`` or one more each) and in random order. Each glyph is
    placed at a uniform random offset in ``[0, size - 8]`` on both axes, scaled by a
    brightness in [0.6, 1.0], and N(0, noise^2) is added to every pixel.
    """
    if size < GLYPH:
        raise ValueError(f"size must be at least {GLYPH}, got {size}")
    rng = np.random.default_rng(seed)
    templates = glyphs()
    labels = rng.permutation(np.arange(n) % len(SHAPE_NAMES)).astype(np.int64)
    oy = rng.integers(0, size - GLYPH + 1, n)
    ox = rng.integers(0, size - GLYPH + 1, n)
    brightness = rng.uniform(0.6, 1.0, n).astype(np.float32)
    images = np.zeros((n, size, size), np.float32)
    for j in range(n):
        window = (j, slice(oy[j], oy[j] + GLYPH), slice(ox[j], ox[j] + GLYPH))
        images[window] = templates[labels[j]] * brightness[j]
    images += rng.normal(0.0, noise, images.shape).astype(np.float32)
    return images, labels
