"""Lab 10's figures are legible at JupyterLab's default output width."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from matplotlib.figure import Figure

from a2s.viz import moe
from tests.viz.test_legibility import assert_legible

_STEPS = np.arange(300)

FIGURES: dict[str, Callable[[], Figure]] = {
    "10-capacity": lambda: moe.plot_capacity(
        [0.5, 0.75, 1.0, 1.25, 1.5, 2.0],
        [700, 520, 380, 260, 170, 40],
        [700, 520, 380, 260, 170, 40],
        [180_000, 60_000, 40_000, 30_000],
        82_000,
    ),
    "10-load-balance": lambda: moe.plot_load_balance(
        {
            "no balancing loss": list(0.7 + 0.3 * (1 - np.exp(-_STEPS / 50))),
            "with balancing loss (0.1)": list(0.7 * np.exp(-_STEPS / 60) + 0.1),
        },
        {"no balancing loss": [0, 0, 66, 62], "with balancing loss (0.1)": [30, 36, 29, 33]},
    ),
}


@pytest.mark.parametrize("name", FIGURES)
def test_figure_is_legible_at_lab_width(name: str) -> None:
    assert_legible(name, FIGURES[name])
