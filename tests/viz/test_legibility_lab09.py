"""Lab 09's figures are legible at JupyterLab's default output width."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

from a2s.viz import transformer as viz
from minitorch.model.positions import alibi_bias
from tests.viz.test_legibility import assert_legible

pytestmark = pytest.mark.lab09

_D = np.arange(16)
FIGURES = {
    "09-positions": lambda: viz.plot_positions(
        _D, alibi_bias(8, 16, np.float64)[:, -1, ::-1], {"q = k": np.cos(_D * 0.3) * 8}
    ),
    "09-loss": lambda: viz.plot_training_loss(
        {"course Tensor": np.exp(-np.linspace(0, 5, 300)) * 2.7}, target=0.1
    ),
}


@pytest.mark.parametrize("name", FIGURES)
def test_lab09_figure_is_legible(name: str) -> None:
    assert_legible(name, FIGURES[name])
