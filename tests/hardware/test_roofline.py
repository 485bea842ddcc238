"""The roofline bound, ridge point and time bound against their closed forms."""

from __future__ import annotations

import numpy as np
import pytest

from minitorch.hardware import Roofline, attainable, bound, predicted_seconds, roofline_bound


def test_two_roofs_and_the_ridge() -> None:
    r = Roofline("cpu", peak=100e9, bandwidth=40e9)
    assert r.ridge == pytest.approx(2.5)
    assert r.attainable(0.5) == pytest.approx(20e9)
    assert r.attainable(100) == 100e9
    assert (r.bound(0.5), r.bound(2.5), r.bound(100)) == ("memory", "compute", "compute")


def test_function_forms_agree() -> None:
    for i in np.geomspace(1 / 16, 1024, 41):
        assert roofline_bound(float(i), 1e12, 1e11) == (
            attainable(float(i), 1e12, 1e11),
            bound(float(i), 1e12, 1e11),
        )
        assert attainable(float(i), 1e12, 1e11) == min(1e12, i * 1e11)


def test_time_bound_is_the_slower_side() -> None:
    assert predicted_seconds(1e9, 1e6, 1e9, 1e9) == 1.0
    assert predicted_seconds(1e6, 1e9, 1e9, 1e9) == 1.0
    r = Roofline("x", 1e12, 1e11)
    flops, nbytes = 3e9, 5e8
    assert r.seconds(flops, nbytes) == pytest.approx(flops / r.attainable(flops / nbytes))


def test_curve_is_monotone_and_capped() -> None:
    xy = Roofline("x", 1e12, 1e11).curve(points=50)
    assert xy.shape == (50, 2)
    assert np.all(np.diff(xy[:, 1]) >= 0) and xy[:, 1].max() == 1e12
