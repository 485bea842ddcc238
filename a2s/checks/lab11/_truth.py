"""The lab's ground truth, written as plain loops independent of ``minitorch.model.quant``."""

from __future__ import annotations

import numpy as np


def quantize_loop(
    w: np.ndarray, bits: int, group: int, symmetric: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Round-to-nearest, one (row, group) at a time: (q, scale, zero)."""
    out, cols = w.shape
    q = np.zeros((out, cols), np.int64)
    scale, zero = np.zeros((out, cols // group)), np.zeros((out, cols // group), np.int64)
    for r in range(out):
        for k in range(cols // group):
            vals = [float(v) for v in w[r, k * group : (k + 1) * group]]
            if symmetric:
                hi = 2 ** (bits - 1) - 1
                lo, s, z = -hi, max(abs(v) for v in vals) / hi, 0
            else:
                lo, hi = 0, 2**bits - 1
                mn, mx = min(min(vals), 0.0), max(max(vals), 0.0)
                s = (mx - mn) / hi
            s = s if s > 0 else 1.0
            if not symmetric:
                z = round(-mn / s)
            scale[r, k], zero[r, k] = s, z
            for j, v in enumerate(vals):
                q[r, k * group + j] = min(max(round(v / s) + z, lo), hi)
    return q, scale, zero


def dequant(q: np.ndarray, scale: np.ndarray, zero: np.ndarray) -> np.ndarray:
    """``(q - zero) * scale`` with per-(row, group) scale and zero."""
    g = q.shape[1] // scale.shape[1]
    return (q - np.repeat(zero, g, axis=1)) * np.repeat(scale, g, axis=1)


def rtn(w: np.ndarray, bits: int, group: int) -> np.ndarray:
    """Asymmetric round-to-nearest, dequantized."""
    return dequant(*quantize_loop(w, bits, group, symmetric=False))


def rel_error(w: np.ndarray, w_hat: np.ndarray, x: np.ndarray) -> float:
    """``||X W^T - X W_hat^T||^2 / ||X W^T||^2``."""
    y = x @ w.T
    return float(np.sum((y - x @ w_hat.T) ** 2) / np.sum(y**2))


def correlated_inputs(g: np.random.Generator, n: int, cols: int) -> np.ndarray:
    """Calibration activations with correlated channels (as a layer's inputs are)."""
    mix = g.standard_normal((cols, cols)) * 0.3 + np.eye(cols)
    return g.standard_normal((n, cols)) @ mix


def outlier_inputs(
    g: np.random.Generator, n: int, cols: int, k: int, size: float
) -> tuple[np.ndarray, np.ndarray]:
    """Activations with ``k`` outlier input channels ``size`` times larger; returns (x, idx)."""
    x = g.standard_normal((n, cols))
    idx = g.choice(cols, size=k, replace=False)
    x[:, idx] *= size
    return x, idx
