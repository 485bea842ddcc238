"""Grader of exercise 01.3: per-tensor scaled, saturating FP8 E4M3 cast, against torch."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch

from minitorch.checks.core import CheckFailure, assert_true, grader, rng

__all__ = ["check_cast_to_e4m3"]

_N = "minitorch.numerics"

_SAT = (
    "No saturation: E4M3 (fn) has no inf and 0x7F is NaN, so values beyond +-448 after "
    "scaling must clamp to +-448 (0x7E / 0xFE), and so must +-inf."
)
_SUB8 = "Subnormals: below 2^-6 the spacing stays 2^-9 (exponent field 0, no implicit 1)."
_E4M3_NAMED: list[tuple[str, float, float, int, str]] = [  # label, x, scale, code, hint
    ("1.0", 1.0, 1.0, 0x38, "1.0 is e = 0111 (the bias, 7), m = 000."),
    ("-1.0", -1.0, 1.0, 0xB8, "The sign goes in the top bit."),
    ("largest, 448", 448.0, 1.0, 0x7E, "448 = 2^8 x 1.75: e = 1111, m = 110."),
    (
        "tie 1.0625, even down",
        1.0625,
        1.0,
        0x38,
        "Ties go to even: 1.0625 is half-way between 1.0 (m = 000) and 1.125 (m = 001).",
    ),
    (
        "tie 1.1875, even up",
        1.1875,
        1.0,
        0x3A,
        "Ties go to even: 1.1875 is half-way between 1.125 (m = 001) and 1.25 (m = 010).",
    ),
    ("1.2, nearest", 1.2, 1.0, 0x3A, "Looks like truncation instead of rounding to nearest."),
    ("smallest normal", 2.0**-6, 1.0, 0x08, "2^-6 is e = 0001, m = 000."),
    ("smallest subnormal", 2.0**-9, 1.0, 0x01, _SUB8),
    ("subnormal tie to 0", 2.0**-10, 1.0, 0x00, _SUB8 + " 2^-10 is a tie between 0 and 2^-9."),
    ("subnormal tie, even up", 3 * 2.0**-10, 1.0, 0x02, _SUB8),
    ("-0.0", -0.0, 1.0, 0x80, "-0.0 keeps its sign bit."),
    (
        "tie 464, even down",
        464.0,
        1.0,
        0x7E,
        "464 is half-way between 448 and 480 (which would be 0x7F, NaN): ties to even give 448.",
    ),
    ("500 saturates", 500.0, 1.0, 0x7E, _SAT),
    ("-1e6 saturates", -1e6, 1.0, 0xFE, _SAT),
    ("+inf saturates", math.inf, 1.0, 0x7E, _SAT),
    ("-inf saturates", -math.inf, 1.0, 0xFE, _SAT),
    (
        "scaled: 3.0 at scale 0.25",
        3.0,
        0.25,
        0x54,
        "Divide by the scale first: "
        "y = x / scale = 12 = 2^3 x 1.5; the code stores y, and x ~= decode(code) x scale.",
    ),
    ("scaled: -96 at scale 0.25", -96.0, 0.25, 0xFC, "y = -96 / 0.25 = -384 = -2^8 x 1.5."),
]


_DIV = (
    "Compute y = x / scale in float32 (not x * (1 / scale), not float64), then round to "
    "nearest even, with subnormals below 2^-6."
)


def _e4m3_cases(n: int) -> list[tuple[str, np.ndarray, float]]:
    """Seeded tensors with their per-tensor scale amax / 448; one scale stale (amax grew 4x)."""
    g = rng(103)
    tensors = {
        "normal": g.standard_normal(n),
        "lognormal": g.lognormal(0, 3, n) * g.choice([-1, 1], n),
        "wide": g.standard_normal(n) * 10.0 ** g.integers(-8, 8, n),
        "tiny": g.standard_normal(n) * 1e-30,
    }
    out = []
    for name, x in tensors.items():
        x = x.astype(np.float32)
        out.append((f"{name} x {n:,}, scale = amax/448", x, float(np.abs(x).max()) / 448.0))
    x = out[0][1]
    out.append((f"normal x {n:,}, stale scale = amax/1792", x, float(np.abs(x).max()) / 1792.0))
    return out


def _torch_e4m3(x: np.ndarray, scale: float) -> np.ndarray:
    y = torch.from_numpy(x) / torch.tensor(scale, dtype=torch.float32)
    return y.clamp(-448.0, 448.0).to(torch.float8_e4m3fn).view(torch.uint8).numpy()


def _e4m3_out(student: Callable[..., object], x: np.ndarray, scale: float, case: str) -> np.ndarray:
    got = np.asarray(student(x, scale))
    assert_true(got.shape == x.shape, f"[{case}] returned shape {got.shape}, expected {x.shape}.")
    assert_true(
        got.dtype == np.uint8, f"[{case}] returned dtype {got.dtype}; return np.uint8 codes."
    )
    return got


@grader(
    "01.3",
    blocks=(f"{_N}.fp8:cast_to_e4m3", f"{_N}.fp8:cast_to_fp8", f"{_N}.formats:encode"),
)
def check_cast_to_e4m3(cast_to_e4m3: Callable[..., object]) -> str:
    """Exercise 01.3: per-tensor scaled, saturating FP8 E4M3 cast, bit-exact with torch."""
    for label, value, scale, want, hint in _E4M3_NAMED:
        got = _e4m3_out(cast_to_e4m3, np.array([value], np.float32), scale, label)
        if int(got[0]) != want:
            raise CheckFailure(
                f"[{label}] x = {value!r}, scale = {scale}: got code "
                f"0x{int(got[0]):02x}, expected 0x{want:02x}. {hint}"
            )
    got = _e4m3_out(cast_to_e4m3, np.array([np.nan, -np.nan], np.float32), 1.0, "NaN")
    assert_true(
        bool(((got & 0x7F) == 0x7F).all()),
        f"[NaN] NaN gave codes {[hex(int(c)) for c in got]}; NaN must stay NaN "
        "(0x7F or 0xFF), never saturate to 448 or become 0.",
    )
    n, checked, saturated, worst = 100_000, 0, 0, 0.0
    for case, x, scale in _e4m3_cases(n):
        got = _e4m3_out(cast_to_e4m3, x, scale, case)
        want = _torch_e4m3(x, scale)
        y = x / np.float32(scale)  # float32, as specified
        bad = got != want
        if bad.any():
            i = int(np.argmax(bad))
            hint = _SAT if abs(y[i]) > 448 else _DIV
            raise CheckFailure(
                f"[{case}] {int(bad.sum()):,} of {n:,} codes differ; first: x = {x[i]!r} "
                f"(y = x / scale = {y[i]!r}) gave 0x{int(got[i]):02x}, expected "
                f"0x{int(want[i]):02x}. {hint}"
            )
        back = torch.from_numpy(got).view(torch.float8_e4m3fn).double().numpy() * scale
        normal = (np.abs(y) >= 2.0**-6) & (np.abs(y) <= 448)  # relative error <= u holds here
        rel = np.abs(back[normal] - x[normal]) / np.abs(x[normal].astype(np.float64))
        worst = max(worst, float(rel.max()))
        checked += n
        saturated += int((np.abs(y) > 448).sum())
    assert_true(worst <= 2.0**-4 * (1 + 1e-6), f"relative error {worst:.4f} exceeds u = 2^-4.")
    return (
        f"{checked:,} values bit-exact with torch float8_e4m3fn ({saturated:,} saturated by a "
        f"stale scale); 1 byte per value, max relative error {worst:.4f} <= u = 2^-4"
    )
