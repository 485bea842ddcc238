"""FP32 -> BF16 round-to-nearest-even by bit manipulation, and FP16 rounding for comparison.

BF16 is the top half of an FP32 word: same sign and 8-bit exponent, mantissa cut from 23 to 7
bits. Rounding keeps the high 16 bits of ``u + 0x7FFF + lsb`` where ``lsb`` is bit 16 of ``u``
(the last kept bit): below half-way the carry never reaches bit 16, above it always does, and
at exactly half-way (low half 0x8000) it does only when ``lsb`` is 1, so ties go to even. A
carry out of the mantissa bumps the exponent, which is the right answer too (and FP32 values
beyond the largest BF16 round into the inf pattern 0x7F80). NaN must be handled first: adding
the bias to 0x7F800001 would give 0x7F80, inf.

Lab: 01_numerics
Paper: Kalamkar et al. 2019, "A Study of BFLOAT16 for Deep Learning Training"
"""

from __future__ import annotations

import numpy as np

__all__ = ["bf16_bits_to_float32", "round_to_bf16", "round_to_bf16_bits", "round_to_fp16"]


def round_to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """Round float32 values to bfloat16 (nearest, ties to even); return the bit patterns.

    x: (...) float32 -> (...) uint16. NaN becomes a quiet NaN with its sign and top payload
    bits (as x86 VCVTNEPS2BF16 does; torch returns 0xFFFF / 0x7FC0, also quiet NaNs).
    """
    u = np.asarray(x, dtype=np.float32).view(np.uint32)
    lsb = (u >> 16) & 1
    rounded = (u + (np.uint32(0x7FFF) + lsb)) >> 16  # uint32 wraps only for NaN, masked below
    is_nan = (u & 0x7FFFFFFF) > 0x7F800000
    quiet_nan = (u >> 16) | 0x0040  # set the top mantissa bit: a quiet NaN, never inf
    return np.where(is_nan, quiet_nan, rounded).astype(np.uint16)


def bf16_bits_to_float32(bits: np.ndarray) -> np.ndarray:
    """Widen bfloat16 bit patterns to float32 exactly: (...) uint16 -> (...) float32."""
    b = np.asarray(bits, dtype=np.uint16)
    return np.asarray(b.astype(np.uint32) << 16).view(np.float32)  # 0-d stays an array


def round_to_bf16(x: np.ndarray) -> np.ndarray:
    """Round to the nearest bfloat16 value and return it as float32 (same shape).

    The usual way to emulate BF16 compute on a CPU: every result is float32 but lies on the
    BF16 grid. Inputs that are not float32 are first converted to float32.
    """
    return bf16_bits_to_float32(round_to_bf16_bits(np.asarray(x, dtype=np.float32)))


def round_to_fp16(x: np.ndarray) -> np.ndarray:
    """Round to the nearest float16 value (ties to even, overflow to inf); return float32.

    FP16 keeps 10 mantissa bits (8x finer than BF16) but only 5 exponent bits: the range is
    [6.0e-8, 65504], so gradients underflow and activations overflow without loss scaling.
    """
    with np.errstate(over="ignore"):  # overflow to inf is the intended result
        return np.asarray(x, dtype=np.float32).astype(np.float16).astype(np.float32)
