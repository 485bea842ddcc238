"""AWQ: protect the weights that meet large activations by scaling their input channels.

A few input channels of an LLM's activations are much larger than the rest, and the weights
they multiply matter most. Scaling column ``j`` of W up by ``s_j`` (and the input down by it,
``y = (x / s) @ (W * s)^T``, folded into the previous op) shrinks that column's *relative*
rounding error, since the group's scale barely moves while ``w_j s_j`` grows. AWQ searches
``s = mean|x_j|^alpha`` over a grid of ``alpha`` in [0, 1) and keeps the one with the least
output error on calibration data; ``alpha = 0`` is plain round-to-nearest, so AWQ never loses.

Lab: 11_quantization
Paper: Lin et al., "AWQ: Activation-aware Weight Quantization for LLM Compression and
Acceleration", MLSys 2024 (arXiv:2306.00978, 2023), Section 3.2.
"""

from __future__ import annotations

import numpy as np

from minitorch.model.quant import rtn

__all__ = ["awq", "awq_scales", "scaled_rtn"]


def scaled_rtn(w: np.ndarray, s: np.ndarray, bits: int = 4, group_size: int = 128) -> np.ndarray:
    """``Q(W * s) / s``: the effective weights of the scaled, quantized layer."""
    return rtn(np.asarray(w) * s, bits, granularity=group_size) / s


def awq_scales(
    w: np.ndarray, x: np.ndarray, bits: int = 4, group_size: int = 128, grid: int = 20
) -> np.ndarray:
    """Per-input-channel scales ``s`` (in,) minimising ``||X W^T - X (Q(W s)/s)^T||^2``."""
    x = np.asarray(x, dtype=np.float64)
    act = np.abs(x).mean(axis=0)
    y = x @ np.asarray(w).T
    best, best_s = np.inf, np.ones(w.shape[1])
    for alpha in np.arange(grid) / grid:
        s = np.maximum(act, 1e-8) ** alpha
        s = s / np.sqrt(s.max() * s.min())  # centre the scales around 1
        err = float(np.sum((y - x @ scaled_rtn(w, s, bits, group_size).T) ** 2))
        if err < best:
            best, best_s = err, s
    return best_s


def awq(
    w: np.ndarray, x: np.ndarray, bits: int = 4, group_size: int = 128, grid: int = 20
) -> np.ndarray:
    """AWQ-quantized effective weights ``Q(W s) / s`` of ``w`` (out, in)."""
    return scaled_rtn(w, awq_scales(w, x, bits, group_size, grid), bits, group_size)
