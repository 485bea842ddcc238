"""Lab 11's figures are legible at JupyterLab's default output width (see test_legibility.py)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pytest
from matplotlib.figure import Figure

from a2s.viz import quant
from tests.viz.test_legibility import assert_legible


def _layer() -> Figure:
    return quant.plot_layer_error(
        [2, 3, 4, 8], {"RTN": [0.3, 0.03, 0.007, 3e-5], "GPTQ": [0.1, 0.015, 0.003, 2e-5]}
    )


def _model() -> Figure:
    names = ["FP32", "INT8", "INT4 RTN", "INT4 GPTQ", "INT4 AWQ", "INT3 RTN", "INT3 GPTQ"]
    losses = [0.0043, 0.0043, 0.0054, 0.0045, 0.0047, 0.0178, 0.0051]
    nbytes = [368640, 94592, 63360, 63360, 63360, 51840, 51840]
    return quant.plot_model_quant(names, losses, nbytes, 0.0043)


@pytest.mark.parametrize("make", [_layer, _model], ids=["layer_error", "model_quant"])
def test_lab11_figures_are_legible(make) -> None:
    fig = make()
    assert_legible(Path(__file__).stem, lambda: fig)
