"""The tile-size search: warm-up dropped, median ranked, ties to the smaller tile."""

from __future__ import annotations

import numpy as np
import pytest

from minitorch.kernels.tiling import gflops, measure_tiled, tile_search


def test_median_after_warmup_picks_the_right_tile():
    runs = {8: [9.0, 1.0, 5.0, 5.0], 16: [0.1, 3.0, 3.0, 40.0], 32: [1.0, 4.0, 0.5, 4.0]}
    calls = {t: 0 for t in runs}

    def measure(tile):
        calls[tile] += 1
        return runs[tile][calls[tile] - 1]

    best, medians = tile_search(measure, [8, 16, 32], repeats=3, warmup=1)
    assert calls == {8: 4, 16: 4, 32: 4}
    assert medians == {8: 5.0, 16: 3.0, 32: 4.0}  # a mean would pick 32, a minimum 32
    assert best == 16


def test_ties_go_to_the_smaller_tile():
    assert tile_search(lambda t: 1.0, [64, 32], repeats=1)[0] == 32


def test_measure_tiled_times_both_sides():
    g = np.random.default_rng(0)
    measure = measure_tiled(g.standard_normal((32, 32)), g.standard_normal((32, 32)))
    assert measure(0) > 0 and measure(8) > 0
    assert gflops(10, 10, 10, 1e-6) == pytest.approx(2.0)
