"""Per-tensor scaled FP8: pick a scale from the tensor's amax, cast with saturation, dequantize.

FP8 E4M3 has 4 exponent bits: values from 2^-9 to 448, about 18 binades. A tensor's values
rarely sit in that window by themselves, so each tensor gets a scale ``s`` and FP8 stores
``q = fp8(x / s)``; choosing ``s = amax / 448`` maps the largest magnitude onto the largest
E4M3 value and uses the whole range. The cast saturates: when the scale is stale (amax grew
since it was computed) values beyond +-448 clamp to +-448 instead of becoming NaN. Relative
error of a value in the normal range is at most u = 2^-4.

Transformer Engine stores the reciprocal convention (``scale = 448 / amax``, multiply, and
``scale_inv`` to dequantize); here ``scale`` is the dequantization factor: x ~= q * scale.

Lab: 01_numerics
Paper: Micikevicius et al. 2022, "FP8 Formats for Deep Learning"
"""

from __future__ import annotations

import math

import numpy as np

from minitorch.numerics.formats import FP8_E4M3, FloatFormat, decode, encode

__all__ = ["cast_to_e4m3", "cast_to_fp8", "dequantize", "fp8_scale"]


def fp8_scale(amax: float, fmt: FloatFormat = FP8_E4M3) -> float:
    """Return the per-tensor scale ``amax / fmt.max_normal`` (1.0 when amax is 0 or not finite).

    With this scale the largest magnitude lands on the format's largest value (448 for E4M3).
    """
    amax = float(amax)
    if amax <= 0.0 or not math.isfinite(amax):
        return 1.0
    return amax / fmt.max_normal


def cast_to_fp8(x: np.ndarray, scale: float, fmt: FloatFormat = FP8_E4M3) -> np.ndarray:
    """Scale and cast to an FP8 format with saturation: (...) float32 -> (...) uint8 codes.

    y = x / scale is computed in float32, then rounded to nearest (ties to even) in ``fmt``;
    |y| beyond fmt.max_normal (and +-inf) saturates to +-max_normal, NaN stays NaN.
    """
    y = np.asarray(x, dtype=np.float32) / np.float32(scale)  # float32 division, as on device
    return encode(y, fmt, saturate=True)


def cast_to_e4m3(x: np.ndarray, scale: float) -> np.ndarray:
    """Scale and cast to FP8 E4M3 with saturation to +-448: (...) float32 -> (...) uint8."""
    return cast_to_fp8(x, scale, FP8_E4M3)


def dequantize(codes: np.ndarray, scale: float, fmt: FloatFormat = FP8_E4M3) -> np.ndarray:
    """Return ``decode(codes) * scale`` as float32: (...) uint8 -> (...) float32."""
    return (decode(codes, fmt) * scale).astype(np.float32)
