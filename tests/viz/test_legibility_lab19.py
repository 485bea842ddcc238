"""Lab 19's figures are legible at JupyterLab's default output width (see test_legibility.py)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np

from a2s.viz import batching
from tests.viz.test_legibility import assert_legible


def test_batching_plot_is_legible() -> None:
    g = np.random.default_rng(0)
    t = np.cumsum(g.exponential(0.02, 3000)).tolist()
    runs = {
        "static": (t, g.integers(0, 400, 3000).tolist(), g.integers(1, 65, 3000).tolist()),
        "continuous": (t, g.integers(0, 40, 3000).tolist(), g.integers(1, 65, 3000).tolist()),
    }
    fig = batching.plot_batching(runs)
    assert_legible(Path(__file__).stem, lambda: fig)


def test_token_latency_plot_is_legible() -> None:
    g = np.random.default_rng(0)
    gaps = {
        "whole prompts": g.lognormal(-3.5, 0.6, 5000),
        "chunked, 512": g.lognormal(-3.7, 0.3, 5000),
    }
    fig = batching.plot_token_latency(gaps)
    assert_legible(Path(__file__).stem + "_latency", lambda: fig)
