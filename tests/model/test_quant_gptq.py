"""GPTQ against its closed-form special cases and round-to-nearest."""

from __future__ import annotations

import numpy as np

from minitorch.model.quant import rtn
from minitorch.model.quant_gptq import gptq, hessian, output_error

G = np.random.default_rng(0)
W = G.standard_normal((32, 64))
X = G.standard_normal((256, 64)) @ (G.standard_normal((64, 64)) * 0.3 + np.eye(64))


def test_hessian_is_two_xtx_over_n_plus_damping():
    h = hessian(X, damp=0.0)
    assert np.allclose(h, 2 * X.T @ X / len(X))


def test_diagonal_hessian_reduces_to_rtn():
    x = np.diag(np.linspace(1, 2, 64)) * 8  # orthogonal columns: no error to feed forward
    assert np.allclose(gptq(W, x, 4, 64), rtn(W, 4, granularity=64))


def test_beats_rtn_on_correlated_inputs():
    for bits, g in ((3, 64), (4, 16)):
        ours = output_error(W, gptq(W, X, bits, g), X)
        assert ours < 0.8 * output_error(W, rtn(W, bits, granularity=g), X)


def test_each_group_on_its_grid():
    w_hat = gptq(W, X, 4, 16)
    for b in w_hat.reshape(32, 4, 16).reshape(-1, 16):
        assert len(np.unique(np.round(b, 12))) <= 16


def test_first_column_is_round_to_nearest():
    assert np.allclose(gptq(W, X, 4, 64)[:, 0], rtn(W, 4, granularity=64)[:, 0])
