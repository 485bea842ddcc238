"""Lab 18's figure is legible at JupyterLab's default output width (see test_legibility.py)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np

from a2s.viz import kv_cache
from tests.viz.test_legibility import assert_legible


def test_kv_memory_plot_is_legible() -> None:
    steps = list(range(600))
    stored = [30_000 * np.exp(-s / 300) + 100 for s in steps]
    paged = [x * 1.02 for x in stored]
    reserved = [131_072 * np.exp(-s / 400) for s in steps]
    sizes = [1, 2, 4, 8, 16, 32, 64, 128, 256]
    waste = [0.0, 0.002, 0.005, 0.01, 0.02, 0.04, 0.08, 0.15, 0.3]
    fig = kv_cache.plot_kv_memory(steps, stored, paged, reserved, sizes, waste, 0.78)
    assert_legible(Path(__file__).stem, lambda: fig)
