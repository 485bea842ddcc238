"""AWQ: never worse than round-to-nearest, clearly better with outlier input channels."""

from __future__ import annotations

import numpy as np

from minitorch.model.quant import rtn
from minitorch.model.quant_awq import awq, awq_scales, scaled_rtn
from minitorch.model.quant_gptq import output_error

G = np.random.default_rng(0)
W = G.standard_normal((32, 64))
X = G.standard_normal((256, 64))
X[:, [3, 17, 40]] *= 40


def test_one_point_grid_is_rtn():
    s = awq_scales(W, X, 4, 16, grid=1)
    assert np.allclose(s, 1.0)
    assert np.allclose(scaled_rtn(W, s, 4, 16), rtn(W, 4, granularity=16))


def test_beats_rtn_with_outliers_and_scales_them_up():
    ours = output_error(W, awq(W, X, 4, 16), X)
    assert ours < 0.7 * output_error(W, rtn(W, 4, granularity=16), X)
    s = awq_scales(W, X, 4, 16)
    assert s[[3, 17, 40]].min() > np.median(s)


def test_never_worse_than_rtn_without_outliers():
    x = G.standard_normal((256, 64))
    assert output_error(W, awq(W, x, 4, 16), x) <= output_error(W, rtn(W, 4, granularity=16), x)
