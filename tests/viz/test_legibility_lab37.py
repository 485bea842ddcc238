"""Lab 37's figure is legible at JupyterLab's default output width (see test_legibility.py)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from a2s.viz import native
from tests.viz.test_legibility import assert_legible


def test_native_plot_is_legible() -> None:
    sizes = [1, 4, 16, 64]
    pages = [256 * s for s in sizes]
    faults = {"read": [p + 2 for p in pages], "mmap": [2, 3, 9, 32]}
    misses = {"ijk n=32": (4200, 4210), "ikj n=32": (1300, 1301), "tiled n=48": (5000, None)}
    fig = native.plot_native(sizes, faults, pages, misses, "lab 37")
    assert_legible(Path(__file__).stem, lambda: fig)
    assert len(fig.axes) == 2
    assert len(fig.axes[1].patches) == 5  # three model bars, two measured (one absent)
