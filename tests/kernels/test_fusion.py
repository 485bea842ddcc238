"""Fused bias+GELU and add+RMSNorm: torch's values, and the bytes each version moves."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from minitorch.kernels.fusion import (
    add_rmsnorm_fused,
    add_rmsnorm_traffic,
    add_rmsnorm_unfused,
    bias_gelu_fused,
    bias_gelu_traffic,
    bias_gelu_unfused,
)
from minitorch.kernels.io_model import HBM


@pytest.mark.parametrize("fused", [True, False])
def test_bias_gelu(fused: bool) -> None:
    g = np.random.default_rng(0)
    x, b = g.standard_normal((13, 6)), g.standard_normal(6)
    hbm = HBM({"X": x, "B": b, "Y": np.zeros_like(x)})
    (bias_gelu_fused if fused else bias_gelu_unfused)(hbm, 4)
    want = F.gelu(torch.from_numpy(x + b), approximate="tanh").numpy()
    np.testing.assert_allclose(hbm.array("Y"), want, atol=1e-14)
    assert hbm.traffic() == bias_gelu_traffic(13, 6, fused)


@pytest.mark.parametrize("fused", [True, False])
def test_add_rmsnorm(fused: bool) -> None:
    g = np.random.default_rng(1)
    x, r, w = g.standard_normal((13, 6)), g.standard_normal((13, 6)), g.standard_normal(6)
    hbm = HBM({"X": x, "R": r, "G": w, "H": np.zeros_like(x), "Y": np.zeros_like(x)})
    (add_rmsnorm_fused if fused else add_rmsnorm_unfused)(hbm, 5, 1e-6)
    h = torch.from_numpy(x + r)
    want = F.rms_norm(h, (6,), torch.from_numpy(w), eps=1e-6).numpy()
    np.testing.assert_allclose(hbm.array("Y"), want, atol=1e-13)
    np.testing.assert_allclose(hbm.array("H"), x + r)
    assert hbm.traffic() == add_rmsnorm_traffic(13, 6, fused)


def test_fusion_saves_the_intermediate_round_trips() -> None:
    n, d = 1024, 768
    saved = bias_gelu_traffic(n, d, False).total - bias_gelu_traffic(n, d, True).total
    assert saved == 2 * n * d * 8
    saved = add_rmsnorm_traffic(n, d, False).total - add_rmsnorm_traffic(n, d, True).total
    assert saved == n * d * 8
