"""Graders of lab 11: the reference passes; wrong quantizers, packers that waste bytes or
lose the sign, GPTQ/AWQ that do not beat round-to-nearest, wrong SmoothQuant scales, and
calls of the reference fail."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch.model.quant as quant
import minitorch.model.quant_awq as quant_awq
import minitorch.model.quant_gptq as quant_gptq
import minitorch.model.quant_smooth as quant_smooth
from a2s.checks import lab11
from a2s.checks.core import ReferenceCalledError
from tests.helpers.graders import rejects, unblocked_in

unblocked = unblocked_in("minitorch.model")
quantize = unblocked(quant.quantize)
rtn = unblocked(quant.rtn)


# --------------------------------------------------------------------------- 11.1 quantizer
def quantize_groups(w, bits, group_size, symmetric):
    qt = quantize(w, bits, symmetric=symmetric, granularity=group_size)
    return qt.q, qt.scale, qt.zero


def _variant(w, bits, group_size, symmetric, *, rounding=np.round, zero_shift=0, axis=2, levels=0):
    """The quantizer with one mistake; axis=0 takes the statistics down the columns."""
    out, cols = w.shape
    b = w.reshape(out, cols // group_size, group_size)
    if axis == 2:
        mn, mx, amax = b.min(axis=2), b.max(axis=2), np.abs(b).max(axis=2)
    else:
        mn, mx, amax = (
            f(w, axis=0)[None, :] for f in (np.min, np.max, lambda a, axis: np.abs(a).max(axis))
        )
    if symmetric:
        hi = 2 ** (bits - 1) - 1
        lo, scale, zero = -hi, amax / hi, np.zeros(amax.shape)
    else:
        lo, hi = 0, 2**bits - 1
        mn, mx = np.minimum(mn, 0), np.maximum(mx, 0)
        scale = (mx - mn) / (hi + levels)
        zero = np.round(-mn / scale) + zero_shift
    if axis != 2:
        return np.round(w / scale).astype(int) + zero.astype(int), scale, zero.astype(int)
    q = np.clip(rounding(b / scale[..., None]) + zero[..., None], lo, hi)
    return q.reshape(w.shape).astype(int), scale, zero.astype(int)


def floor_rounding(w, bits, g, sym):
    return _variant(w, bits, g, sym, rounding=np.floor)


def truncating(w, bits, g, sym):
    return _variant(w, bits, g, sym, rounding=np.trunc)


def zero_off_by_one(w, bits, g, sym):
    return _variant(w, bits, g, sym, zero_shift=1)


def scale_down_the_columns(w, bits, g, sym):
    return _variant(w, bits, g, sym, axis=0)


def two_to_the_b_levels(w, bits, g, sym):
    return _variant(w, bits, g, sym, levels=1)


def test_quantize_passes(capsys):
    lab11.check_quantize(quantize_groups)
    assert "✔ Exercise 11.1 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("fn", "match"),
    [
        (floor_rounding, "Round to nearest"),
        (truncating, "Round to nearest"),
        (zero_off_by_one, "off by one"),
        (scale_down_the_columns, "wrong axis|axis=1"),
        (two_to_the_b_levels, "2\\^b - 1 steps"),
    ],
)
def test_quantize_rejects_known_wrong_variants(fn, match):
    rejects(lab11.check_quantize, fn, match=match)


def no_zero_group_guard(w, bits, group_size, symmetric):
    """Right everywhere except an all-zero group, whose scale stays 0 (NaN hidden)."""
    q, scale, zero = quantize_groups(w, bits, group_size, symmetric)
    flat = np.all(w.reshape(w.shape[0], -1, group_size) == 0, axis=2)
    return q, np.where(flat, 0.0, scale), zero


def test_quantize_rejects_a_scale_of_zero_for_an_all_zero_group():
    rejects(lab11.check_quantize, no_zero_group_guard, match="all-zero group must get scale 1.0")


def test_quantize_rejects_the_reference():
    def calls_reference(w, bits, g, sym):
        qt = quant.quantize(w, bits, symmetric=sym, granularity=g)
        return qt.q, qt.scale, qt.zero

    rejects(lab11.check_quantize, calls_reference, match="quantize", error=ReferenceCalledError)


# --------------------------------------------------------------------------- 11.2 packing
pack, unpack = unblocked(quant.pack_int4), unblocked(quant.unpack_int4)


def test_pack_passes(capsys):
    lab11.check_pack_int4(pack, unpack)
    assert "✔ Exercise 11.2 passed" in capsys.readouterr().out


def pack_high_first(q):
    n = q.astype(np.int16) & 0xF
    return ((n[:, 0::2] << 4) | n[:, 1::2]).astype(np.uint8)


def unpack_unsigned(p):
    return unpack(p, signed=False)


def pack_one_per_byte(q):
    return (q.astype(np.int16) & 0xF).astype(np.uint8)


@pytest.mark.parametrize(
    ("fns", "match"),
    [
        ((pack_high_first, unpack), "LOW nibble"),
        ((pack, unpack_unsigned), "sign-extend"),
        ((pack_one_per_byte, unpack), "bytes"),
    ],
)
def test_pack_rejects_wrong_packers(fns, match):
    rejects(lab11.check_pack_int4, *fns, match=match)


def test_pack_rejects_an_unpack_that_replays_what_pack_saw():
    seen = {}

    def pack_and_remember(q):
        p = pack(q)
        seen[p.tobytes()] = q.copy()
        return p

    def replay(p):
        return seen[p.tobytes()] if p.tobytes() in seen else np.zeros((p.shape[0], 2 * p.shape[1]))

    rejects(lab11.check_pack_int4, pack_and_remember, replay, match="decode any packed bytes")


def test_pack_rejects_the_reference():
    rejects(
        lab11.check_pack_int4,
        quant.pack_int4,
        unpack,
        match="pack_int4",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 11.3 GPTQ
gptq = unblocked(quant_gptq.gptq)


def test_gptq_passes(capsys):
    lab11.check_gptq(gptq)
    assert "✔ Exercise 11.3 passed" in capsys.readouterr().out


def rtn_only(w, x, bits, group_size):
    return rtn(w, bits, granularity=group_size)


def gptq_wrong_sign(w, x, bits, group_size):
    u = np.linalg.cholesky(np.linalg.inv(2 * x.T @ x / len(x) + 1e-2 * np.eye(w.shape[1]))).T
    w = w.copy()
    out = np.empty_like(w)
    for i in range(w.shape[1]):
        if i % group_size == 0:
            qt = quantize(w[:, i : i + group_size], bits, granularity="channel")
        q = np.clip(np.round(w[:, i : i + 1] / qt.scale) + qt.zero, 0, 2**bits - 1)
        out[:, i] = ((q - qt.zero) * qt.scale)[:, 0]
        w[:, i + 1 :] += np.outer((w[:, i] - out[:, i]) / u[i, i], u[i, i + 1 :])  # wrong sign
    return out


def unquantized(w, x, bits, group_size):
    return w


@pytest.mark.parametrize(
    ("fn", "match"),
    [
        (rtn_only, "no better than round-to-nearest"),
        (gptq_wrong_sign, "spread its error"),
        (unquantized, "2\\^bits distinct"),
    ],
)
def test_gptq_rejects_gptq_that_does_not_beat_rtn(fn, match):
    rejects(lab11.check_gptq, fn, match=match)


def test_gptq_rejects_the_reference():
    rejects(lab11.check_gptq, quant_gptq.gptq, match="gptq", error=ReferenceCalledError)


# --------------------------------------------------------------------------- 11.4 AWQ
awq_scales = unblocked(quant_awq.awq_scales)


def test_awq_passes(capsys):
    lab11.check_awq_scales(awq_scales)
    assert "✔ Exercise 11.4 passed" in capsys.readouterr().out


def no_scaling(w, x, bits, group_size):
    return np.ones(w.shape[1])


def scales_from_weights(w, x, bits, group_size):
    return np.abs(w).mean(axis=0) / np.abs(w).mean()  # the weights' magnitude, not x's


@pytest.mark.parametrize(
    ("fn", "match"), [(no_scaling, "alpha = 0 is plain RTN"), (scales_from_weights, "ACTIVATIONS")]
)
def test_awq_rejects_scales_that_do_not_beat_rtn(fn, match):
    rejects(lab11.check_awq_scales, fn, match=match)


def test_awq_rejects_the_reference():
    rejects(
        lab11.check_awq_scales, quant_awq.awq_scales, match="awq_scales", error=ReferenceCalledError
    )


# --------------------------------------------------------------------------- 11.5 SmoothQuant
smooth = unblocked(quant_smooth.smooth_scales)


def test_smooth_passes(capsys):
    lab11.check_smooth_scales(smooth)
    assert "✔ Exercise 11.5 passed" in capsys.readouterr().out


def swapped_exponents(xa, wa, alpha):
    return wa**alpha / xa ** (1 - alpha)


def inverted(xa, wa, alpha):
    return 1 / smooth(xa, wa, alpha)


@pytest.mark.parametrize(("fn", "match"), [(swapped_exponents, "swapped"), (inverted, "Inverted")])
def test_smooth_rejects_wrong_scales(fn, match):
    rejects(lab11.check_smooth_scales, fn, match=match)


def test_smooth_rejects_the_reference():
    rejects(
        lab11.check_smooth_scales,
        quant_smooth.smooth_scales,
        match="smooth_scales",
        error=ReferenceCalledError,
    )


# (exercise, phrase of the prose, the test that fails when the rule is broken)
MUSTS = [
    ("11.1", "Exercise code may not call torch", "test_attempt"),
    (
        "11.1",
        "nor the `minitorch` reference of the function the exercise asks you to write",
        "test_quantize_rejects_the_reference",
    ),
    (
        "11.1",
        "the quantizer must match the grader's own loop integer for integer and stay within "
        "its error bound",
        "test_quantize_rejects_known_wrong_variants",
    ),
    (
        "11.1",
        "the **round-trip error is at most half a step**",
        "test_quantize_rejects_known_wrong_variants",
    ),
    ("11.1", "all-zero groups", "test_quantize_rejects_a_scale_of_zero_for_an_all_zero_group"),
    ("11.2", "packing must take half a byte a value", "test_pack_rejects_wrong_packers"),
    (
        "11.2",
        "requires `unpack(pack(q)) == q` for negative values too, and decodes bytes it "
        "packed itself",
        "test_pack_rejects_an_unpack_that_replays_what_pack_saw",
    ),
    (
        "11.2",
        "*Invariant:* `pack_int4(np.array([[1, 2]]))` is `[[0x21]]`",
        "test_pack_rejects_wrong_packers",
    ),
    ("11.3", "`W_hat` must hold at most $2^b$ values per (row, group)", "test_attempt"),
    (
        "11.3",
        "its output error must be **at most 0.8x that of round-to-nearest**, on the "
        "calibration rows and on held-out rows",
        "test_gptq_rejects_gptq_that_does_not_beat_rtn",
    ),
    (
        "11.4",
        "requires the output error of `Q(W s) / s` to be **at most 0.7x that of "
        "round-to-nearest**, with the outlier channels getting the largest scales",
        "test_awq_rejects_scales_that_do_not_beat_rtn",
    ),
    (
        "11.5",
        "the error must be **at most a tenth** of naive W8A8's",
        "test_smooth_rejects_wrong_scales",
    ),
    (
        "11.5",
        "*Invariant:* `smooth_scales(np.array([4.0]), np.array([1.0]), 0.5)` is `[2.0]`",
        "test_smooth_rejects_wrong_scales",
    ),
]
