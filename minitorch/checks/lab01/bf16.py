"""Grader of exercise 01.2: FP32 -> BF16 round-to-nearest-even, bit-exact with torch."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from minitorch.checks.core import CheckFailure, assert_true, fmt_bytes, grader, rng

__all__ = ["check_round_to_bf16"]

_N = "minitorch.numerics"


def _float32_words(seed: int, n_each: int) -> np.ndarray:
    """Random float32 words: anything, exact ties, near-ties, subnormals. (5 n_each,) uint32."""
    g = rng(seed)
    high = g.integers(0, 1 << 16, 4 * n_each, dtype=np.uint32) << 16
    low = np.concatenate(
        [
            g.integers(0, 1 << 16, 2 * n_each, dtype=np.uint32),
            np.full(n_each, 0x8000, np.uint32),  # exact ties
            g.choice(np.array([0x7FFF, 0x8001, 0xFFFF, 0x0001], np.uint32), n_each),
        ]
    )
    sub = g.integers(0, 1 << 23, n_each, dtype=np.uint32) | (
        g.integers(0, 2, n_each, dtype=np.uint32) << 31
    )
    return np.concatenate([high | low, sub])


_TRUNC = "Looks like truncation instead of rounding: add the rounding bias before the shift."
_TIES = (
    "Ties must go to even: at exactly half-way (low 16 bits 0x8000) keep the value whose "
    "last kept bit is 0. Adding 0x8000 rounds half away from zero; add 0x7FFF + bit 16."
)
_NAN = (
    "Handle NaN before rounding (np.isnan): adding the bias to a NaN can carry into the "
    "exponent (inf) or the sign. Return a quiet NaN, e.g. (bits >> 16) | 0x0040."
)
_BF16_NAMED: list[tuple[str, int, int, str]] = [
    ("1.0", 0x3F800000, 0x3F80, "1.0 is 0x3F800000; its top half 0x3F80 is BF16 1.0."),
    ("just above half-way", 0x3F808001, 0x3F81, _TRUNC),
    ("just below half-way", 0x3F807FFF, 0x3F80, "Below half-way must round down."),
    ("tie, kept bit even", 0x3F808000, 0x3F80, _TIES),
    ("tie, kept bit odd", 0x3F818000, 0x3F82, _TIES),
    ("negative tie", 0xBF808000, 0xBF80, _TIES + " The sign bit just passes through."),
    ("negative, above half", 0xBF808001, 0xBF81, _TRUNC),
    (
        "carry into the exponent",
        0x3FFFFFFF,
        0x4000,
        "A carry out of the mantissa must reach "
        "the exponent: add in uint32, then shift; no masking in between.",
    ),
    (
        "FLT_MAX overflows to inf",
        0x7F7FFFFF,
        0x7F80,
        "Rounding up past BF16's largest value gives inf (0x7F80): the carry does this by itself.",
    ),
    ("+inf", 0x7F800000, 0x7F80, "inf must stay inf."),
    ("-inf", 0xFF800000, 0xFF80, "-inf must stay -inf."),
    ("-0.0", 0x80000000, 0x8000, "-0.0 keeps its sign."),
    ("subnormal tie, odd", 0x00018000, 0x0002, _TIES),
    ("smallest subnormal", 0x00000001, 0x0000, _TRUNC),
]
_BF16_NANS = [0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FFFFFFF, 0xFFFFFFFF]


def _f32(word: int) -> float:
    return float(np.array([word], np.uint32).view(np.float32)[0])


def _bits_mismatch(
    got: np.ndarray, want: np.ndarray, words: np.ndarray, case: str, hint: str
) -> None:
    bad = got != want
    if bad.any():
        i = int(np.argmax(bad))
        raise CheckFailure(
            f"[{case}] {int(bad.sum()):,} of {bad.size:,} values round wrong; first: input "
            f"0x{int(words[i]):08x} ({_f32(int(words[i]))!r}) gave "
            f"0x{int(got[i]):04x}, expected 0x{int(want[i]):04x}. {hint}"
        )


def _bf16_out(student: Callable[..., object], words: np.ndarray, case: str) -> np.ndarray:
    x = words.view(np.float32)
    before = x.copy()
    got = np.asarray(student(x))
    assert_true(
        np.array_equal(x.view(np.uint32), before.view(np.uint32)),
        f"[{case}] your function modified its input array; work on a copy.",
    )
    assert_true(got.shape == x.shape, f"[{case}] returned shape {got.shape}, expected {x.shape}.")
    assert_true(
        got.dtype == np.uint16,
        f"[{case}] returned dtype {got.dtype}; return the bit patterns as np.uint16.",
    )
    return got


@grader(
    "01.2",
    blocks=(
        f"{_N}.bfloat16:round_to_bf16_bits",
        f"{_N}.bfloat16:round_to_bf16",
        f"{_N}.formats:encode",
        f"{_N}.stochastic:stochastic_round_to_bf16",
    ),
)
def check_round_to_bf16(round_to_bf16_bits: Callable[..., object]) -> str:
    """Exercise 01.2: float32 -> bfloat16 bits, round to nearest even, bit-exact with torch."""
    words = np.array([r[1] for r in _BF16_NAMED], np.uint32)
    got = _bf16_out(round_to_bf16_bits, words, "named cases")
    for (label, word, want, hint), g in zip(_BF16_NAMED, got, strict=True):
        if int(g) != want:
            raise CheckFailure(
                f"[{label}] input 0x{word:08x} ({_f32(word)!r}) gave "
                f"0x{int(g):04x}, expected 0x{want:04x}. {hint}"
            )
    nans = np.array(_BF16_NANS, np.uint32)
    got = _bf16_out(round_to_bf16_bits, nans, "NaN inputs")
    is_nan = ((got & 0x7F80) == 0x7F80) & ((got & 0x007F) != 0)
    if not is_nan.all():
        i = int(np.argmin(is_nan))
        raise CheckFailure(
            f"[NaN inputs] NaN 0x{int(nans[i]):08x} gave 0x{int(got[i]):04x}, "
            f"which is not a BF16 NaN. {_NAN}"
        )
    words = _float32_words(seed=102, n_each=200_000)
    x = words.view(np.float32)
    got = _bf16_out(round_to_bf16_bits, words, "1,000,000 values")
    want = torch.from_numpy(x).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    nan = np.isnan(x)
    got_nan = ((got & 0x7F80) == 0x7F80) & ((got & 0x007F) != 0)
    if not got_nan[nan].all():
        i = int(np.flatnonzero(nan & ~got_nan)[0])
        raise CheckFailure(
            f"[1,000,000 values] NaN 0x{int(words[i]):08x} gave "
            f"0x{int(got[i]):04x}, not a NaN. {_NAN}"
        )
    ties = (words & 0xFFFF) == 0x8000
    _bits_mismatch(
        got[~nan & ties], want[~nan & ties], words[~nan & ties], "random exact ties vs torch", _TIES
    )
    _bits_mismatch(
        got[~nan],
        want[~nan],
        words[~nan],
        "1,000,000 values vs torch",
        "Compare with torch.tensor(x).to(torch.bfloat16) on this input.",
    )
    return (
        f"{words.size:,} values bit-exact with torch .to(bfloat16) ({int(ties.sum()):,} exact "
        f"ties, {int(nan.sum()):,} NaNs stay NaN); {fmt_bytes(x.nbytes)} of FP32 -> "
        f"{fmt_bytes(got.nbytes)} of BF16"
    )
