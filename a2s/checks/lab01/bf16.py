"""Grader of exercise 01.2: FP32 -> BF16 round-to-nearest-even, bit-exact with torch."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from a2s.checks.cases import fresh
from a2s.checks.compare import array_out, call_pure
from a2s.checks.core import CheckFailure, fmt_bytes, fresh_rng, grader, rng

__all__ = ["check_round_to_bf16"]

_N = "minitorch.numerics"


def _float32_words(g: np.random.Generator, n_each: int) -> np.ndarray:
    """Random float32 words: anything, exact ties, near-ties, subnormals. (5 n_each,) uint32."""
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


_TRUNC = "That is truncation (the top 16 bits kept): add the rounding bias before the shift."
_ABOVE = "Above half-way (low 16 bits over 0x8000) rounds away from zero, to the next BF16."
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
    ("just above half-way", 0x3F808001, 0x3F81, _ABOVE),
    ("just below half-way", 0x3F807FFF, 0x3F80, "Below half-way must round down."),
    ("tie, kept bit even", 0x3F808000, 0x3F80, _TIES),
    ("tie, kept bit odd", 0x3F818000, 0x3F82, _TIES),
    ("negative tie", 0xBF808000, 0xBF80, _TIES + " The sign bit just passes through."),
    ("negative, above half", 0xBF808001, 0xBF81, _ABOVE),
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
    ("smallest subnormal", 0x00000001, 0x0000, "Below half-way must round down, to 0."),
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
    got = call_pure(
        student, x, case=case, why="your function modified its input array; work on a copy."
    )
    return array_out(
        got,
        case=case,
        shape=x.shape,
        dtype=np.uint16,
        dtype_hint="return the bit patterns as np.uint16.",
    )


def _nans(got: np.ndarray, words: np.ndarray, case: str, not_nan: str) -> None:
    """Every input word is a NaN: each result must be a quiet BF16 NaN."""
    quiet = (got & 0x7FC0) == 0x7FC0  # all-ones exponent and the quiet bit 0x0040
    if not quiet.all():
        i = int(np.argmin(quiet))
        is_nan = (got[i] & 0x7F80) == 0x7F80 and (got[i] & 0x007F) != 0
        raise CheckFailure(
            f"[{case}] NaN 0x{int(words[i]):08x} gave 0x{int(got[i]):04x}, "
            + (
                "a signalling NaN (quiet bit 0x0040 clear); the text asks for a quiet one. "
                if is_nan
                else not_nan
            )
            + _NAN
        )


def _vs_torch(
    student: Callable[..., object], words: np.ndarray, label: str, ties: str, new: bool = False
) -> tuple[int, int]:
    """Bit-exact with torch on ``words``, NaNs quiet; return (exact ties, NaNs) counted."""
    mark = fresh if new else str
    label, ties_label, vs = mark(label), mark(ties), mark(f"{label} vs torch")
    x = words.view(np.float32)
    got = _bf16_out(student, words, label)
    want = torch.from_numpy(x).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    nan = np.isnan(x)
    _nans(got[nan], words[nan], label, "not a NaN. ")
    tie = (words & 0xFFFF) == 0x8000
    keep = ~nan & tie
    _bits_mismatch(got[keep], want[keep], words[keep], ties_label, _TIES)
    _bits_mismatch(
        got[~nan],
        want[~nan],
        words[~nan],
        vs,
        "Compare with torch.tensor(x).to(torch.bfloat16) on this input.",
    )
    return int(tie.sum()), int(nan.sum())


@grader(
    "01.2",
    blocks=(
        f"{_N}.bfloat16:round_to_bf16_bits",
        f"{_N}.bfloat16:round_to_bf16",
        f"{_N}.formats:encode",
        f"{_N}.stochastic:stochastic_round_to_bf16",
    ),
    hand="bulk",
)
def check_round_to_bf16(round_to_bf16_bits: Callable[..., object]) -> str:
    """Exercise 01.2: float32 -> bfloat16 bits, round to nearest even, bit-exact with torch."""
    words = np.array([r[1] for r in _BF16_NAMED], np.uint32)
    got = _bf16_out(round_to_bf16_bits, words, "named cases")
    for (label, word, want, hint), g in zip(_BF16_NAMED, got, strict=True):
        if int(g) != want:
            hint = _TRUNC if int(g) == word >> 16 else hint  # the modelled mistake, if it is
            raise CheckFailure(
                f"[{label}] input 0x{word:08x} ({_f32(word)!r}) gave "
                f"0x{int(g):04x}, expected 0x{want:04x}. {hint}"
            )
    nans = np.array(_BF16_NANS, np.uint32)
    got = _bf16_out(round_to_bf16_bits, nans, "NaN inputs")
    _nans(got, nans, "NaN inputs", "which is not a BF16 NaN. ")
    words = _float32_words(rng(102), n_each=200_000)
    ties, nan = _vs_torch(
        round_to_bf16_bits, words, "1,000,000 values", "random exact ties vs torch"
    )
    new = _float32_words(fresh_rng("01.2"), 10_000)
    _vs_torch(round_to_bf16_bits, new, "50,000 values", "exact ties vs torch", new=True)
    return (
        f"{words.size:,} values bit-exact with torch .to(bfloat16) ({ties:,} exact ties, "
        f"{nan:,} NaNs stay quiet NaNs) and 50,000 fresh ones; {fmt_bytes(words.nbytes)} of "
        f"FP32 -> {fmt_bytes(words.nbytes // 2)} of BF16"
    )
