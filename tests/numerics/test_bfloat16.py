"""minitorch.numerics.bfloat16: bit-exact with torch's float32 -> bfloat16 / float16 casts."""

import numpy as np
import torch
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from minitorch.numerics.bfloat16 import (
    bf16_bits_to_float32,
    round_to_bf16,
    round_to_bf16_bits,
    round_to_fp16,
)


def torch_bf16_bits(x: np.ndarray) -> np.ndarray:
    return torch.from_numpy(x).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)


def million_float32(seed: int = 0) -> np.ndarray:
    """10^6 float32 words: random bits, exact ties, near-ties, subnormals, overflow, specials."""
    rng = np.random.default_rng(seed)
    n = 200_000
    high = rng.integers(0, 1 << 16, n * 4, dtype=np.uint32) << 16
    low = np.concatenate(
        [
            rng.integers(0, 1 << 16, n, dtype=np.uint32),  # anything
            np.full(n, 0x8000, np.uint32),  # exact ties: both parities of bit 16 occur
            rng.choice(np.array([0x7FFF, 0x8001, 0xFFFF, 0x0001], np.uint32), n),  # near-ties
            rng.integers(0, 1 << 16, n, dtype=np.uint32),
        ]
    )
    words = high | low
    sub = rng.integers(0, 1 << 23, n - 16, dtype=np.uint32) | (
        rng.integers(0, 2, n - 16, dtype=np.uint32) << 31
    )
    special = np.array(
        [
            0x7F800000,
            0xFF800000,
            0x7FC00000,
            0xFFC00000,
            0x7F800001,
            0xFF800001,
            0x7FFFFFFF,
            0xFFFFFFFF,
            0x7F7FFFFF,
            0xFF7FFFFF,
            0x7F7F8000,
            0x7F7F7FFF,
            0x00000000,
            0x80000000,
            0x00008000,
            0x00018000,
        ],
        np.uint32,
    )
    out = np.concatenate([words, sub, special]).view(np.float32)
    assert out.size == 1_000_000
    return out


def test_million_values_bit_exact_with_torch():
    x = million_float32()
    got = round_to_bf16_bits(x)
    assert got.dtype == np.uint16 and got.shape == x.shape
    nan = np.isnan(x)
    assert np.array_equal(got[~nan], torch_bf16_bits(x)[~nan])


def test_nan_becomes_quiet_nan_keeping_sign():
    words = np.array([0x7F800001, 0xFF800001, 0x7FFFFFFF, 0xFFFFFFFF, 0x7FC00000], np.uint32)
    got = round_to_bf16_bits(words.view(np.float32))
    assert ((got & 0x7F80) == 0x7F80).all() and ((got & 0x0040) != 0).all()  # quiet NaN
    assert ((got >> 15) == (words >> 31)).all()  # sign kept


def test_named_roundings():
    cases = {  # float32 word -> bf16 word
        0x3F808000: 0x3F80,  # 1 + 2^-8: a tie, kept bit even -> down
        0x3F818000: 0x3F82,  # 1 + 3 2^-8: a tie, kept bit odd -> up
        0x3F808001: 0x3F81,  # just above the tie -> up (truncation would give 0x3F80)
        0x7F7FFFFF: 0x7F80,  # FLT_MAX overflows to inf
        0x00018000: 0x0002,  # subnormal tie, odd -> up
        0x80000000: 0x8000,  # -0 keeps its sign
    }
    x = np.array(list(cases), np.uint32).view(np.float32)
    assert round_to_bf16_bits(x).tolist() == list(cases.values())


def test_widening_is_exact_for_every_code():
    codes = np.arange(1 << 16, dtype=np.uint16)
    want = torch.from_numpy(codes.view(np.int16)).view(torch.bfloat16).float().numpy()
    got = bf16_bits_to_float32(codes)
    assert np.array_equal(
        got.view(np.uint32)[~np.isnan(want)], want.view(np.uint32)[~np.isnan(want)]
    )
    assert np.array_equal(np.isnan(got), np.isnan(want))


def test_round_to_bf16_matches_torch_and_keeps_shape():
    x = np.random.default_rng(1).standard_normal((64, 33)).astype(np.float32) * 1e3
    before = x.copy()
    got = round_to_bf16(x)
    want = torch.from_numpy(x).to(torch.bfloat16).float().numpy()
    assert got.dtype == np.float32 and got.shape == x.shape
    assert np.array_equal(got, want)
    assert np.array_equal(x, before)  # input untouched
    assert np.array_equal(round_to_bf16(x.T), want.T)  # non-contiguous input
    scalar = round_to_bf16(np.float32(1.3))
    assert scalar.shape == () and scalar == np.float32(1.296875)  # 0-d in, 0-d out


def test_round_to_fp16_matches_torch():
    x = million_float32(seed=2)[:300_000]
    got = round_to_fp16(x)
    want = torch.from_numpy(x).to(torch.float16).float().numpy()
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(got[~nan], want[~nan])


@given(hnp.arrays(np.float32, st.integers(1, 64), elements=st.floats(width=32, allow_nan=False)))
def test_rounding_is_idempotent_and_monotone(x):
    r = round_to_bf16(x)
    assert np.array_equal(round_to_bf16(r), r)  # BF16 values are fixed points
    order = np.argsort(x, kind="stable")
    assert (r[order][1:] >= r[order][:-1]).all()  # rounding never reorders
    finite = np.isfinite(r)
    rel = np.abs(r[finite].astype(np.float64) - x[finite]) / np.maximum(
        np.abs(x[finite]), 2.0**-126
    )
    assert (rel <= 2.0**-8).all()  # u of bf16 (absolute in the subnormal range)
