"""Reference kernels: values against numpy, counters against the closed forms of their shapes."""

from __future__ import annotations

import numpy as np
import pytest

from minitorch.kernels import simt_kernels as K
from minitorch.kernels.simt import launch, to_device

GEN = np.random.default_rng(0)


def _f32(*shape):
    return GEN.standard_normal(shape).astype(np.float32)


def test_vector_add_is_exact_at_the_minimum_traffic():
    n = 1000
    a, b = _f32(n), _f32(n)
    c = to_device(np.zeros(n, np.float32))
    stats = launch(K.vector_add, -(-n // 256), 256, (to_device(a), to_device(b), c, n))
    assert np.array_equal(c.to_numpy(), a + b)
    assert stats.gld_transactions == 2 * 125 and stats.gst_transactions == 125


@pytest.mark.parametrize(("stride", "sectors"), [(1, 4), (2, 8), (4, 16), (8, 32), (32, 32)])
def test_strided_copy_costs_min_32_4s_sectors_a_warp(stride, sectors):
    src, dst = to_device(_f32(64 * stride)), to_device(np.zeros(64, np.float32))
    stats = launch(K.strided_copy, 2, 32, (src, dst, stride))
    assert stats.gld_transactions == 2 * sectors and stats.gst_transactions == 2 * 4


@pytest.mark.parametrize(
    "kernel", [K.block_sum_sequential, K.block_sum_interleaved, K.block_sum_divergent]
)
def test_block_sums_match_numpy(kernel):
    x = _f32(1000)
    out = to_device(np.zeros(4, np.float32))
    stats = launch(kernel, 4, 256, (to_device(x), out, 1000))
    want = np.add.reduceat(
        np.r_[x, np.zeros(24, np.float32)].astype(np.float64), [0, 256, 512, 768]
    )
    np.testing.assert_allclose(out.to_numpy(), want, rtol=1e-5, atol=1e-4)
    # sequential: 8 fill stores + 3 per active warp per step (4, 2, 1 x 6) + 1 final load
    seq = stats.bank_conflicts == 0 and stats.shared_transactions == 4 * (8 + 3 * 12 + 1)
    assert seq == (kernel is K.block_sum_sequential)


def test_tiled_matmul_reads_8x_fewer_sectors_than_naive():
    m, n, k = 32, 48, 64
    a, b = _f32(m, k), _f32(k, n)
    counts = {}
    for kernel in (K.matmul_naive, K.matmul_tiled):
        c = to_device(np.zeros((m, n), np.float32))
        stats = launch(
            kernel, (n // 16, m // 16), (16, 16), (to_device(a), to_device(b), c, m, n, k)
        )
        np.testing.assert_allclose(c.to_numpy(), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
        counts[kernel.__name__] = stats
    assert counts["matmul_naive"].gld_transactions == m * n * k // 8
    assert counts["matmul_tiled"].gld_transactions == m * n * k // 64
    assert counts["matmul_tiled"].bank_conflicts == 0


def test_transposes_trade_global_segments_for_bank_conflicts():
    r, c = 64, 96
    x = _f32(r, c)
    got = {}
    for kernel in (K.transpose_naive, K.transpose_shared, K.transpose_padded):
        dst = to_device(np.zeros((c, r), np.float32))
        got[kernel.__name__] = launch(
            kernel, (c // 32, r // 32), (32, 32), (to_device(x), dst, r, c)
        )
        assert np.array_equal(dst.to_numpy(), x.T)
    warps = r * c // 32
    assert got["transpose_naive"].gst_transactions == 32 * warps
    assert got["transpose_shared"].bank_conflicts == 31 * warps
    assert got["transpose_padded"].global_transactions == 8 * warps
    assert got["transpose_padded"].bank_conflicts == 0
