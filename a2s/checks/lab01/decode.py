"""Grader of exercise 01.1: decode any FloatFormat, against torch's dtypes on every code."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch

from a2s.checks.cases import fresh
from a2s.checks.core import CheckFailure, fresh_rng, grader, plain, rng
from minitorch.numerics.formats import BF16, FP8_E4M3, FP8_E5M2, FP16, FP32, FloatFormat

__all__ = ["check_decode"]

_N = "minitorch.numerics"

_UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32}
_SINT = {8: np.uint8, 16: np.int16, 32: np.int32}  # what torch can .view() as
_TORCH = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
_TORCH |= {"fp8_e4m3": torch.float8_e4m3fn, "fp8_e5m2": torch.float8_e5m2}
_WRAP_HINT = (
    "If you did arithmetic on the uint8/uint16 codes directly, `e - bias` wraps around below "
    "zero: convert first with bits.astype(np.int64)."
)


def _fields(code: int, fmt: FloatFormat) -> str:
    s = code >> (fmt.exp_bits + fmt.man_bits)
    e = (code >> fmt.man_bits) & ((1 << fmt.exp_bits) - 1)
    m = code & ((1 << fmt.man_bits) - 1)
    return f"s={s} e={e:0{fmt.exp_bits}b} m={m:0{fmt.man_bits}b}"


def _torch_values(codes: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """Values of bit patterns according to torch: (N,) unsigned -> (N,) float64."""
    raw = torch.from_numpy(codes.astype(_UINT[fmt.bits]).view(_SINT[fmt.bits]))
    return raw.view(_TORCH[fmt.name]).to(torch.float64).numpy()


def _check_values(
    got: object,
    want: np.ndarray,
    codes: np.ndarray,
    fmt: FloatFormat,
    case: str,
    hints: dict[int, str] | None = None,
) -> None:
    """Values equal, NaN where NaN, -0.0 where -0.0; name the first wrong code."""
    try:
        a = np.asarray(plain(got, what="decode", case=case), dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise CheckFailure(f"[{case}] decode must return a float array: {exc}") from None
    if a.shape != want.shape:
        raise CheckFailure(f"[{case}] decode returned shape {a.shape} for {want.shape} codes.")
    nan_w, nan_a = np.isnan(want), np.isnan(a)
    bad = (nan_a != nan_w) | (~nan_w & ((a != want) | (np.signbit(a) != np.signbit(want))))
    if not bad.any():
        return
    i = int(np.argmax(bad))
    c = int(codes[i])
    hint = " ".join(h for h in ((hints or {}).get(c, ""), _decode_hint(c, fmt)) if h)
    raise CheckFailure(
        f"[{case}] {int(bad.sum())} of {bad.size} codes decode wrong; first: code "
        f"0x{c:0{fmt.bits // 4}x} ({_fields(c, fmt)}) gave {float(a[i])!r}, "
        f"expected {float(want[i])!r}. {hint}"
    )


def _decode_hint(code: int, fmt: FloatFormat) -> str:
    e = (code >> fmt.man_bits) & ((1 << fmt.exp_bits) - 1)
    m = code & ((1 << fmt.man_bits) - 1)
    if e == 0 and m != 0:
        return (
            "Exponent field 0 is a subnormal: no implicit leading 1 and exponent 1 - bias, "
            "v = (-1)^s 2^(1-b) m / 2^M (forgetting subnormals is the usual mistake)."
        )
    if e == (1 << fmt.exp_bits) - 1:
        return (
            "The all-ones exponent: IEEE formats use it for inf (m = 0) and NaN (m != 0); "
            "fn formats (E4M3, ieee_specials=False) keep normal numbers there, and only "
            "all-ones m is NaN."
        )
    if code == 1 << (fmt.bits - 1):
        return "-0.0 keeps its sign: build the magnitude, then negate where s = 1."
    return "Normal numbers: v = (-1)^s 2^(e-b) (1 + m / 2^M). " + _WRAP_HINT


_DECODE_NAMED: list[tuple[FloatFormat, int, float, str]] = [
    (FP8_E4M3, 0x38, 1.0, "e = bias and m = 0 is 1.0."),
    (FP8_E4M3, 0xB8, -1.0, "The sign bit is the top bit."),
    (FP8_E4M3, 0x08, 2.0**-6, "Smallest normal: e = 1, v = 2^(1-b)."),
    (FP8_E4M3, 0x01, 2.0**-9, ""),
    (FP8_E4M3, 0x80, -0.0, ""),
    (
        FP8_E4M3,
        0x7E,
        448.0,
        "E4M3 is an fn format (ieee_specials=False): the all-ones exponent "
        "holds normal numbers; 0x7E = 2^8 x 1.75 = 448 is its largest.",
    ),
    (FP8_E4M3, 0x7F, math.nan, "E4M3's only NaNs are 0x7F and 0xFF (all-ones e and m)."),
    (FP8_E5M2, 0x7B, 57344.0, "E5M2's largest: e = 11110, m = 11."),
    (FP8_E5M2, 0x7C, math.inf, "E5M2 is IEEE-like: all-ones exponent with m = 0 is inf."),
    (FP8_E5M2, 0xFC, -math.inf, ""),
    (FP8_E5M2, 0x7D, math.nan, ""),
    (FP8_E5M2, 0x03, 3 * 2.0**-16, ""),
    (FP16, 0x3C00, 1.0, ""),
    (FP16, 0x7BFF, 65504.0, "FP16's largest value is 65504."),
    (FP16, 0x0001, 2.0**-24, ""),
    (BF16, 0x3F80, 1.0, ""),
    (BF16, 0x0001, 2.0**-133, ""),
    (FP32, 0x3F800000, 1.0, ""),
    (FP32, 0x00000001, 2.0**-149, ""),
]


@grader(
    "01.1",
    blocks=(
        f"{_N}.formats:decode",
        f"{_N}.formats:all_values",
        f"{_N}.bfloat16:bf16_bits_to_float32",
        f"{_N}.fp8:dequantize",
    ),
    hand="bulk",
)
def check_decode(decode: Callable[..., object]) -> str:
    """Exercise 01.1: decode(bits, fmt) for every FloatFormat, against torch's dtypes."""
    for fmt in (FP8_E4M3, FP8_E5M2, FP16, BF16, FP32):
        rows = [r for r in _DECODE_NAMED if r[0] is fmt]
        codes = np.array([r[1] for r in rows], _UINT[fmt.bits])
        want = np.array([r[2] for r in rows])
        hints = {r[1]: r[3] for r in rows if r[3]}
        _check_values(decode(codes, fmt), want, codes, fmt, f"named {fmt.name} codes", hints)
    total = 0
    for fmt in (FP8_E4M3, FP8_E5M2, FP16, BF16):  # every code of every small format
        codes = np.arange(1 << fmt.bits).astype(_UINT[fmt.bits])
        _check_values(
            decode(codes, fmt),
            _torch_values(codes, fmt),
            codes,
            fmt,
            f"all {codes.size:,} {fmt.name} codes vs torch",
        )
        total += codes.size
    for g, n, case in (
        (rng(101), 100_000, "100,000 random fp32 codes vs numpy"),
        (fresh_rng("01.1"), 20_000, fresh("20,000 random fp32 codes vs numpy")),
    ):
        words = g.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
        with np.errstate(invalid="ignore"):
            want = words.view(np.float32).astype(np.float64)
        _check_values(decode(words, FP32), want, words, FP32, case)
        total += words.size
    return (
        f"{total:,} codes decoded exactly: all of E4M3, E5M2, FP16, BF16 (vs torch) "
        "and 120,000 random FP32 words"
    )
