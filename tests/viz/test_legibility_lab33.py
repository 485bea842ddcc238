"""Lab 33's figure is legible at JupyterLab's default output width (see test_legibility.py)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from a2s.viz import sparsity
from tests.viz.test_legibility import assert_legible
from tests.viz.test_plots import _labelled


def _figure():
    s = [0.0, 0.25, 0.5, 0.75, 0.9]
    curves = {"global": [1.0, 1.0, 0.94, 0.51, 0.27], "per layer": [1.0, 0.99, 0.9, 0.4, 0.2]}
    return sparsity.plot_compression(
        s, curves, {"2:4 (50 %)": (0.5, 0.8)}, [4, 3], [0.0069, 0.0146], [0.0058, 0.0081]
    )


def test_compression_plot_is_legible() -> None:
    assert_legible(Path(__file__).stem, _figure)


def test_compression_plot_is_labelled() -> None:
    _labelled(_figure())
