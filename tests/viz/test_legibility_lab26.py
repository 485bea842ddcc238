"""Lab 26's figures are legible at JupyterLab's default output width (see test_legibility.py)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from a2s.viz import planner as viz
from minitorch.parallel.planner import PUBLISHED, plan
from tests.viz.test_legibility import assert_legible


def test_context_bytes_plot_is_legible() -> None:
    series = {
        "ring (K, V)": [2, 4, 6, 14],
        "Ulysses (Q, K, V, O)": [2, 2.7, 3, 3.5],
        "all-gather K, V": [2, 4, 6, 14],
    }
    fig = viz.plot_context_bytes([2, 3, 4, 8], series)
    assert_legible(Path(__file__).stem + "_bytes", lambda: fig)


def test_plan_plot_is_legible() -> None:
    pub = PUBLISHED["1T"]
    ranked = plan(pub.model, pub.cluster, pub.batch)[:6]
    labels = [str(e.layout) for e in ranked]
    fig = viz.plot_plan(
        labels, [e.time for e in ranked], "1T GPT on 3072 A100s: the 6 fastest that fit"
    )
    assert_legible(Path(__file__).stem + "_plan", lambda: fig)
