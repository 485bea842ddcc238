"""minitorch.numerics.stochastic: stochastic rounding to BF16 is on-grid, bracketing, unbiased."""

import numpy as np
import torch

from minitorch.numerics.stochastic import stochastic_round_to_bf16


def neighbours(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """BF16 values just below and above |x| (truncate, then truncate + 1 ulp), sign kept."""
    u = x.view(np.uint32)
    down = (u & 0xFFFF0000).view(np.float32)
    up = ((u & 0xFFFF0000) + 0x10000).view(np.float32)
    return down, up


def test_result_is_a_bracketing_bf16_value():
    x = (np.random.default_rng(0).standard_normal(100_000) * 100).astype(np.float32)
    r = stochastic_round_to_bf16(x, np.random.default_rng(1))
    assert np.array_equal(torch.from_numpy(r).to(torch.bfloat16).float().numpy(), r)  # on grid
    down, up = neighbours(x)
    assert ((r == down) | (r == up)).all()


def test_unbiased_on_average():
    # 1 + 2^-10 sits 1/8 of the way from 1 to the next BF16 value, 1 + 2^-7
    x = np.full(200_000, 1.0 + 2.0**-10, np.float32)
    r = stochastic_round_to_bf16(x, np.random.default_rng(2))
    p_up = float((r > 1.0).mean())
    assert abs(p_up - 0.125) < 5 * np.sqrt(0.125 * 0.875 / x.size)
    assert abs(float(r.astype(np.float64).mean()) - (1.0 + 2.0**-10)) < 1e-4


def test_grid_values_nan_and_determinism():
    x = np.array([1.0, -2.5, 0.0, np.inf, -np.inf, np.nan], np.float32)
    r = stochastic_round_to_bf16(x, np.random.default_rng(3))
    assert np.array_equal(r[:5], x[:5]) and np.isnan(r[5])
    y = np.random.default_rng(4).standard_normal(1000).astype(np.float32)
    a = stochastic_round_to_bf16(y, np.random.default_rng(5))
    b = stochastic_round_to_bf16(y, np.random.default_rng(5))
    assert np.array_equal(a, b)


def test_small_updates_survive_where_nearest_rounding_stalls():
    w_sr, w_rn = np.float32(1.0), np.float32(1.0)
    rng = np.random.default_rng(6)
    for _ in range(2000):
        w_sr = stochastic_round_to_bf16(np.array([w_sr + np.float32(2.0**-10)]), rng)[0]
        w_rn = torch.tensor(w_rn + np.float32(2.0**-10)).to(torch.bfloat16).float().item()
    assert w_rn == 1.0  # every update is below half an ulp: lost
    assert abs(float(w_sr) - (1.0 + 2000 * 2.0**-10)) < 0.15  # ~2.95, kept on average
