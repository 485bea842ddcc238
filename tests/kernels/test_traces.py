"""Traces of loop nests against a plain loop, and the miss formulas against the simulator."""

from __future__ import annotations

import numpy as np
import pytest

from minitorch.hardware.cache import CacheConfig, simulate
from minitorch.kernels.traces import (
    ORDERS,
    blocked_trace,
    loop_trace,
    predicted_misses,
    tiled_misses,
)


def plain_trace(n: int, order: str) -> list[int]:
    out = []
    for x in range(n):
        for y in range(n):
            for z in range(n):
                v = dict(zip(order, (x, y, z), strict=True))
                i, j, k = v["i"], v["j"], v["k"]
                out += [8 * (i * n + k), 8 * (n * n + k * n + j), 8 * (2 * n * n + i * n + j)]
    return out


@pytest.mark.parametrize("order", ORDERS)
def test_loop_trace_matches_a_plain_loop(order):
    assert loop_trace(5, order).tolist() == plain_trace(5, order)
    assert loop_trace(5, order).dtype == np.int64


@pytest.mark.parametrize(("n", "tile"), [(8, 4), (10, 4), (5, 8), (7, 1)])
def test_blocked_trace_visits_every_iteration_once_tile_by_tile(n, tile):
    t = blocked_trace(n, tile).reshape(-1, 3)
    assert sorted(map(tuple, t.tolist())) == sorted(
        map(tuple, np.asarray(plain_trace(n, "ijk")).reshape(-1, 3).tolist())
    )
    i = t[:, 0] // 8 // n  # the row of A: i changes only inside a tile's rows first
    assert (i[: min(tile, n) ** 3] < tile).all()


@pytest.mark.parametrize("order", ["ijk", "ikj", "jki"])
def test_predicted_misses_within_two_percent_of_the_simulator(order):
    (stats,) = simulate(loop_trace(64, order), CacheConfig(512, 64, 8))
    assert stats.misses == pytest.approx(predicted_misses(64, order, 8), rel=0.02)


def test_tiled_misses_exact_when_three_tiles_fit():
    small = CacheConfig(2048, 64, 32)
    for n in (32, 64):
        (stats,) = simulate(blocked_trace(n, 8), small)
        assert stats.misses == tiled_misses(n, 8, 8)
        (ikj,) = simulate(loop_trace(n, "ikj"), small)
        assert ikj.misses > 3.5 * stats.misses


def test_bad_order_rejected():
    with pytest.raises(ValueError):
        loop_trace(2, "iik")
