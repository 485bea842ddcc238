"""Lab 23's figures are legible at JupyterLab's default output width (see test_legibility.py)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")


from a2s.viz import parallel_data
from tests.viz.test_legibility import assert_legible


def test_bucket_overlap_plot_is_legible() -> None:
    sizes = [2**k for k in range(10, 31, 2)]
    exposed = [0.02 - 0.001 * k for k in range(len(sizes))]
    fig = parallel_data.plot_bucket_overlap(sizes, exposed, 0.03, prediction=0.03)
    assert_legible(Path(__file__).stem + "_overlap", lambda: fig)


def test_zero_memory_plot_is_legible() -> None:
    ns = [1, 2, 4, 8, 16]
    measured = {f"stage {s}": [1.0 / (1 + s * n) for n in ns] for s in range(4)}
    fig = parallel_data.plot_zero_memory(ns, measured, measured)
    assert_legible(Path(__file__).stem + "_zero", lambda: fig)
