"""AdamW agrees with torch.optim.AdamW to 1e-6 over 100 steps, and its decay is decoupled."""

import numpy as np
import pytest
import torch

from minitorch.nn import Parameter
from minitorch.optim import AdamW
from tests.optim._quadratic import run_both

CONFIGS = [
    {"lr": 1e-2},
    {"lr": 3e-2, "weight_decay": 0.1},
    {"lr": 1e-2, "betas": (0.8, 0.99), "eps": 1e-6, "weight_decay": 0.0},
]


@pytest.mark.parametrize("config", CONFIGS, ids=[str(c) for c in CONFIGS])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_matches_torch_over_100_steps(config, dtype):
    ours, theirs = run_both(
        lambda ps: AdamW(ps, **config), lambda ps: torch.optim.AdamW(ps, **config), dtype=dtype
    )
    tol = 1e-10 if dtype == np.float64 else 1e-6
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_decay_is_decoupled_from_the_gradient():
    # zero gradient: Adam's step is 0, so only the decoupled decay moves the weight
    p = Parameter(np.full(3, 2.0))
    opt = AdamW([p], lr=0.1, weight_decay=0.5)
    p.grad = np.zeros(3)
    opt.step()
    np.testing.assert_allclose(p.data, 2.0 * (1 - 0.1 * 0.5))


def test_first_step_has_size_lr():
    # bias correction: m/sqrt(v) = sign(g) on step 1 whatever the gradient's scale
    p = Parameter(np.zeros(2))
    opt = AdamW([p], lr=0.01, weight_decay=0.0)
    p.grad = np.array([1e-4, -50.0])
    opt.step()
    np.testing.assert_allclose(p.data, [-0.01, 0.01], rtol=1e-3)  # eps shows at 1e-4


def test_mlp_training_loop_matches_torch():
    """MLP + cross-entropy + clipping + warmup-cosine + AdamW, 20 steps, same as torch."""
    from minitorch.autograd import Tensor, cross_entropy
    from minitorch.nn import MLP
    from minitorch.optim import WarmupCosine, clip_grad_norm_, warmup_cosine

    rng = np.random.default_rng(0)
    model = MLP([6, 16, 16, 3], activation="tanh", rng=rng, dtype=np.float64)
    layers = [torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 16), torch.nn.Tanh()]
    tmodel = torch.nn.Sequential(*layers, torch.nn.Linear(16, 3)).double()
    tmodel.load_state_dict({k: torch.from_numpy(v) for k, v in model.state_dict().items()})
    opt, topt = AdamW(model.parameters(), lr=0.05), torch.optim.AdamW(tmodel.parameters(), lr=0.05)
    sched = WarmupCosine(opt, 5, 20)
    tsched = torch.optim.lr_scheduler.LambdaLR(topt, lambda s: warmup_cosine(s, 1.0, 5, 20))
    for _ in range(20):
        x, y = rng.standard_normal((32, 6)), rng.integers(0, 3, 32)
        loss = cross_entropy(model(Tensor(x)), y)
        tloss = torch.nn.functional.cross_entropy(tmodel(torch.from_numpy(x)), torch.from_numpy(y))
        assert np.isclose(loss.item(), tloss.item(), rtol=1e-9)
        opt.zero_grad()
        topt.zero_grad()
        loss.backward()
        tloss.backward()
        clip_grad_norm_(model.parameters(), 0.5)
        torch.nn.utils.clip_grad_norm_(tmodel.parameters(), 0.5)
        opt.step()
        topt.step()
        sched.step()
        tsched.step()
    for name, value in model.state_dict().items():
        np.testing.assert_allclose(value, tmodel.state_dict()[name].numpy(), rtol=1e-7, atol=1e-9)
