"""Positions inside attention: rotary embeddings (RoPE) and linear biases (ALiBi).

RoPE rotates each pair (x[2i], x[2i+1]) of a query or key at position m by the angle
m * theta_i, theta_i = base^(-2i/d): as complex numbers, z_i -> z_i * exp(j m theta_i).
The dot product of a rotated query at m and a rotated key at n then depends only on m - n.
ALiBi adds -slope_h * (i - j) to the score of query i and key j (j <= i); the slopes are a
geometric sequence starting at 2^(-8/n) for n heads (n a power of two; otherwise the
closest power of two below, plus every other slope of twice as many heads).

    cos, sin = rope_tables(T, head_dim)          # (T, head_dim/2) each
    q = apply_rope(q, cos, sin)                  # q: Tensor (B, H, T, head_dim)
    scores = scores + alibi_bias(H, T)           # (H, T, T)

Lab: 09_transformer
Paper: Su et al. 2021 (RoFormer, arXiv:2104.09864); Press et al. 2022 (ALiBi, arXiv:2108.12409)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from minitorch.autograd import Tensor
from minitorch.autograd.ops_shape import stack

__all__ = ["alibi_bias", "alibi_slopes", "apply_rope", "rope_tables"]


def rope_tables(
    n_pos: int, head_dim: int, base: float = 10000.0, dtype: Any = np.float32
) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin of m * theta_i for m < n_pos, i < head_dim/2: two (n_pos, head_dim/2)."""
    theta = base ** (-np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)  # (d/2,)
    angles = np.arange(n_pos, dtype=np.float64)[:, None] * theta[None, :]  # (T, d/2)
    return np.cos(angles).astype(dtype), np.sin(angles).astype(dtype)


def apply_rope(x: Tensor, cos: np.ndarray, sin: np.ndarray) -> Tensor:
    """Rotate pairs of the last axis: x (..., T, d) with tables (T, d/2) -> (..., T, d)."""
    *lead, t, d = x.shape
    pairs = x.reshape(*lead, t, d // 2, 2)
    x0, x1 = pairs[..., 0], pairs[..., 1]  # real and imaginary parts, (..., T, d/2)
    c, s = cos[:t].astype(x.dtype), sin[:t].astype(x.dtype)
    out = stack([x0 * c - x1 * s, x0 * s + x1 * c], axis=-1)  # (..., T, d/2, 2)
    return out.reshape(*lead, t, d)


def alibi_slopes(n_head: int) -> np.ndarray:
    """ALiBi's per-head slopes, (n_head,) float64 (Press et al. 2022, section 3)."""

    def powers(n: int) -> list[float]:
        start = 2.0 ** (-8.0 / n)
        return [start ** (h + 1) for h in range(n)]

    if n_head & (n_head - 1) == 0:
        return np.array(powers(n_head))
    closest = 1 << (n_head.bit_length() - 1)  # the power of two at or below n_head
    extra = powers(2 * closest)[0::2][: n_head - closest]
    return np.array(powers(closest) + extra)


def alibi_bias(n_head: int, n_pos: int, dtype: type = np.float32) -> np.ndarray:
    """-slope_h * (i - j) for query i and key j: (n_head, n_pos, n_pos); future keys get
    a positive bias here, so combine with the causal mask."""
    i = np.arange(n_pos)[:, None]
    j = np.arange(n_pos)[None, :]
    dist = (i - j).astype(np.float64)  # (T, T), >= 0 on and below the diagonal
    return (-alibi_slopes(n_head)[:, None, None] * dist[None]).astype(dtype)
