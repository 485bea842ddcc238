"""Lab 06's figures are legible at JupyterLab's default output width."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from matplotlib.figure import Figure

from a2s.viz import tiling
from tests.viz.test_legibility import assert_legible

ORDERS = ("ijk", "ikj", "jik", "jki", "kij", "kji")
NS = [16, 24, 32, 40, 48, 56, 64]

FIGURES: dict[str, Callable[[], Figure]] = {
    "06-loop-orders": lambda: tiling.plot_loop_orders(
        ORDERS,
        [294_912, 65_536, 294_912, 524_288, 65_536, 524_288],
        [295_424, 66_048, 299_008, 528_384, 69_632, 524_800],
        64,
    ),
    "06-traffic": lambda: tiling.plot_traffic(
        NS,
        {
            "ikj (best loop order)": [n**3 / 8 * 1.05 for n in NS],
            "blocked, T=8": [n**3 / 32 + n * n / 8 for n in NS],
        },
        {"$n^3/L$": [n**3 / 8 for n in NS], "$2n^3/(TL) + n^2/L$": [n**3 / 32 for n in NS]},
        "2 KiB fully associative cache",
    ),
    "06-tile-search": lambda: tiling.plot_tile_search(
        [16, 32, 64, 128, 256], [1.6, 6.9, 16.7, 46.6, 52.9], 59.9, 256, 512
    ),
}


@pytest.mark.parametrize("name", FIGURES)
def test_figure_is_legible_at_lab_width(name: str) -> None:
    assert_legible(name, FIGURES[name])
