"""Every matmul version against torch (float64)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from minitorch.kernels.matmul import (
    kernel_calls,
    matmul_blocked,
    matmul_loops,
    matmul_tiled,
    tile_bytes,
)
from minitorch.kernels.traces import ORDERS


def _ab(n, k, m, seed=0):
    g = np.random.default_rng(seed)
    a, b = g.standard_normal((n, k)), g.standard_normal((k, m))
    return a, b, torch.from_numpy(a).matmul(torch.from_numpy(b)).numpy()


@pytest.mark.parametrize("order", ORDERS)
def test_loop_orders(order):
    a, b, want = _ab(5, 4, 3)
    np.testing.assert_allclose(matmul_loops(a, b, order), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(("shape", "tile"), [((9, 7, 5), 4), ((8, 8, 8), 8), ((3, 2, 4), 16)])
def test_blocked_and_tiled(shape, tile):
    a, b, want = _ab(*shape)
    np.testing.assert_allclose(matmul_blocked(a, b, tile), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(matmul_tiled(a, b, tile), want, rtol=1e-12, atol=1e-12)


def test_tiled_calls_the_kernel_once_per_tile_triple():
    a, b, _ = _ab(50, 37, 29)
    shapes = []

    def kernel(x, y):
        shapes.append((x.shape, y.shape))
        return x @ y

    matmul_tiled(a, b, 16, kernel)
    assert len(shapes) == kernel_calls(50, 37, 29, 16) == 4 * 3 * 2
    assert sum(8 * (x[0] * x[1] + y[0] * y[1]) for x, y in shapes) == tile_bytes(50, 37, 29, 16)


def test_bad_order_rejected():
    with pytest.raises(ValueError):
        matmul_loops(np.ones((2, 2)), np.ones((2, 2)), "ij")
