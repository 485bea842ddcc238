"""Graders of exercises 11.1 (a group quantizer) and 11.2 (INT4 packing).

Ground truth: a plain loop over rows and groups (:mod:`.truth`). Every known-wrong variant
(floor or truncation instead of rounding, a zero point off by one, the scale taken down the
wrong axis, 2^b levels instead of 2^b - 1 steps) fails a teaching case with its hint; the
round trip must also stay within its bound, half a step. Packing must use half a byte a value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import assert_true, fresh_rng, grader, plain, rng
from a2s.checks.errors import CheckFailure
from a2s.checks.lab11._truth import dequant, quantize_loop

__all__ = ["check_pack_int4", "check_quantize"]

_Q = "minitorch.model.quant"
_ROUND = "Round to nearest (np.round), not floor or truncation: the error bound is half a step."
_ZERO = (
    "The zero point is round(-min / scale), the integer that 0.0 maps to; yours is off by one, "
    "which shifts every dequantized value by one step."
)
_AXIS = (
    "Each output row (and each group of `group_size` input columns in it) has its own scale: "
    "reduce over the input axis (axis=1) inside each group, not down the columns."
)
_LEVELS = "b bits give 2^b levels, so 2^b - 1 steps: scale = (max - min) / (2^b - 1)."
_SYM = "Symmetric: qmax = 2^(b-1) - 1 and scale = max|w| / qmax, zero point 0."


def _cases() -> list[tuple[str, np.ndarray, int, int, bool]]:
    a = rng(1101)
    positive = np.abs(a.standard_normal((3, 16))) + 0.5
    named = [
        ("INT8 asymmetric, per channel", a.standard_normal((4, 32)), 8, 32, False),
        ("INT4 asymmetric, groups of 8", a.standard_normal((6, 32)) * 3, 4, 8, False),
        ("INT4 symmetric, groups of 16", a.standard_normal((5, 64)), 4, 16, True),
        ("INT8 symmetric, per channel", a.standard_normal((3, 24)) * 0.01, 8, 24, True),
        ("all weights positive: min taken as 0", positive, 4, 8, False),
        (
            "rows of very different size",
            a.standard_normal((4, 16)) * [[1], [10], [0.1], [100]],
            4,
            16,
            False,
        ),
    ]
    zero_group = np.concatenate([np.zeros((2, 8)), a.standard_normal((2, 8))], axis=1)
    named.append(("an all-zero group: scale 1.0", zero_group, 4, 8, False))
    named.append(("an all-zero group, symmetric", zero_group[::-1].copy(), 8, 8, True))
    g = fresh_rng("11.1")
    extra = []
    for i in range(3):
        group = int(g.choice([4, 8, 16]))
        shape = (int(g.integers(2, 7)), group * int(g.integers(1, 5)))
        extra.append(
            (
                fresh(f"random case {i}"),
                g.standard_normal(shape) * g.uniform(0.1, 5),
                int(g.choice([3, 4, 8])),
                group,
                bool(g.integers(0, 2)),
            )
        )
    return named + extra


def _diagnose(
    q: Any,
    scale: Any,
    zero: Any,
    w: np.ndarray,
    bits: int,
    group: int,
    sym: bool,
    want: tuple[np.ndarray, ...],
) -> str:
    wq, ws, wz = want
    if np.shape(scale) != ws.shape:
        if np.shape(scale) in ((1, w.shape[1]), (w.shape[1],), (w.shape[1] // group, w.shape[1])):
            return _AXIS
        return f"scale should have shape (out, in / group_size) = {ws.shape}. " + _AXIS
    scale, zero, q = np.asarray(scale, float), np.asarray(zero), np.asarray(q)
    flat = np.all(w.reshape(w.shape[0], -1, group) == 0, axis=2)
    if np.any(flat) and not np.allclose(scale[flat], 1.0):
        return (
            f"an all-zero group must get scale 1.0 (and zero point 0), got "
            f"{scale[flat][:3].tolist()}: max - min is 0 there, so dividing by it gives NaN."
        )
    if not np.allclose(scale, ws, rtol=1e-9):
        hi = 2 ** (bits - 1) - 1 if sym else 2**bits - 1
        if np.allclose(scale, ws * hi / (hi + 1), rtol=1e-9):
            return _LEVELS
        return _SYM if sym else "scale = (max - min) / (2^b - 1) per group, with min <= 0 <= max."
    if np.shape(zero) == wz.shape and np.any(zero != wz):
        if np.all(np.abs(np.asarray(zero, float) - wz) <= 1):
            return _ZERO
        return "zero point: round(-min / scale) per group (0 when symmetric)."
    if np.shape(q) == wq.shape:
        d = np.asarray(q, float) - wq
        if np.all((d <= 0) & (d >= -1)) or np.all(np.abs(d) <= 1):
            return _ROUND
    return "q = clip(round(w / scale) + zero, qmin, qmax) per group."


@grader(
    "11.1",
    blocks=(
        f"{_Q}:quantize",
        f"{_Q}:quantize_groups",
        f"{_Q}:rtn",
        f"{_Q}:dequantize",
        "a2s.checks.lab11._truth:quantize_loop",  # the lab's own ground truth
        "a2s.checks.lab11._truth:rtn",
    ),
    hand="parts",
)
def check_quantize(quantize_groups: Callable[..., Any]) -> str:
    """Exercise 11.1: ``quantize_groups(w, bits, group_size, symmetric) -> (q, scale, zero)``."""
    cases = _cases()
    worst = 0.0
    for label, w, bits, group, sym in cases:
        got = plain(quantize_groups(w.copy(), bits, group, sym), case=label)
        assert_true(
            isinstance(got, tuple) and len(got) == 3,
            f"[{label}] return the tuple (q, scale, zero).",
        )
        q, scale, zero = got
        want = quantize_loop(w, bits, group, sym)
        ok = (
            np.shape(q) == want[0].shape
            and np.shape(scale) == want[1].shape
            and np.shape(zero) == want[2].shape
        )
        ok = (
            ok
            and np.array_equal(np.asarray(q), want[0])
            and np.array_equal(np.asarray(zero), want[2])
            and np.allclose(scale, want[1], rtol=1e-9, atol=0)
        )
        if not ok:
            raise CheckFailure(
                f"[{label}] bits={bits}, group_size={group}, symmetric={sym}: "
                + _diagnose(q, scale, zero, w, bits, group, sym, want)
            )
        err = np.abs(dequant(np.asarray(q), np.asarray(scale), np.asarray(zero)) - w)
        bound = np.repeat(np.asarray(scale), group, axis=1) / 2
        assert_true(
            bool(np.all(err <= bound * (1 + 1e-9))),
            f"[{label}] a round-trip error exceeds scale / 2. " + _ROUND,
        )
        worst = max(worst, float((err / bound).max()))
    return (
        f"{len(cases)} cases match the plain loop; round-trip error at most "
        f"{worst:.3f} x its bound of half a step"
    )


def _pack_cases() -> list[tuple[str, np.ndarray]]:
    a = rng(1102)
    named = [
        ("0..7 and -8..-1 (sign extension)", np.arange(-8, 8).reshape(1, 16)),
        ("one byte: [1, 2] -> 0x21", np.array([[1, 2]])),
        ("a (4, 32) INT4 weight", a.integers(-8, 8, (4, 32))),
    ]
    g = fresh_rng("11.2")
    shape = (int(g.integers(1, 6)), 2 * int(g.integers(1, 40)))
    return [*named, (fresh("random INT4 matrix"), g.integers(-8, 8, shape))]


@grader("11.2", blocks=(f"{_Q}:pack_int4", f"{_Q}:unpack_int4"), hand="parts")
def check_pack_int4(pack_int4: Callable[..., Any], unpack_int4: Callable[..., Any]) -> str:
    """Exercise 11.2: two signed 4-bit values a byte, element 2k in the low nibble."""
    total = 0
    for label, q in _pack_cases():
        q = q.astype(np.int8)
        packed = plain(pack_int4(q.copy()), case=label)
        packed = np.asarray(packed)
        assert_true(
            packed.dtype == np.uint8, f"[{label}] pack into np.uint8 bytes, got {packed.dtype}."
        )
        assert_true(
            packed.shape == (q.shape[0], q.shape[1] // 2),
            f"[{label}] {q.size} INT4 values take {q.size // 2} bytes, shape "
            f"{(q.shape[0], q.shape[1] // 2)}; got {packed.shape} ({packed.nbytes} bytes).",
        )
        want = np.array(
            [
                [
                    (int(r[2 * k]) & 0xF) | ((int(r[2 * k + 1]) & 0xF) << 4)
                    for k in range(q.shape[1] // 2)
                ]
                for r in q
            ],
            np.uint8,
        )
        if not np.array_equal(packed, want):
            swapped = (want >> 4) | ((want & 0xF) << 4)
            hint = (
                "Element 2k goes in the LOW nibble, 2k + 1 in the high one."
                if np.array_equal(packed, swapped)
                else "byte k = (q[2k] & 0xF) | ((q[2k + 1] & 0xF) << 4)."
            )
            raise CheckFailure(f"[{label}] wrong bytes: {hint}")
        back = np.asarray(plain(unpack_int4(packed.copy()), case=label))
        if not np.array_equal(back, q):
            hint = (
                "Negative values come back as 8..15: sign-extend a nibble above 7 (subtract 16)."
                if np.array_equal(back, q & 0xF)
                else "unpack is the inverse of pack: low nibble first, sign-extended."
            )
            raise CheckFailure(f"[{label}] unpack(pack(q)) != q. {hint}")
        other = -1 - q  # bytes your pack never produced: unpack must decode any bytes
        want2 = ((other[:, 0::2].astype(np.int64) & 0xF) | ((other[:, 1::2] & 0xF) << 4)).astype(
            np.uint8
        )
        back2 = np.asarray(plain(unpack_int4(want2.copy()), case=label))
        if back2.shape != other.shape or not np.array_equal(back2, other):
            raise CheckFailure(
                f"[{label}, the grader's own bytes of -1 - q] unpack_int4 gives the wrong values: "
                f"unpack must decode any packed bytes, low nibble first, sign-extended."
            )
        total += q.size
    return f"{total} INT4 values round-trip at 0.5 bytes each (4x smaller than int16, 2x int8)"
