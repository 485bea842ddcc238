"""RoPE against the complex-rotation formula and its relative-position property; ALiBi slopes."""

from __future__ import annotations

import numpy as np
import pytest

from minitorch.autograd import Tensor
from minitorch.model.positions import alibi_bias, alibi_slopes, apply_rope, rope_tables

pytestmark = pytest.mark.lab09


def rope(x: np.ndarray) -> np.ndarray:
    cos, sin = rope_tables(x.shape[-2], x.shape[-1], dtype=np.float64)
    return apply_rope(Tensor(x), cos, sin).data


def test_rope_is_the_complex_rotation() -> None:
    x = np.random.default_rng(0).standard_normal((2, 6, 8))
    z = x[..., 0::2] + 1j * x[..., 1::2]
    theta = 10000.0 ** (-np.arange(0, 8, 2) / 8)
    want = z * np.exp(1j * np.arange(6)[:, None] * theta)
    got = rope(x)
    assert np.allclose(got[..., 0::2] + 1j * got[..., 1::2], want, atol=1e-12)


def test_rope_scores_depend_on_relative_position_only() -> None:
    g = np.random.default_rng(1)
    q, k = g.standard_normal(16), g.standard_normal(16)
    x = np.zeros((2, 20, 16))
    x[0], x[1] = q, k  # the same q and k at every position
    y = rope(x)
    scores = y[0] @ y[1].T  # (20, 20): query at m, key at n
    for d in range(-5, 6):
        diag = np.diagonal(scores, offset=d)
        assert np.allclose(diag, diag[0], atol=1e-10)
    assert np.allclose(np.linalg.norm(y, axis=-1), np.linalg.norm(x, axis=-1))  # a rotation


def test_alibi_slopes_from_the_paper() -> None:
    assert np.allclose(alibi_slopes(8), [2.0**-k for k in range(1, 9)])
    assert np.allclose(alibi_slopes(4), [2.0 ** (-2 * k) for k in range(1, 5)])
    six = alibi_slopes(6)  # 4 heads' slopes, then heads 1 and 3 of 8
    assert np.allclose(six, [2.0**-2, 2.0**-4, 2.0**-6, 2.0**-8, 2.0**-1, 2.0**-3])


def test_alibi_bias_is_minus_slope_times_distance() -> None:
    b = alibi_bias(2, 4, np.float64)
    assert b.shape == (2, 4, 4)
    assert b[1, 3, 0] == -alibi_slopes(2)[1] * 3 and b[0, 2, 2] == 0
