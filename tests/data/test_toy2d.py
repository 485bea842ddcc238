"""The 2-D toy datasets: shapes, balance, determinism, and the geometry they promise."""

from __future__ import annotations

import numpy as np
import pytest

from minitorch.data.toy2d import make_moons, make_spirals, signed


@pytest.mark.parametrize("make", [make_moons, make_spirals])
@pytest.mark.parametrize("n", [2, 7, 100])
def test_shapes_dtypes_and_balance(make, n: int) -> None:
    x, y = make(n, seed=3)
    assert x.shape == (n, 2) and x.dtype == np.float64
    assert y.shape == (n,) and y.dtype == np.int64
    assert set(np.unique(y)) <= {0, 1}
    assert int((y == 0).sum()) == n // 2


@pytest.mark.parametrize("make", [make_moons, make_spirals])
def test_same_seed_same_data_other_seed_other_data(make) -> None:
    a, b = make(50, seed=1), make(50, seed=1)
    c = make(50, seed=2)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert not np.array_equal(a[0], c[0])


def test_noiseless_moons_lie_on_their_arcs() -> None:
    x, y = make_moons(40, noise=0.0)
    upper, lower = x[y == 0], x[y == 1]
    assert np.allclose(np.hypot(*upper.T), 1.0)  # centred at (0, 0)
    assert np.allclose(np.hypot(upper[:, 0], upper[:, 1]), 1.0) and (upper[:, 1] >= -1e-12).all()
    assert np.allclose(np.hypot(lower[:, 0] - 1.0, lower[:, 1] - 0.5), 1.0)  # centred (1, 1/2)
    assert (lower[:, 1] <= 0.5 + 1e-12).all()


def test_noiseless_spiral_arms_are_point_reflections() -> None:
    x, y = make_spirals(60, noise=0.0)
    arm0, arm1 = x[y == 0], x[y == 1]
    radii0 = np.sort(np.hypot(*arm0.T))
    assert np.allclose(radii0, np.linspace(0.1, 1.0, 30))
    # every point of arm 1 is minus a point of arm 0
    d = np.abs(arm1[:, None, :] + arm0[None, :, :]).sum(-1).min(1)
    assert np.allclose(d, 0.0)


def test_signed_labels() -> None:
    assert signed(np.array([0, 1, 1])).tolist() == [-1.0, 1.0, 1.0]


def test_needs_two_points() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        make_moons(1)
