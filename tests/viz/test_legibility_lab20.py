"""Lab 20's figure is legible at JupyterLab's default output width (see test_legibility.py)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")


from a2s.viz import comm
from tests.viz.test_legibility import assert_legible


def test_collective_costs_plot_is_legible() -> None:
    ps = [1, 2, 4, 8]
    busiest = {
        "broadcast": [0, 1, 3, 7],
        "all-reduce (naive)": [0, 1, 3, 7],
        "all-gather": [0, 0.5, 0.75, 0.875],
    }
    sizes = [8, 800, 80_000, 8_000_000]
    times = {"all-reduce p=8": [1e-5, 2e-5, 1e-3, 1e-1]}
    fig = comm.plot_collective_costs(ps, busiest, sizes, times, formula=times)
    assert_legible(Path(__file__).stem, lambda: fig)
