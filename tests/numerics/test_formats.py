"""minitorch.numerics.formats against torch's float8/float16/bfloat16 and numpy's float32."""

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from minitorch.numerics.formats import (
    BF16,
    FORMATS,
    FP8_E4M3,
    FP8_E5M2,
    FP16,
    FP32,
    FloatFormat,
    all_values,
    decode,
    encode,
)

TORCH_DTYPE = {
    "fp32": torch.float32,
    "fp16": torch.float16,
    "bf16": torch.bfloat16,
    "fp8_e4m3": torch.float8_e4m3fn,
    "fp8_e5m2": torch.float8_e5m2,
}
VIEW_AS = {8: torch.uint8, 16: torch.int16, 32: torch.int32}
SMALL = [FP16, BF16, FP8_E4M3, FP8_E5M2]


def torch_decode(codes: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """Values of bit patterns according to torch (codes: unsigned ints of fmt.bits)."""
    signed = {8: np.uint8, 16: np.int16, 32: np.int32}[fmt.bits]
    t = torch.from_numpy(codes.astype({8: np.uint8, 16: np.uint16, 32: np.uint32}[fmt.bits]))
    t = torch.from_numpy(t.numpy().view(signed))
    return t.view(TORCH_DTYPE[fmt.name]).to(torch.float64).numpy()


def torch_encode(x: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """torch's float32 -> fmt cast, as unsigned bit patterns."""
    t = torch.from_numpy(x.astype(np.float32)).to(TORCH_DTYPE[fmt.name])
    out = t.view(VIEW_AS[fmt.bits]).numpy()
    return out.view({8: np.uint8, 16: np.uint16, 32: np.uint32}[fmt.bits])


def same_values(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal values, NaNs in the same places, and the same sign of zero."""
    return bool(
        np.array_equal(a, b, equal_nan=True)
        and np.array_equal(np.signbit(a[~np.isnan(a)]), np.signbit(b[~np.isnan(b)]))
    )


@pytest.mark.parametrize("fmt", list(FORMATS.values()), ids=lambda f: f.name)
def test_properties_match_torch_finfo(fmt):
    info = torch.finfo(TORCH_DTYPE[fmt.name])
    assert fmt.max_normal == info.max
    assert fmt.min_normal == info.smallest_normal
    assert fmt.eps == info.eps
    assert fmt.min_subnormal == float(torch_decode(np.array([1]), fmt)[0])
    assert fmt.unit_roundoff == fmt.eps / 2


@pytest.mark.parametrize("fmt", SMALL, ids=lambda f: f.name)
def test_decode_every_code_matches_torch(fmt):
    codes = np.arange(1 << fmt.bits)
    assert same_values(decode(codes, fmt), torch_decode(codes, fmt))
    assert np.array_equal(all_values(fmt), decode(codes, fmt), equal_nan=True)


def test_decode_fp32_random_codes_match_numpy():
    codes = np.random.default_rng(0).integers(0, 2**32, 200_000, dtype=np.uint64)
    codes = np.concatenate([codes.astype(np.uint32), [0, 1, 0x7F800000, 0xFF800000, 0x80000000]])
    with np.errstate(invalid="ignore"):  # signalling NaNs are quieted by the widening
        expected = codes.astype(np.uint32).view(np.float32).astype(np.float64)
    assert same_values(decode(codes, FP32), expected)


def test_decode_named_values():
    assert decode(np.array([0x38, 0x7E, 0x7F, 0x01, 0x08, 0x80]), FP8_E4M3).tolist()[:2] == [1, 448]
    assert np.isnan(decode(np.array([0x7F, 0xFF]), FP8_E4M3)).all()
    assert decode(np.array([0x01]), FP8_E4M3)[0] == 2.0**-9  # smallest subnormal
    assert decode(np.array([0x7C, 0xFC]), FP8_E5M2).tolist() == [np.inf, -np.inf]
    assert decode(np.array([0x7BFF]), FP16)[0] == 65504.0
    assert np.signbit(decode(np.array([0x8000]), BF16)[0])


def float32_cases(fmt: FloatFormat, n: int, seed: int) -> np.ndarray:
    """Random float32 words, every finite value of fmt, midpoints (ties) and near-ties."""
    rng = np.random.default_rng(seed)
    words = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    vals = np.unique(all_values(fmt)[np.isfinite(all_values(fmt))])
    mids = (vals[:-1] + vals[1:]) / 2  # exact in float64, and in float32 for <= 16-bit formats
    scaled = rng.standard_normal(n) * fmt.max_normal / rng.choice([1, 10, 1e3, 1e6], n)
    near = np.concatenate(
        [
            np.nextafter(mids.astype(np.float32), np.float32(np.inf)),
            np.nextafter(mids.astype(np.float32), np.float32(-np.inf)),
        ]
    )
    specials = np.array([np.inf, -np.inf, np.nan, -np.nan, 0.0, -0.0, fmt.max_normal * 1.5])
    with np.errstate(invalid="ignore", over="ignore"):
        return np.concatenate([words, vals, mids, near, scaled, specials]).astype(np.float32)


@pytest.mark.parametrize("fmt", [FP16, BF16, FP8_E5M2], ids=lambda f: f.name)
def test_encode_matches_torch_cast(fmt):
    x = float32_cases(fmt, 300_000, seed=1)
    got, want = encode(x, fmt), torch_encode(x, fmt)
    nan = np.isnan(x)
    assert np.array_equal(got[~nan], want[~nan])
    assert np.isnan(decode(got[nan], fmt)).all()


def test_encode_e4m3_saturating_matches_torch():
    # torch's float8_e4m3fn cast saturates (1000 -> 448, inf -> 448)
    x = float32_cases(FP8_E4M3, 300_000, seed=2)
    got, want = encode(x, FP8_E4M3, saturate=True), torch_encode(x, FP8_E4M3)
    nan = np.isnan(x)
    assert np.array_equal(got[~nan], want[~nan])
    assert np.isnan(decode(got[nan], FP8_E4M3)).all()


def test_encode_e4m3_overflow_is_nan_without_saturation():
    got = encode(np.array([464.0, 470.0, 480.0, -1e6, np.inf]), FP8_E4M3)
    assert got.tolist() == [0x7E, 0x7F, 0x7F, 0xFF, 0x7F]  # 464 is a tie: rounds to even 448
    assert encode(np.array([1e6, -np.inf]), FP8_E5M2).tolist() == [0x7C, 0xFC]
    assert encode(np.array([1e6, -np.inf]), FP8_E5M2, saturate=True).tolist() == [0x7B, 0xFB]


def test_encode_fp32_from_float64_matches_numpy_cast():
    rng = np.random.default_rng(3)
    x = rng.standard_normal(200_000) * 10.0 ** rng.integers(-45, 39, 200_000)
    x = np.concatenate([x, [1e39, -1e39, 2.0**-150, 3 * 2.0**-150, 2.0**-149 * 1.5]])
    with np.errstate(over="ignore"):
        want = x.astype(np.float32).view(np.uint32)
    assert np.array_equal(encode(x, FP32), want)


@pytest.mark.parametrize("fmt", SMALL, ids=lambda f: f.name)
def test_encode_decode_round_trip(fmt):
    codes = np.arange(1 << fmt.bits)
    vals = decode(codes, fmt)
    ok = ~np.isnan(vals)
    assert np.array_equal(encode(vals[ok], fmt), codes[ok])


def test_all_values_refuses_fp32():
    with pytest.raises(ValueError):
        all_values(FP32)


@given(
    st.sampled_from(SMALL),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
)
def test_encode_is_nearest_and_monotone(fmt, a, b):
    lo, hi = sorted((a, b))
    rlo, rhi = decode(encode(np.array([lo, hi]), fmt, saturate=True), fmt)
    assert rlo <= rhi  # rounding never reorders
    if abs(lo) <= fmt.max_normal:
        grid = np.unique(all_values(fmt)[np.isfinite(all_values(fmt))])
        best = np.min(np.abs(grid - lo))
        assert abs(rlo - lo) == best  # no representable value is closer
