"""Lab 21's figures are legible at JupyterLab's default output width (see test_legibility.py)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")


from a2s.viz import allreduce
from tests.viz.test_legibility import assert_legible


def test_crossover_plot_is_legible() -> None:
    sizes = [8, 800, 80_000, 8_000_000]
    times = {"tree": [6e-5, 6e-5, 7e-5, 5e-3], "ring": [1e-4, 1e-4, 1e-4, 2e-3]}
    fig = allreduce.plot_crossover(sizes, times, times, crossover=90_000)
    assert_legible(Path(__file__).stem + "_crossover", lambda: fig)


def test_bus_bandwidth_plot_is_legible() -> None:
    sizes = [4e3, 4e5, 4e7]
    fig = allreduce.plot_bus_bandwidth(
        sizes, {"your ring": [0.1e9, 0.5e9, 0.6e9], "gloo": [0.2e9, 0.6e9, 0.7e9]}
    )
    assert_legible(Path(__file__).stem + "_busbw", lambda: fig)
