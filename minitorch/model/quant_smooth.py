"""SmoothQuant: move activation outliers into the weights, then run W8A8.

INT8 activations with one scale per tensor fail when a few channels are 100x the rest: the
scale is set by the outliers and the ordinary channels round to a handful of levels. Since
``y = (x / s) @ (W * s)^T`` for any per-input-channel ``s``, SmoothQuant picks
``s_j = max|X_j|^alpha / max|W_j|^(1 - alpha)`` (``alpha = 0.5`` balances the two), which
flattens the activations' channel ranges at the cost of a little weight range.

Lab: 11_quantization
Paper: Xiao et al., "SmoothQuant: Accurate and Efficient Post-Training Quantization for Large
Language Models", ICML 2023 (arXiv:2211.10438, 2022), Section 4.
"""

from __future__ import annotations

import numpy as np

from minitorch.model.quant import quantize

__all__ = ["quantize_activations", "smooth_scales", "smoothquant_matmul", "w8a8_matmul"]


def smooth_scales(x_absmax: np.ndarray, w_absmax: np.ndarray, alpha: float = 0.5) -> np.ndarray:
    """``s_j = max|X_j|^alpha / max|W_j|^(1 - alpha)`` per input channel ``j``."""
    xa, wa = np.maximum(x_absmax, 1e-8), np.maximum(w_absmax, 1e-8)
    return xa**alpha / wa ** (1.0 - alpha)


def quantize_activations(x: np.ndarray) -> tuple[np.ndarray, float]:
    """Symmetric INT8 with one scale per tensor (static, as in SmoothQuant's O3 setting)."""
    scale = max(float(np.abs(x).max()) / 127.0, 1e-12)
    return np.clip(np.round(x / scale), -127, 127).astype(np.int8), scale


def w8a8_matmul(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``x @ w.T`` with INT8 activations (per tensor) and INT8 weights (per output channel).

    The product is accumulated in int32, as tensor cores do, then rescaled once.
    """
    qx, sx = quantize_activations(x)
    qw = quantize(w, 8, symmetric=True, granularity="channel")
    acc = qx.astype(np.int32) @ qw.q.astype(np.int32).T
    return acc * sx * qw.scale[:, 0]


def smoothquant_matmul(x: np.ndarray, w: np.ndarray, alpha: float = 0.5) -> np.ndarray:
    """W8A8 after smoothing with the scales of :func:`smooth_scales` (calibrated on ``x``)."""
    s = smooth_scales(np.abs(x).max(axis=0), np.abs(w).max(axis=0), alpha)
    return w8a8_matmul(x / s, w * s)
