"""GPTQ: quantize a layer's weights one input column at a time, correcting the rest.

Round-to-nearest treats every weight alone. GPTQ minimises the layer's *output* error
``||X W^T - X Q^T||^2`` on calibration activations ``X`` (n, in): its Hessian with respect to
each row of W is ``H = 2 X^T X / n``. Quantizing column ``i`` leaves an error ``e = (w_i -
q_i) / [H^-1]_ii`` that the not-yet-quantized columns absorb: ``W[:, j] -= e [H^-1]_ij`` for
``j > i`` (the Optimal Brain Surgeon update, taken in a fixed column order). The rows of the
upper Cholesky factor of ``H^-1`` give exactly those entries for the remaining columns.

Groups: a group's scale and zero point are computed from the (already corrected) weights when
the sweep reaches its first column, as the reference implementation does with ``groupsize``.

Lab: 11_quantization
Paper: Frantar et al., "GPTQ: Accurate Post-Training Quantization for Generative Pre-trained
Transformers", ICLR 2023 (arXiv:2210.17323, 2022), Algorithm 1.
"""

from __future__ import annotations

import numpy as np

from minitorch.model.quant import Quantized, dequantize, qrange, quantize

__all__ = ["gptq", "hessian", "output_error"]


def hessian(x: np.ndarray, damp: float = 0.01) -> np.ndarray:
    """``2 X^T X / n`` of activations (n, in), with ``damp`` times its mean diagonal added."""
    x = np.asarray(x, dtype=np.float64).reshape(-1, x.shape[-1])
    h = 2.0 * x.T @ x / x.shape[0]
    h[np.diag_indices_from(h)] += damp * float(np.mean(np.diag(h))) + 1e-12
    return h


def output_error(w: np.ndarray, w_hat: np.ndarray, x: np.ndarray) -> float:
    """The layer reconstruction error ``||X W^T - X W_hat^T||_F^2 / ||X W^T||_F^2``."""
    y = x @ np.asarray(w).T
    return float(np.sum((y - x @ np.asarray(w_hat).T) ** 2) / np.sum(y**2))


def gptq(
    w: np.ndarray,
    x: np.ndarray,
    bits: int = 4,
    group_size: int = 128,
    *,
    symmetric: bool = False,
    damp: float = 0.01,
) -> np.ndarray:
    """GPTQ-quantized weights (dequantized, on each group's grid) of ``w`` (out, in).

    ``x`` (n, in) are calibration inputs of the layer. Returns ``W_hat`` with at most
    ``2^bits`` distinct values per (row, group).
    """
    w = np.array(w, dtype=np.float64)
    cols = w.shape[1]
    g = cols if group_size <= 0 else group_size
    u = np.linalg.cholesky(np.linalg.inv(hessian(x, damp))).T  # upper: H^-1 = U^T U
    w_hat = np.empty_like(w)
    scale, zero = np.ones((w.shape[0], 1)), np.zeros((w.shape[0], 1))
    for i in range(cols):
        if i % g == 0:  # the group's grid, from the weights as corrected so far
            qt = quantize(w[:, i : i + g], bits, symmetric=symmetric, granularity="channel")
            scale, zero = qt.scale, qt.zero
        col = w[:, i : i + 1]
        q = quantize_on(col, scale, zero, bits, symmetric)
        w_hat[:, i] = q[:, 0]
        err = (col[:, 0] - q[:, 0]) / u[i, i]
        w[:, i + 1 :] -= np.outer(err, u[i, i + 1 :])
    return w_hat


def quantize_on(
    col: np.ndarray, scale: np.ndarray, zero: np.ndarray, bits: int, symmetric: bool
) -> np.ndarray:
    """Round ``col`` (out, k) onto a given per-row grid (scale, zero of shape (out, 1))."""
    lo, hi = qrange(bits, symmetric)
    q = np.clip(np.round(col / scale) + zero, lo, hi)
    return dequantize(Quantized(q.astype(np.int32), scale, zero, bits, col.shape[1]))
