"""Lab 22's figure is legible at JupyterLab's default output width (see test_legibility.py)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np

from a2s.viz import transport
from tests.viz.test_legibility import assert_legible


def test_alpha_beta_plot_is_legible() -> None:
    sizes = [2**k for k in range(0, 23, 2)]
    n = np.asarray(sizes, dtype=np.float64)
    series = {
        "TCP socket": (list(1e-5 + n * 3e-10), 1e-5, 3e-10),
        "gloo": (list(3e-5 + n * 5e-10), 3e-5, 5e-10),
    }
    fig = transport.plot_alpha_beta(sizes, series)
    assert_legible(Path(__file__).stem, lambda: fig)
