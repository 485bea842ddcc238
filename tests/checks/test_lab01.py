"""Graders of lab 01: the reference passes, realistic wrong answers and reference calls fail."""

import math

import numpy as np
import pytest

from a2s.checks import lab01
from a2s.checks.core import CheckFailure, ForbiddenCallError, ReferenceCalledError, StudentError
from minitorch import numerics
from tests.helpers.graders import always_equal, rejects, unblocked_in

unblocked = unblocked_in("minitorch.numerics")


# --------------------------------------------------------------------------- 01.1 decode
def decode_variant(bits, fmt, *, subnormals=True, fn_specials=True, wrap=False):
    b = np.asarray(bits) if wrap else np.asarray(bits).astype(np.int64)
    s = (b >> (fmt.exp_bits + fmt.man_bits)) & 1
    e = (b >> fmt.man_bits) & ((1 << fmt.exp_bits) - 1)
    m = b & ((1 << fmt.man_bits) - 1)
    frac = m / 2.0**fmt.man_bits
    if wrap:
        # arithmetic stays in the codes' unsigned dtype, so e - bias wraps for small e
        e = e - np.asarray(fmt.bias, dtype=b.dtype)
        v = 2.0 ** e.astype(np.float64) * (1 + frac)
    else:
        v = np.where(
            (e == 0) & subnormals, 2.0 ** (1 - fmt.bias) * frac, 2.0 ** (e - fmt.bias) * (1 + frac)
        )
    top = e == (1 << fmt.exp_bits) - 1
    if fmt.ieee_specials or not fn_specials:
        v = np.where(top & ~wrap, np.where(m == 0, np.inf, np.nan), v)
    else:
        v = np.where(top & (m == (1 << fmt.man_bits) - 1), np.nan, v)
    return np.where(s == 1, -v, v)


def test_decode_reference_passes(capsys):
    lab01.check_decode(unblocked(numerics.decode))
    assert "✔ Exercise 01.1 passed" in capsys.readouterr().out


def test_decode_student_style_passes():
    lab01.check_decode(decode_variant)


def test_decode_rejects_missing_subnormals():
    rejects(
        lab01.check_decode, lambda b, f: decode_variant(b, f, subnormals=False), match="subnormal"
    )


def test_decode_rejects_ieee_specials_for_e4m3():
    rejects(lab01.check_decode, lambda b, f: decode_variant(b, f, fn_specials=False), match="448")


def test_decode_rejects_unsigned_wraparound():
    rejects(lab01.check_decode, lambda b, f: decode_variant(b, f, wrap=True), match="int64")


def test_decode_rejects_reference_calls():
    with pytest.raises(ReferenceCalledError):
        lab01.check_decode(lambda b, f: numerics.decode(b, f))
    with pytest.raises(ReferenceCalledError):
        lab01.check_decode(lambda b, f: numerics.all_values(f)[b])


# --------------------------------------------------------------------------- 01.2 bf16
def bf16_rne(x):
    u = x.view(np.uint32)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(x), np.uint16(0x7FC0), r)


def test_bf16_reference_passes():
    lab01.check_round_to_bf16(unblocked(numerics.round_to_bf16_bits))


def test_bf16_student_style_passes():
    lab01.check_round_to_bf16(bf16_rne)


def test_bf16_rejects_truncation():
    rejects(
        lab01.check_round_to_bf16,
        lambda x: (x.view(np.uint32) >> 16).astype(np.uint16),
        match="trunc",
    )


def test_bf16_rejects_round_half_away():
    def half_away(x):
        r = ((x.view(np.uint32) + 0x8000) >> 16).astype(np.uint16)
        return np.where(np.isnan(x), np.uint16(0x7FC0), r)

    rejects(lab01.check_round_to_bf16, half_away, match="even")


def test_bf16_rejects_missing_nan_handling():
    def no_nan(x):
        u = x.view(np.uint32)
        return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)

    rejects(lab01.check_round_to_bf16, no_nan, match="NaN")


def test_bf16_rejects_a_signalling_nan():
    def signalling(x):  # NaN kept as NaN, but the quiet bit is not set
        return np.where(np.isnan(x), np.uint16(0x7F81), bf16_rne(x)).astype(np.uint16)

    rejects(lab01.check_round_to_bf16, signalling, match="signalling NaN")


def test_bf16_rejects_wrong_dtype_and_in_place_edits():
    rejects(lab01.check_round_to_bf16, lambda x: bf16_rne(x).astype(np.uint32), match="uint16")

    def in_place(x):
        out = bf16_rne(x)
        x[...] = 0
        return out

    rejects(lab01.check_round_to_bf16, in_place, match="modified")


def test_bf16_rejects_reference_calls():
    for cheat in (
        numerics.round_to_bf16_bits,
        lambda x: numerics.encode(x, numerics.BF16),
        lambda x: (numerics.round_to_bf16(x).view(np.uint32) >> 16).astype(np.uint16),
    ):
        with pytest.raises(ReferenceCalledError):
            lab01.check_round_to_bf16(cheat)


# --------------------------------------------------------------------------- 01.3 fp8
def e4m3_variant(
    x,
    scale,
    *,
    saturate=True,
    ties_even=True,
    multiply=False,
    subnormals=True,
    float64=False,
    truncate=False,
):
    y = (x * np.float32(1 / scale)) if multiply else (x / np.float32(scale))
    y = x.astype(np.float64) / scale if float64 else y  # double rounding: off on rare ties
    y = y.astype(np.float64)
    mag = np.abs(y)
    if saturate:
        mag = np.minimum(mag, 448.0)
    _, k = np.frexp(np.where(np.isfinite(mag) & (mag > 0), mag, 1.0))
    exp = np.maximum(k - 1, -6)
    q = np.ldexp(mag, 3 - exp)
    n = np.rint(q) if ties_even else np.floor(q + 0.5)
    n = np.floor(q) if truncate else n
    if not subnormals:
        n = np.where(k - 1 < -6, 0, n)
    code = np.where(n > 0, (exp + 6) * 8 + n, 0)
    code = np.where(np.isnan(mag) | (code > 0x7E) | np.isinf(mag), 0x7F, code)
    code = np.where(np.isnan(mag), 0x7F, code).astype(np.int64)
    return (code | (np.signbit(y).astype(np.int64) << 7)).astype(np.uint8)


def test_e4m3_reference_passes():
    lab01.check_cast_to_e4m3(unblocked(numerics.cast_to_e4m3))


def test_e4m3_student_style_passes():
    lab01.check_cast_to_e4m3(e4m3_variant)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"saturate": False}, "saturation"),
        ({"ties_even": False}, "even"),
        ({"subnormals": False}, "Subnormals"),
        ({"multiply": True}, r"That is the code of x \* \(1 / scale\)"),
        ({"float64": True}, "That is the code of x / scale computed in float64"),
        ({"truncate": True}, "That code is y rounded toward zero"),
        ({"ties_even": False, "subnormals": False}, r"Ties go to even[^T]*$"),
    ],
)
def test_e4m3_rejects_wrong_answers(kwargs, match):
    """Modelled mistakes get their message; the others the rule of the case that failed."""
    rejects(lab01.check_cast_to_e4m3, lambda x, s: e4m3_variant(x, s, **kwargs), match=match)


def test_e4m3_rejects_reference_calls():
    for cheat in (
        numerics.cast_to_e4m3,
        lambda x, s: numerics.cast_to_fp8(x, s),
        lambda x, s: numerics.encode(x / np.float32(s), numerics.FP8_E4M3, saturate=True),
    ):
        with pytest.raises(ReferenceCalledError):
            lab01.check_cast_to_e4m3(cheat)


# --------------------------------------------------------------------------- 01.4 kahan
def kahan_f64(x):
    s = c = 0.0
    for v in x.tolist():
        y = v - c
        t = s + y
        c = (t - s) - y
        s = t
    return np.float32(s)


def neumaier(x):
    s, c = np.float32(0), np.float32(0)
    for v in x:
        t = s + v
        c += (s - t) + v if abs(s) >= abs(v) else (v - t) + s
        s = t
    return s + c


def test_kahan_reference_passes():
    lab01.check_kahan_sum(unblocked(numerics.kahan_sum))


@pytest.mark.parametrize(
    ("wrong", "match"),
    [
        (unblocked(numerics.naive_sum), "compensation"),
        (lambda x: sum(x, np.float32(0)), "compensation"),
        (kahan_f64, "float32"),
        (neumaier, "Neumaier"),
        (lambda x: float(sum(x.tolist())), "not a float32 value"),
    ],
)
def test_kahan_rejects_wrong_answers(wrong, match):
    rejects(lab01.check_kahan_sum, wrong, match=match)


def test_kahan_rejects_reference_calls():
    with pytest.raises(ReferenceCalledError):
        lab01.check_kahan_sum(numerics.kahan_sum)


# --------------------------------------------------------------------------- 01.5 pairwise
def pairwise_variant(x, *, block=8, left=lambda n: n // 2):
    if len(x) <= block:
        s = np.float32(0)
        for v in x:
            s = s + v
        return s
    h = left(len(x))
    return pairwise_variant(x[:h], block=block, left=left) + pairwise_variant(
        x[h:], block=block, left=left
    )


def test_pairwise_reference_passes():
    lab01.check_pairwise_sum(unblocked(numerics.pairwise_sum))


def test_pairwise_student_style_passes():
    lab01.check_pairwise_sum(pairwise_variant)


@pytest.mark.parametrize(
    ("wrong", "match"),
    [
        (lambda x: pairwise_variant(x, left=lambda n: n - n // 2), "n // 2"),
        (lambda x: pairwise_variant(x, block=2), "naively"),
        (lambda x: pairwise_variant(x, block=16), "n // 2"),
        (unblocked(numerics.kahan_sum), "expected"),
    ],
)
def test_pairwise_rejects_wrong_answers(wrong, match):
    rejects(lab01.check_pairwise_sum, wrong, match=match)


def test_library_sums_are_forbidden():
    for check in (lab01.check_kahan_sum, lab01.check_pairwise_sum):
        assert {"numpy:sum", "math:fsum"} <= set(check.forbid)
        rejects(
            check, lambda x: np.sum(x, dtype=np.float32), match="numpy", error=ForbiddenCallError
        )
        rejects(
            check,
            lambda x: np.float32(math.fsum(x.tolist())),
            match="fsum",
            error=ForbiddenCallError,
        )


def test_pairwise_rejects_reference_calls():
    with pytest.raises(ReferenceCalledError):
        lab01.check_pairwise_sum(lambda x: numerics.pairwise_sum(x))


# --------------------------------------------------------------------------- 01.6 loss scale
def scale_variant(scale, tracker, found_inf, growth=2.0, backoff=0.5, interval=2000, **bugs):
    if found_inf:
        return scale * backoff, 0
    tracker += 1
    if tracker >= interval + bugs.get("off_by_one", 0):
        if bugs.get("never_grow"):
            return scale, 0
        with np.errstate(over="ignore"):
            grown = np.float32(scale * growth)
        if np.isfinite(grown) or bugs.get("allow_inf"):
            scale = float(grown)
        return scale, (1 if bugs.get("reset_to_one") else 0)
    return scale, tracker


def test_update_scale_reference_passes():
    lab01.check_update_scale(unblocked(numerics.update_scale))


def test_update_scale_student_style_passes():
    lab01.check_update_scale(scale_variant)


@pytest.mark.parametrize(
    ("bug", "match"),
    [
        ("never_grow", r"returned \(65536.0, 0\), expected \(131072.0, 0\)\. A clean step"),
        ("reset_to_one", "back to 0"),
        ("off_by_one", "Off by one"),
        ("allow_inf", "The scale grew to inf"),
    ],
)
def test_update_scale_rejects_wrong_answers(bug, match):
    """A modelled mistake gets its message; one no model explains (never growing, resetting
    to 1) gets the rule of the case it failed."""

    def wrong(*args):
        return scale_variant(*args, **{bug: 1})

    rejects(lab01.check_update_scale, wrong, match=match)


def test_update_scale_rejects_reference_calls():
    def via_class(scale, tracker, found_inf, growth, backoff, interval):
        s = numerics.DynamicLossScaler(scale, growth, backoff, interval, tracker)
        s.update(found_inf)
        return s.scale, s.growth_tracker

    for cheat in (numerics.update_scale, via_class):
        with pytest.raises(ReferenceCalledError):
            lab01.check_update_scale(cheat)


# --------------------------------------------------------------------------- 01.7 stochastic
def sr_variant(x, rng, *, how="stochastic"):
    u = x.view(np.uint32)
    if how == "nearest":
        r = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    elif how == "coin":
        r = (u & 0xFFFF0000) + np.where(
            (u & 0xFFFF) != 0, rng.integers(0, 2, u.shape).astype(np.uint32) << 16, 0
        )
    else:
        noise = (
            np.random.randint(0, 1 << 16, u.shape)
            if how == "global"
            else rng.integers(0, 1 << 16, u.shape)
        ).astype(np.uint32)
        r = (u + noise) & 0xFFFF0000
    r = np.where(np.isnan(x), u, r)
    return r.astype(np.uint32).view(np.float32)


def test_stochastic_reference_passes():
    lab01.check_stochastic_round(unblocked(numerics.stochastic_round_to_bf16))


def test_stochastic_student_style_passes():
    lab01.check_stochastic_round(sr_variant)


@pytest.mark.parametrize(
    ("how", "match"), [("nearest", "half-way"), ("coin", "probability"), ("global", "seed")]
)
def test_stochastic_rejects_wrong_answers(how, match):
    rejects(lab01.check_stochastic_round, lambda x, r: sr_variant(x, r, how=how), match=match)


def test_stochastic_rejects_reference_calls():
    with pytest.raises(ReferenceCalledError):
        lab01.check_stochastic_round(numerics.stochastic_round_to_bf16)


# --------------------------------------------------------------------------- values are values
def test_values_that_decide_their_own_equality_are_rejected():
    rejects(
        lab01.check_decode,
        lambda b, f: always_equal(decode_variant(b, f)),
        match="subclass of ndarray",
    )
    rejects(lab01.check_round_to_bf16, lambda x: always_equal(bf16_rne(x)), match="subclass")
    rejects(lab01.check_kahan_sum, lambda x: always_equal(0.0), match="subclass of float")
    rejects(
        lab01.check_update_scale, lambda *a: (always_equal(1.0), always_equal(0)), match="subclass"
    )


# --------------------------------------------------------------------------- all graders
def test_graders_are_registered_and_blocks_resolve():
    from a2s.checks.core import blocked

    checks = [getattr(lab01, name) for name in lab01.__all__]
    assert sorted(c.exercise for c in checks) == [f"01.{i}" for i in range(1, 8)]
    for c in checks:
        assert c.blocks
        assert "torch" in c.forbid
        with blocked(c.blocks):
            pass


def test_stub_and_crash_are_reported():
    def stub(*args):
        raise NotImplementedError("Exercise 01.1: decode")

    with pytest.raises(CheckFailure, match="not implemented"):
        lab01.check_decode(stub)
    with pytest.raises(StudentError):
        lab01.check_kahan_sum(lambda x: 1 / 0)
