"""SGD agrees with torch.optim.SGD to 1e-6 over 100 steps."""

import numpy as np
import pytest
import torch

from minitorch.nn import Parameter
from minitorch.optim import SGD
from tests.optim._quadratic import run_both

CONFIGS = [
    {},
    {"momentum": 0.9},
    {"momentum": 0.9, "dampening": 0.3},
    {"momentum": 0.9, "nesterov": True},
    {"momentum": 0.5, "weight_decay": 0.01, "nesterov": True},
    {"weight_decay": 0.1},
]


@pytest.mark.parametrize("config", CONFIGS, ids=[str(c) for c in CONFIGS])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_matches_torch_over_100_steps(config, dtype):
    ours, theirs = run_both(
        lambda ps: SGD(ps, lr=0.05, **config),
        lambda ps: torch.optim.SGD(ps, lr=0.05, **config),
        dtype=dtype,
    )
    tol = 1e-10 if dtype == np.float64 else 1e-6
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_updates_in_place_and_skips_missing_grads():
    p, q = Parameter(np.ones(3)), Parameter(np.ones(3))
    data = p.data
    opt = SGD([p, q], lr=0.1)
    p.grad = np.ones(3)
    opt.step()
    assert p.data is data and np.allclose(p.data, 0.9) and np.allclose(q.data, 1.0)
    opt.zero_grad()
    assert p.grad is None


def test_rejects_bad_configurations():
    with pytest.raises(ValueError, match="Nesterov"):
        SGD([Parameter(np.ones(1))], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="empty"):
        SGD([], lr=0.1)
