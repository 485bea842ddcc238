"""minitorch.numerics.fp8: per-tensor scaled casts against torch's float8 dtypes."""

import numpy as np
import pytest
import torch

from minitorch.numerics.formats import FP8_E4M3, FP8_E5M2
from minitorch.numerics.fp8 import cast_to_e4m3, cast_to_fp8, dequantize, fp8_scale


def torch_cast(x: np.ndarray, scale: float, dtype: torch.dtype, fmax: float) -> np.ndarray:
    y = torch.from_numpy(x) / torch.tensor(scale, dtype=torch.float32)
    return y.clamp(-fmax, fmax).to(dtype).view(torch.uint8).numpy()


def sample(seed: int, n: int = 200_000) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n) * 10.0 ** rng.integers(-6, 6, n)
    x[rng.integers(0, n, 50)] = 0.0
    return x.astype(np.float32)


def test_scale_maps_amax_to_max():
    assert fp8_scale(448.0) == 1.0
    assert fp8_scale(57344.0, FP8_E5M2) == 1.0
    assert fp8_scale(0.0) == 1.0 and fp8_scale(float("inf")) == 1.0 and fp8_scale(np.nan) == 1.0
    x = sample(0)
    codes = cast_to_e4m3(x, fp8_scale(np.abs(x).max()))
    assert (codes & 0x7F).max() == 0x7E  # the largest magnitude lands on 448


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_e4m3_cast_matches_torch(seed):
    x = sample(seed)
    for amax in (np.abs(x).max(), 1.0, 1e-3, 3.7):  # also stale scales that overflow
        scale = fp8_scale(amax)
        assert np.array_equal(
            cast_to_e4m3(x, scale), torch_cast(x, scale, torch.float8_e4m3fn, 448)
        )


def test_e5m2_cast_matches_torch():
    x = sample(4)
    scale = fp8_scale(np.abs(x).max() / 8, FP8_E5M2)
    want = torch_cast(x, scale, torch.float8_e5m2, 57344.0)
    assert np.array_equal(cast_to_fp8(x, scale, FP8_E5M2), want)


def test_saturation_and_specials():
    x = np.array([448.0, 449.0, 1e30, np.inf, -np.inf, np.nan, 464.0, -0.0], np.float32)
    codes = cast_to_e4m3(x, 1.0)
    assert codes[:5].tolist() == [0x7E, 0x7E, 0x7E, 0x7E, 0xFE]
    assert codes[5] & 0x7F == 0x7F  # NaN stays NaN
    assert codes[6:].tolist() == [0x7E, 0x80]


def test_dequantize_relative_error_within_unit_roundoff():
    x = sample(5)
    scale = fp8_scale(np.abs(x).max())
    back = dequantize(cast_to_e4m3(x, scale), scale)
    normal = np.abs(x / scale) >= FP8_E4M3.min_normal
    rel = np.abs(back[normal] - x[normal]) / np.abs(x[normal])
    assert rel.max() <= FP8_E4M3.unit_roundoff * (1 + 1e-6)
    assert back.dtype == np.float32
