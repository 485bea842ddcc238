"""Calibrating activation ranges: max vs KL divergence (entropy calibration), symmetric INT-b.

An activation quantized symmetrically to ``b`` bits with threshold ``t`` uses the grid
``s = t / (2^(b-1) - 1)`` and clips ``|x| > t``. *Max* calibration sets ``t = max |x|`` over
a calibration batch: no clipping, but one outlier stretches the grid for every value.
*KL* calibration (TensorRT's entropy calibrator) builds a histogram of ``|x|`` with
``bins`` bins and, for each candidate threshold at bin ``i`` (from ``2^(b-1)`` bins up):

* ``P`` = the histogram's first ``i`` bins, with everything beyond folded into bin ``i - 1``
  (what clipping at ``t`` does);
* ``Q`` = the same ``i`` bins merged into ``2^(b-1)`` equal groups, each group's count spread
  evenly over its nonzero bins (what the quantized grid can represent);
* the threshold is the one of smallest ``KL(P || Q)``, ``t = i \\cdot`` bin width.

    t_max, t_kl = max_threshold(x), kl_threshold(x, bits=8)
    quant_error(x, t_kl, 8) < quant_error(x, t_max, 8)     # for heavy-tailed x
    with activations_quantized(model, thresholds, bits=8): model.loss(...)

Lab: 33_sparsity_distillation_qat
Paper: Migacz 2017, "8-bit Inference with TensorRT" (NVIDIA GTC talk): entropy calibration
by KL divergence between the reference and quantized distributions.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import numpy as np

from minitorch.autograd import Tensor, linear
from minitorch.model.gpt import GPT
from minitorch.model.qat import fake_quant_range
from minitorch.model.quant_model import calibration_inputs, linear_layers

__all__ = [
    "activations_quantized",
    "calibrate",
    "kl_threshold",
    "max_threshold",
    "quant_error",
    "quantize_symmetric",
]


def max_threshold(x: np.ndarray) -> float:
    """``max |x|``: the range that clips nothing."""
    return float(np.max(np.abs(np.asarray(x, dtype=np.float64))))


def _kl(p: np.ndarray, q: np.ndarray) -> float:
    p, q = p / p.sum(), q / q.sum()
    nz = p > 0
    return float(np.sum(p[nz] * np.log(p[nz] / np.maximum(q[nz], 1e-12))))


def kl_threshold(x: np.ndarray, bits: int = 8, bins: int = 2048) -> float:
    """The threshold of smallest ``KL(P || Q)`` (see the module docstring)."""
    a = np.abs(np.asarray(x, dtype=np.float64)).ravel()
    top = a.max()
    if top == 0:
        return 0.0
    levels = 2 ** (bits - 1)
    if bins < levels:
        raise ValueError(f"need at least {levels} bins for {bits} bits")
    hist, edges = np.histogram(a, bins=bins, range=(0.0, top))
    hist = hist.astype(np.float64)
    best, best_i = np.inf, bins
    for i in range(levels, bins + 1):
        p = hist[:i].copy()
        p[-1] += hist[i:].sum()
        sizes = np.full(levels, i // levels)
        sizes[: i % levels] += 1  # np.array_split's groups: the first ones one bin longer
        group = np.repeat(np.arange(levels), sizes)
        total = np.bincount(group, weights=hist[:i], minlength=levels)
        nonzero = np.bincount(group, weights=hist[:i] > 0, minlength=levels)
        q = np.where(hist[:i] > 0, total[group] / np.maximum(nonzero[group], 1), 0.0)
        d = _kl(p, q)
        if d < best:
            best, best_i = d, i
    return float(edges[best_i])


def quantize_symmetric(x: np.ndarray, threshold: float, bits: int = 8) -> np.ndarray:
    """``x`` clipped to ``[-t, t]`` and rounded to the symmetric ``bits``-bit grid."""
    hi = 2 ** (bits - 1) - 1
    s = threshold / hi if threshold > 0 else 1.0
    return np.clip(np.round(np.asarray(x, dtype=np.float64) / s), -hi, hi) * s


def quant_error(x: np.ndarray, threshold: float, bits: int = 8) -> float:
    """Mean squared error of :func:`quantize_symmetric` on ``x``."""
    x = np.asarray(x, dtype=np.float64)
    return float(np.mean((quantize_symmetric(x, threshold, bits) - x) ** 2))


def calibrate(
    model: GPT, idx: np.ndarray, method: str = "kl", bits: int = 8, bins: int = 2048
) -> dict[str, float]:
    """A threshold for the input of every linear layer, from one FP32 pass on ``idx``."""
    if method not in ("kl", "max"):
        raise ValueError(f"method must be 'kl' or 'max', not {method!r}")
    seen = calibration_inputs(model, idx)
    if method == "max":
        return {name: max_threshold(x) for name, x in seen.items()}
    return {name: kl_threshold(x, bits, bins) for name, x in seen.items()}


@contextmanager
def activations_quantized(
    model: GPT, thresholds: Mapping[str, float], bits: int = 8
) -> Iterator[GPT]:
    """Inside the block each linear layer's input is fake-quantized with its threshold."""
    layers = linear_layers(model)

    def forward_of(name: str, layer: Any) -> Any:
        t = float(thresholds[name])

        def forward(x: Tensor) -> Tensor:
            return linear(
                fake_quant_range(x, -t, t, bits, symmetric=True), layer.weight, layer.bias
            )

        return forward

    try:
        for name, layer in layers.items():
            object.__setattr__(layer, "forward", forward_of(name, layer))
        yield model
    finally:
        for layer in layers.values():
            layer.__dict__.pop("forward", None)
