"""Mesh NoC: XY routes, link loads, congestion, the one-hop ring."""

from __future__ import annotations

import numpy as np
import pytest

from minitorch.hardware import noc


def test_xy_route_goes_x_first():
    assert noc.xy_route((0, 0), (2, 1)) == [(0, 0, 0), (1, 0, 0), (2, 0, 2)]
    assert noc.xy_route((1, 1), (1, 1)) == []


def test_link_loads_add_bytes_per_link():
    loads = noc.xy_link_loads([((0, 0), (2, 0), 3.0), ((1, 0), (2, 0), 4.0)], 3, 1)
    assert loads[0, 0, 0] == 3.0 and loads[0, 1, 0] == 7.0 and loads.sum() == 10.0


def test_snake_ring_is_one_hop_and_row_major_is_not():
    snake = noc.snake_ring(4, 4)
    assert sorted(snake) == [(x, y) for x in range(4) for y in range(4)]
    traffic = noc.ring_traffic(snake, 1.0)
    assert all(len(noc.xy_route(s, t)) == 1 for s, t, _ in traffic)
    assert noc.congestion(traffic, 4, 4) == 1
    row = noc.ring_traffic([(i % 4, i // 4) for i in range(16)], 1.0)
    assert noc.congestion(row, 4, 4) == 2
    t_snake = noc.pattern_seconds(traffic, 4, 4, 1e9, 1e-9)
    assert t_snake == pytest.approx(1e-9 + 1e-9)
    assert noc.pattern_seconds(row, 4, 4, 1e9, 1e-9) > t_snake
    assert np.isclose(noc.xy_link_loads(traffic, 4, 4).max(), 1.0)
    with pytest.raises(ValueError):
        noc.snake_ring(3, 3)
