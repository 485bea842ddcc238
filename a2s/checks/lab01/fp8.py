"""Grader of exercise 01.3: per-tensor scaled, saturating FP8 E4M3 cast, against torch."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch

from a2s.checks.cases import Case, Mistake, fresh, run_cases
from a2s.checks.compare import array_out
from a2s.checks.core import CheckFailure, assert_true, fresh_rng, grader, rng

__all__ = ["check_cast_to_e4m3"]

_N = "minitorch.numerics"

_SAT = (
    "No saturation: E4M3 (fn) has no inf and 0x7F is NaN, so values beyond +-448 after "
    "scaling must clamp to +-448 (0x7E / 0xFE), and so must +-inf."
)
_DIV = (
    "y = x / scale, divided in float32, then rounded to the nearest code, ties to even, "
    "with subnormals below 2^-6."
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
    (
        "1.2, nearest",
        1.2,
        1.0,
        0x3A,
        "1.2 lies between 1.125 (0x39) and 1.25 (0x3A): 1.25 is nearer.",
    ),
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
    # x / scale is a tie in float32 but not in float64: dividing in float64 rounds the other way
    ("float32 quotient is the tie 1.0625", 1.3469656705856323, 1.2677323818206787, 0x38, _DIV),
    ("float32 quotient is the tie 1.1875", 2.2867634296417236, 1.925695538520813, 0x3A, _DIV),
]


def _e4m3_cases(g: np.random.Generator, n: int) -> list[tuple[str, np.ndarray, float]]:
    """Seeded tensors with their per-tensor scale amax / 448; one scale stale (amax grew 4x)."""
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


def _double_rounding(g: np.random.Generator, n: int) -> list[tuple[float, float]]:
    """``n`` pairs (x, scale) whose quotient is an E4M3 tie in float32 but not in float64."""
    codes = g.integers(0x08, 0x7E, 4096).astype(np.uint8)  # normal codes below the largest
    grid = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(torch.float8_e4m3fn)
    values = grid.double().numpy()
    tie = (values[codes] + values[codes + 1]) / 2
    scale = g.uniform(0.5, 2.0, tie.size).astype(np.float32)
    x = (tie * scale).astype(np.float32)
    y32, y64 = x / scale, x.astype(np.float64) / scale.astype(np.float64)
    hits = np.flatnonzero((y32 == tie) & (y64 != tie))[:n]
    return [(float(x[i]), float(scale[i])) for i in hits]


def _torch_e4m3(x: np.ndarray, scale: float) -> np.ndarray:
    y = torch.from_numpy(x) / torch.tensor(scale, dtype=torch.float32)
    return y.clamp(-448.0, 448.0).to(torch.float8_e4m3fn).view(torch.uint8).numpy()


def _grid() -> np.ndarray:
    """The values of the 127 non-negative, non-NaN codes 0x00..0x7E, by torch."""
    codes = torch.arange(0x7F, dtype=torch.int32).to(torch.uint8)
    return codes.view(torch.float8_e4m3fn).double().numpy()


def _toward_zero(x: float, scale: float) -> int | None:
    """The code of y = x / scale (float32) rounded toward zero: truncation, modelled."""
    y = float(np.float32(x) / np.float32(scale))
    if not math.isfinite(y) or abs(y) > 448:
        return None
    code = int(np.flatnonzero(_grid() <= abs(y))[-1])
    return code | (0x80 if math.copysign(1.0, y) < 0 else 0)


def _by_reciprocal(x: float, scale: float) -> int:
    """The code of x * (1 / scale) in float32, rounded right: a multiply, modelled."""
    y = np.float32(x) * (np.float32(1.0) / np.float32(scale))
    return int(_torch_e4m3(np.array([y], np.float32), 1.0)[0])


def _in_float64(x: float, scale: float) -> int:
    """The code nearest x / scale computed in float64 (no longer a tie), modelled."""
    y = float(x) / float(scale)
    code = int(np.argmin(np.abs(_grid() - abs(y))))
    return code | (0x80 if math.copysign(1.0, y) < 0 else 0)


_CAST_MISTAKES = (
    Mistake(
        "That code is y rounded toward zero (truncated mantissa bits): round to the nearest "
        "code, ties to even.",
        answer=_toward_zero,
    ),
    Mistake(
        "That is the code of x * (1 / scale): the reciprocal is rounded first, and on this "
        "tie the product lands on the other side. Divide, y = x / scale, in float32.",
        answer=_by_reciprocal,
    ),
    Mistake(
        "That is the code of x / scale computed in float64, where the quotient is not a tie: "
        "the division is specified in float32 (as torch does it), then round to nearest even.",
        answer=_in_float64,
    ),
)


def _e4m3_out(student: Callable[..., object], x: np.ndarray, scale: float, case: str) -> np.ndarray:
    return array_out(
        student(x, scale),
        case=case,
        shape=x.shape,
        dtype=np.uint8,
        dtype_hint="return np.uint8 codes.",
    )


def _one_value(student: Callable[..., object], cases: list[Case]) -> int:
    """Cases ``(x, scale)`` cast one value at a time: the code must be the expected one."""

    def read(got: object, case: str) -> int:
        return int(
            array_out(
                got, case=case, shape=(1,), dtype=np.uint8, dtype_hint="return np.uint8 codes."
            )[0]
        )

    return run_cases(
        lambda value, scale: student(np.array([value], np.float32), scale),
        cases,
        read=read,
        message=lambda c, got, want, hint: (
            f"[{c.label}] x = {c.args[0]!r}, scale = {c.args[1]}: got code "
            f"0x{got:02x}, expected 0x{want:02x}. {hint}"
        ),
    )


def _vs_torch(student: Callable[..., object], case: str, x: np.ndarray, scale: float) -> float:
    """Bit-exact with torch; return the worst relative error of the normal range."""
    got = _e4m3_out(student, x, scale, case)
    want = _torch_e4m3(x, scale)
    y = x / np.float32(scale)  # float32, as specified
    bad = got != want
    if bad.any():
        i = int(np.argmax(bad))
        hint = _SAT if abs(y[i]) > 448 else _DIV
        if abs(y[i]) <= 448:  # the first wrong code, against each modelled mistake
            one = Case("", (float(x[i]), float(scale)), int(want[i]), _CAST_MISTAKES, _DIV)
            hint = one.diagnose(int(got[i]), lambda a, b: a == b)
        raise CheckFailure(
            f"[{case}] {int(bad.sum()):,} of {x.size:,} codes differ; first: x = {x[i]!r} "
            f"(y = x / scale = {y[i]!r}) gave 0x{int(got[i]):02x}, expected "
            f"0x{int(want[i]):02x}. {hint}"
        )
    back = torch.from_numpy(got).view(torch.float8_e4m3fn).double().numpy() * scale
    normal = (np.abs(y) >= 2.0**-6) & (np.abs(y) <= 448)  # relative error <= u holds here
    rel = np.abs(back[normal] - x[normal]) / np.abs(x[normal].astype(np.float64))
    return float(rel.max()) if rel.size else 0.0


@grader(
    "01.3",
    blocks=(f"{_N}.fp8:cast_to_e4m3", f"{_N}.fp8:cast_to_fp8", f"{_N}.formats:encode"),
    hand="bulk",
)
def check_cast_to_e4m3(cast_to_e4m3: Callable[..., object]) -> str:
    """Exercise 01.3: per-tensor scaled, saturating FP8 E4M3 cast, bit-exact with torch."""
    named = [Case(c, (x, s), want, _CAST_MISTAKES, h) for c, x, s, want, h in _E4M3_NAMED]
    _one_value(cast_to_e4m3, named)
    got = _e4m3_out(cast_to_e4m3, np.array([np.nan, -np.nan], np.float32), 1.0, "NaN")
    assert_true(
        bool(((got & 0x7F) == 0x7F).all()),
        f"[NaN] NaN gave codes {[hex(int(c)) for c in got]}; NaN must stay NaN "
        "(0x7F or 0xFF), never saturate to 448 or become 0.",
    )
    n, checked, saturated, worst = 100_000, 0, 0, 0.0
    for case, x, scale in _e4m3_cases(rng(103), n):
        worst = max(worst, _vs_torch(cast_to_e4m3, case, x, scale))
        checked += n
        saturated += int((np.abs(x / np.float32(scale)) > 448).sum())
    new = fresh_rng("01.3")
    label, ties = fresh("a float32 quotient on a tie"), _double_rounding(new, 3)
    truth = lambda x, s: int(_torch_e4m3(np.array([x], np.float32), s)[0])  # noqa: E731
    _one_value(cast_to_e4m3, [Case(label, pair, truth, _CAST_MISTAKES, _DIV) for pair in ties])
    case, x, scale = _e4m3_cases(new, 10_000)[int(new.integers(0, 5))]
    worst = max(worst, _vs_torch(cast_to_e4m3, fresh(case), x, scale))
    assert_true(worst <= 2.0**-4 * (1 + 1e-6), f"relative error {worst:.4f} exceeds u = 2^-4.")
    return (
        f"{checked:,} values bit-exact with torch float8_e4m3fn ({saturated:,} saturated by a "
        f"stale scale), plus 10,003 fresh ones; 1 byte per value, max relative error "
        f"{worst:.4f} <= u = 2^-4"
    )
