"""Binary floating-point formats as data: a bit layout, and exact decode / encode for any of them.

A format with ``E`` exponent bits, ``M`` mantissa bits and bias ``b`` stores a sign ``s``, a
biased exponent ``e`` and a mantissa field ``m``. Its value is

    normal     (0 < e < e_max):  v = (-1)^s 2^(e - b) (1 + m / 2^M)
    subnormal  (e = 0):          v = (-1)^s 2^(1 - b) (m / 2^M)

IEEE 754 formats (FP32, FP16, BF16, FP8 E5M2) reserve the all-ones exponent for inf (m = 0)
and NaN (m != 0). FP8 E4M3 as the OCP 8-bit Floating Point Specification (OFP8, 2023)
defines it has no inf and uses the all-ones exponent for normal numbers too, keeping only
s.1111.111 as NaN; E4M3 so reaches 448 instead of 240. The name E4M3FN ("fn": *f*inite,
*N*aN only) is LLVM/MLIR's, ml_dtypes' and torch's (``float8_e4m3fn``), not OCP's: the spec
calls its formats E4M3 and E5M2.

Lab: 01_numerics
Paper: IEEE 754-2019; Micikevicius et al. 2022, "FP8 Formats for Deep Learning"
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["BF16", "FORMATS", "FP8_E4M3", "FP8_E5M2", "FP16", "FP32", "FloatFormat"]
__all__ += ["all_values", "decode", "encode"]


@dataclass(frozen=True, slots=True)
class FloatFormat:
    """A binary floating-point layout: 1 sign bit, ``exp_bits``, ``man_bits``, exponent ``bias``.

    ``ieee_specials``: True for IEEE inf/NaN (all-ones exponent); False for OCP E4M3's style
    (the "fn" of ``float8_e4m3fn``: no inf, NaN only when exponent and mantissa are all ones).
    """

    name: str
    exp_bits: int
    man_bits: int
    bias: int
    ieee_specials: bool = True

    @property
    def bits(self) -> int:
        """Total width: 1 + E + M."""
        return 1 + self.exp_bits + self.man_bits

    @property
    def max_finite_code(self) -> int:
        """Largest positive finite bit pattern (the code of ``max_normal``)."""
        if self.ieee_specials:
            return (((1 << self.exp_bits) - 1) << self.man_bits) - 1  # just below inf
        return (1 << (self.exp_bits + self.man_bits)) - 2  # just below s.1111.111 (NaN)

    @property
    def max_normal(self) -> float:
        """Largest finite value (FP16 65504, BF16 ~3.39e38, E4M3 448, E5M2 57344)."""
        e, m = divmod(self.max_finite_code, 1 << self.man_bits)
        return float(np.ldexp(1.0 + m / 2.0**self.man_bits, e - self.bias))

    @property
    def min_normal(self) -> float:
        """Smallest positive normal value, 2^(1 - b)."""
        return float(np.ldexp(1.0, 1 - self.bias))

    @property
    def min_subnormal(self) -> float:
        """Smallest positive value, 2^(1 - b - M)."""
        return float(np.ldexp(1.0, 1 - self.bias - self.man_bits))

    @property
    def eps(self) -> float:
        """Machine epsilon: the gap from 1 to the next value, 2^-M."""
        return 2.0**-self.man_bits

    @property
    def unit_roundoff(self) -> float:
        """u = eps / 2 = 2^-(M+1): the largest relative error of round-to-nearest."""
        return 2.0 ** -(self.man_bits + 1)


FP32 = FloatFormat("fp32", 8, 23, 127)
FP16 = FloatFormat("fp16", 5, 10, 15)
BF16 = FloatFormat("bf16", 8, 7, 127)
FP8_E4M3 = FloatFormat("fp8_e4m3", 4, 3, 7, ieee_specials=False)
FP8_E5M2 = FloatFormat("fp8_e5m2", 5, 2, 15)
FORMATS: dict[str, FloatFormat] = {f.name: f for f in (FP32, FP16, BF16, FP8_E4M3, FP8_E5M2)}


def decode(bits: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """Decode bit patterns of ``fmt`` to their exact values.

    bits: (...) integers, each in [0, 2^fmt.bits) -> (...) float64 (every format here fits
    exactly). Handles normals, subnormals, +-0, inf and NaN.
    """
    b = np.asarray(bits).astype(np.int64)
    sign = (b >> (fmt.exp_bits + fmt.man_bits)) & 1
    e = (b >> fmt.man_bits) & ((1 << fmt.exp_bits) - 1)
    m = b & ((1 << fmt.man_bits) - 1)
    # subnormals have no implicit leading 1 and the exponent of e = 1
    significand = np.where(e == 0, m, m + (1 << fmt.man_bits)).astype(np.float64)
    mag = np.ldexp(significand, np.maximum(e, 1) - fmt.bias - fmt.man_bits)
    e_all_ones = e == (1 << fmt.exp_bits) - 1
    if fmt.ieee_specials:
        mag = np.where(e_all_ones, np.where(m == 0, np.inf, np.nan), mag)
    else:
        mag = np.where(e_all_ones & (m == (1 << fmt.man_bits) - 1), np.nan, mag)
    return np.where(sign == 1, -mag, mag)


def encode(x: np.ndarray, fmt: FloatFormat, *, saturate: bool = False) -> np.ndarray:
    """Round ``x`` to the nearest value of ``fmt`` (ties to even) and return its bit patterns.

    x: (...) float64 or float32 -> (...) uint8/16/32 codes. With q = 2^(max(E, 1 - b) - M) the
    spacing of the binade of |x| (E = floor(log2 |x|)), the rounded value is rint(|x| / q) q,
    and the code of n = rint(|x| / q) is (max(E, 1 - b) + b - 1) 2^M + n for normals and
    subnormals alike. Overflow gives inf (IEEE) or NaN (fn formats, the OCP non-saturating
    mode); ``saturate=True`` clamps overflow and +-inf to +-max_normal instead.
    """
    a = np.asarray(x, dtype=np.float64)
    mag = np.abs(a)
    finite = np.isfinite(mag) & (mag > 0)
    _, k = np.frexp(np.where(finite, mag, 1.0))  # mag = f 2^k with f in [0.5, 1)
    exp = np.maximum(k - 1, 1 - fmt.bias)  # subnormals share the spacing of the first binade
    n = np.rint(np.ldexp(np.where(finite, mag, 0.0), fmt.man_bits - exp))  # rint ties to even
    code = np.where(n > 0, (exp + fmt.bias - 1) * 2.0**fmt.man_bits + n, 0.0)
    code = np.where(np.isinf(mag), np.inf, code)
    top = fmt.max_finite_code
    if saturate:
        over_code = top
    elif fmt.ieee_specials:
        over_code = top + 1  # the all-ones exponent with m = 0: inf
    else:
        over_code = (1 << (fmt.exp_bits + fmt.man_bits)) - 1  # s.1111.111: NaN
    code = np.where(code > top, over_code, code)
    nan_code = top + 1 + (1 << (fmt.man_bits - 1)) if fmt.ieee_specials else top + 1
    code = np.where(np.isnan(mag), nan_code, code).astype(np.int64)
    code |= np.signbit(a).astype(np.int64) << (fmt.exp_bits + fmt.man_bits)
    return code.astype(_uint(fmt.bits))


def all_values(fmt: FloatFormat) -> np.ndarray:
    """Decode every code of a format of at most 16 bits: (2^bits,) float64, indexed by code."""
    if fmt.bits > 16:
        raise ValueError(f"{fmt.name} has 2^{fmt.bits} codes; enumerate at most 16-bit formats")
    return decode(np.arange(1 << fmt.bits), fmt)


def _uint(bits: int) -> type[np.unsignedinteger]:
    types: dict[int, type[np.unsignedinteger]] = {8: np.uint8, 16: np.uint16, 32: np.uint32}
    return types[bits]
