"""minitorch.numerics.loss_scaling against torch.amp.GradScaler and torch._amp_update_scale_."""

import numpy as np
import pytest
import torch

from minitorch.numerics.loss_scaling import DynamicLossScaler, update_scale

OVERFLOW_STEPS = {0, 1, 5, 6, 7, 15, 22, 23}  # scripted steps whose grads are set to inf


def torch_scaler_trace(steps: int, growth_interval: int) -> list[tuple[float, int]]:
    """(scale, growth tracker) after each step of a real GradScaler on a tiny Linear."""
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0, growth_interval=growth_interval)
    x = torch.randn(8, 4)
    trace = []
    for step in range(steps):
        opt.zero_grad()
        scaler.scale(model(x).square().mean()).backward()
        if step in OVERFLOW_STEPS:
            model.weight.grad.fill_(float("inf"))
        scaler.step(opt)
        scaler.update()
        trace.append((scaler.get_scale(), int(scaler._growth_tracker.item())))
    return trace


@pytest.mark.parametrize("growth_interval", [1, 3, 4])
def test_update_scale_follows_grad_scaler(growth_interval):
    trace = torch_scaler_trace(30, growth_interval)
    scale, tracker = 1024.0, 0
    mine = DynamicLossScaler(scale=1024.0, growth_interval=growth_interval)
    for step, want in enumerate(trace):
        found_inf = step in OVERFLOW_STEPS
        scale, tracker = update_scale(scale, tracker, found_inf, growth_interval=growth_interval)
        mine.update(found_inf)
        assert (scale, tracker) == want, f"step {step}"
        assert (mine.scale, mine.growth_tracker) == want


def torch_update(scale, tracker, found_inf, growth, backoff, interval):
    s = torch.tensor([scale], dtype=torch.float32)
    t = torch.tensor([tracker], dtype=torch.int32)
    torch._amp_update_scale_(s, t, torch.tensor([float(found_inf)]), growth, backoff, interval)
    return s.item(), int(t.item())


def test_update_scale_matches_torch_kernel_on_random_cases():
    rng = np.random.default_rng(0)
    for _ in range(500):
        scale = float(np.float32(2.0 ** rng.integers(-20, 128) * rng.choice([1.0, 1.5, 0.3])))
        interval = int(rng.integers(1, 6))
        args = (scale, int(rng.integers(0, interval)), bool(rng.random() < 0.3))
        hyper = (float(rng.choice([2.0, 1.5, 4.0])), float(rng.choice([0.5, 0.25, 0.7])), interval)
        assert update_scale(*args, *hyper) == torch_update(*args, *hyper), (args, hyper)


def test_growth_that_overflows_float32_keeps_the_scale():
    assert update_scale(2.0**127, 1, False, growth_interval=2) == (2.0**127, 0)
    assert torch_update(2.0**127, 1, False, 2.0, 0.5, 2) == (2.0**127, 0)


def test_unscale_detects_overflow_and_divides():
    scaler = DynamicLossScaler(scale=8.0)
    grads = [np.array([8.0, 16.0], np.float32), np.array([[24.0]], np.float32)]
    assert scaler.unscale_(grads) is False
    assert grads[0].tolist() == [1.0, 2.0] and grads[1].tolist() == [[3.0]]
    assert scaler.unscale_([np.array([1.0, np.inf], np.float32)]) is True
    assert scaler.unscale_([np.array([np.nan], np.float32)]) is True
    assert float(scaler.scale_loss(np.float32(0.5))) == 4.0
