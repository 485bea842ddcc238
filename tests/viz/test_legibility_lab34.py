"""Lab 34's figure is legible at JupyterLab's default output width (see test_legibility.py)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from a2s.viz import speculative
from tests.viz.test_legibility import assert_legible


def _curve(alpha: float, gammas: list[int]) -> list[float]:
    return [sum(alpha**i for i in range(g + 1)) for g in gammas]


def test_tokens_per_pass_plot_is_legible() -> None:
    gammas = list(range(1, 9))
    alphas = (0.5, 0.7, 0.9)
    pred = {a: _curve(a, gammas) for a in alphas}
    meas = {a: [x * 1.01 for x in pred[a]] for a in alphas}
    fig = speculative.plot_tokens_per_pass(gammas, pred, meas, "i.i.d. acceptance")
    assert_legible(Path(__file__).stem, lambda: fig)
