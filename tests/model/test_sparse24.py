"""minitorch.model.sparse24 against plain loops and torch: the 2:4 mask, the compressed format,
and the counted sparse matmul (half the multiplies and weight bytes, the dense product)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from minitorch.model.sparse24 import (
    compress_24,
    decompress_24,
    dense_cost,
    dense_matmul,
    is_24,
    mask_24,
    pack_indices,
    sparse24_cost,
    sparse24_matmul,
    unpack_indices,
)

_FLOATS = st.floats(-8, 8, allow_nan=False, width=32)


def _loop_mask(w: np.ndarray) -> np.ndarray:
    """Per group of 4: the two largest |w|, the lower index first on ties (plain loops)."""
    keep = np.zeros(w.shape, dtype=bool)
    for r in range(w.shape[0]):
        for g in range(0, w.shape[1], 4):
            group = [(-abs(float(w[r, g + j])), j) for j in range(4)]
            for _, j in sorted(group)[:2]:
                keep[r, g + j] = True
    return keep


def _weights(rows: int = 4, cols: int = 16):
    return arrays(np.float64, (rows, cols), elements=_FLOATS)


@settings(max_examples=40, deadline=None)
@given(_weights(3, 16))
def test_mask_keeps_exactly_two_of_every_four(w):
    m = mask_24(w)
    assert np.all(m.reshape(3, -1, 4).sum(axis=-1) == 2)
    assert np.array_equal(m, _loop_mask(w))
    assert is_24(w * m)


def test_mask_keeps_the_largest_magnitudes_with_ties_to_the_lower_index():
    w = np.array([[1.0, -3.0, 2.0, 0.5, 1.0, 1.0, 1.0, 1.0]])
    assert mask_24(w).tolist() == [[False, True, True, False, True, True, False, False]]
    assert not is_24(np.ones((1, 4)))


@settings(max_examples=40, deadline=None)
@given(_weights(3, 24))
def test_compressed_round_trip_is_the_masked_weight(w):
    sp = compress_24(w)
    assert sp.values.shape == (3, 12) and sp.meta.shape == (3, 3) and sp.meta.dtype == np.uint8
    assert np.array_equal(decompress_24(sp), w * mask_24(w))
    idx = sp.indices.reshape(3, -1, 2)
    assert np.all(idx[..., 0] < idx[..., 1])  # two distinct positions per group, ascending
    assert np.array_equal(compress_24(decompress_24(sp)).values, sp.values)


@given(arrays(np.uint8, (2, 16), elements=st.integers(0, 3)))
def test_index_packing_round_trips_four_per_byte(idx):
    packed = pack_indices(idx)
    assert packed.shape == (2, 4)
    assert np.array_equal(unpack_indices(packed), idx)


def test_packing_order_and_bad_input():
    assert pack_indices(np.array([[1, 2, 3, 0]])).tolist() == [[1 | 2 << 2 | 3 << 4]]
    with pytest.raises(ValueError):
        pack_indices(np.array([[4, 0, 0, 0]]))
    with pytest.raises(ValueError):
        compress_24(np.ones((2, 12)))
    with pytest.raises(ValueError):
        mask_24(np.ones((2, 6)))


@pytest.mark.parametrize("n, out, cols, block", [(1, 8, 16, 4), (3, 24, 32, 16), (5, 17, 64, 5)])
def test_sparse_matmul_equals_torch_on_the_masked_weight_with_half_the_work(n, out, cols, block):
    g = np.random.default_rng(n + out)
    w, x = g.standard_normal((out, cols)), g.standard_normal((n, cols))
    sp = compress_24(w)
    y, cost = sparse24_matmul(x, sp, block)
    want = (torch.from_numpy(x) @ torch.from_numpy(w * mask_24(w)).T).numpy()
    assert np.allclose(y, want, rtol=1e-12, atol=1e-12)
    yd, dense = dense_matmul(x, w * mask_24(w), block)
    assert np.allclose(yd, want, rtol=1e-12, atol=1e-12)
    assert cost == sparse24_cost(n, out, cols) and dense == dense_cost(n, out, cols)
    assert 2 * cost.multiplies == dense.multiplies
    weight_dense = out * cols * 8
    value_bytes = cost.reads - n * cols * 8 - out * cols // 8
    assert 2 * value_bytes == weight_dense  # half the weight's value bytes, plus 2-bit indices
    assert sp.nbytes() == weight_dense // 2 + out * cols // 8


def test_float16_bytes_and_the_closed_form():
    w = np.random.default_rng(1).standard_normal((64, 128)).astype(np.float16)
    sp = compress_24(w)
    assert sp.nbytes() == 64 * 128 + 64 * 128 // 8  # 9/16 of the dense 2 bytes per weight
    assert sp.nbytes() / w.nbytes == 9 / 16
    x = np.ones((1, 128), np.float16)
    _, cost = sparse24_matmul(x, sp)
    assert cost == sparse24_cost(1, 64, 128, itemsize=2)


def test_shape_errors():
    sp = compress_24(np.ones((4, 16)))
    with pytest.raises(ValueError):
        sparse24_matmul(np.ones((2, 8)), sp)
    with pytest.raises(ValueError):
        dense_matmul(np.ones((2, 16)), np.ones((4, 16)), block=0)
