"""Lab 07's figures are legible at JupyterLab's width (the checks of test_legibility.py)."""

from __future__ import annotations

import pytest

from a2s.viz import simt
from tests.viz.test_legibility import assert_legible

STRIDES = [1, 2, 3, 4, 6, 8, 16, 32]
FIGURES = {
    "07-strided": lambda: simt.plot_strided_sectors(
        STRIDES, [min(32, 4 * s) for s in STRIDES], [min(32, 4 * s) for s in STRIDES]
    ),
    "07-variants": lambda: simt.plot_variant_costs(
        {
            "vector add (yours)": (1.0, 0.0),
            "reduction, interleaved": (1.0, 2.6),
            "reduction, divergent": (1.0, 3.33),
            "reduction, sequential (yours)": (1.0, 1.0),
            "matmul, untiled": (8.0, 1.0),
            "matmul, 16x16 tiles (yours)": (1.0, 1.0),
            "transpose, direct": (4.5, 1.0),
            "transpose, 32x32 tile": (1.0, 16.5),
            "transpose, 32x33 tile (yours)": (1.0, 1.0),
        }
    ),
}


@pytest.mark.parametrize("name", FIGURES)
def test_lab07_figure_is_legible_at_lab_width(name: str) -> None:
    assert_legible(name, FIGURES[name])
