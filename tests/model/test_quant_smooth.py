"""SmoothQuant: the identity it relies on, its closed form, and W8A8 accuracy."""

from __future__ import annotations

import numpy as np

from minitorch.model.quant_smooth import (
    quantize_activations,
    smooth_scales,
    smoothquant_matmul,
    w8a8_matmul,
)

G = np.random.default_rng(0)
W = G.standard_normal((32, 64)) * 0.1
X = G.standard_normal((128, 64))
X[:, [5, 9]] *= 100


def _err(y):
    want = X @ W.T
    return np.sum((y - want) ** 2) / np.sum(want**2)


def test_closed_form_and_identity():
    xa, wa = np.abs(X).max(0), np.abs(W).max(0)
    s = smooth_scales(xa, wa, 0.7)
    assert np.allclose(s, xa**0.7 / wa**0.3)
    assert np.allclose((X / s) @ (W * s).T, X @ W.T)


def test_w8a8_is_the_integer_product_rescaled():
    qx, _ = quantize_activations(X)
    assert qx.dtype == np.int8 and np.abs(qx).max() == 127
    assert _err(w8a8_matmul(X, W)) < 1e-2


def test_smoothing_makes_w8a8_accurate():
    assert _err(smoothquant_matmul(X, W)) < 0.1 * _err(w8a8_matmul(X, W))
