"""Lab 13's figure is legible at JupyterLab's default output width (see test_legibility.py)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np

from a2s.viz import graph as viz
from minitorch.compiler import capture, models
from tests.viz.test_legibility import assert_legible


def test_attention_graph_is_legible() -> None:
    fn, _ = models.attention_block(16, 2)
    g = capture.trace(fn, [np.zeros((5, 16), np.float32)])
    assert_legible(Path(__file__).stem, lambda: viz.plot_graph(g))
