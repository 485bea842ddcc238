"""Lab 32's figure is legible at JupyterLab's default output width."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from matplotlib.figure import Figure

from a2s.viz import elastic
from tests.viz.test_legibility import assert_legible


def _recovery() -> Figure:
    full = list(np.linspace(1.0, 0.2, 24))
    taus = list(np.geomspace(0.2, 5.0, 12))
    wall = [200 + 10 * (np.log(t)) ** 2 for t in taus]
    marks = {"Young": 1.0, "Daly": 0.95, "yours": 0.95}
    return elastic.plot_recovery(full, full[:14], full[12:], 14, 12, taus, wall, marks, "lab 32")


def _stalls() -> Figure:
    return elastic.plot_stalls([0.09, 0.08, 0.085], [0.012, 0.011, 0.013], 32.0, "lab 32")


FIGURES: dict[str, Callable[[], Figure]] = {"32-recovery": _recovery, "32-stalls": _stalls}


@pytest.mark.parametrize("name", FIGURES)
def test_lab32_figure_is_legible(name: str) -> None:
    assert_legible(name, FIGURES[name])


def test_recovery_draws_three_runs_and_a_line_per_mark() -> None:
    fig = _recovery()
    left, right = fig.axes
    assert len(left.lines) == 4  # uninterrupted, failed, resumed, the failure's line
    assert len(right.lines) == 1 + 3
    resumed = left.lines[2]
    assert list(resumed.get_xdata()) == list(range(13, 25))


def test_stalls_draws_a_pair_of_bars_per_save() -> None:
    (ax,) = _stalls().axes
    assert len(ax.patches) == 6
