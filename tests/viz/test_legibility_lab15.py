"""Lab 15's figures are legible at JupyterLab's default output width."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from matplotlib.figure import Figure

from a2s.viz import autotune
from tests.viz.test_legibility import assert_legible

_GEN = np.random.default_rng(0)

FIGURES: dict[str, Callable[[], Figure]] = {
    "15-schedule-misses": lambda: autotune.plot_schedule_misses(
        ["ijk (source order)", "ikj (interchange)", "split i, j only", "yours: split + reorder"],
        [33_024, 4_352, 33_408, 1_152],
        2_304,
    ),
    "15-search": lambda: autotune.plot_search(
        {
            "grid (all 192)": list(_GEN.uniform(288, 9000, 192)),
            "random (48)": list(_GEN.uniform(288, 9000, 48)),
            "model-guided (48)": list(np.linspace(4600, 288, 48)),
            "wall-time guided": list(_GEN.uniform(300, 2000, 48)),
        },
        288,
        48,
        192,
    ),
}


@pytest.mark.parametrize("name", FIGURES)
def test_figure_is_legible_at_lab_width(name: str) -> None:
    assert_legible(name, FIGURES[name])
