"""Dynamic loss scaling: skip on overflow, back off, grow, and rescue FP16 gradients."""

import numpy as np
import torch

from minitorch.autograd import Tensor, cross_entropy
from minitorch.nn import MLP, autocast
from minitorch.nn.module import Parameter
from minitorch.optim import SGD, GradScaler


def test_matches_torch_grad_scaler_schedule():
    p = Parameter(np.ones(2, np.float32))
    t = torch.nn.Parameter(torch.ones(2))
    opt, topt = SGD([p], lr=0.1), torch.optim.SGD([t], lr=0.1)
    ours = GradScaler(init_scale=1024.0, growth_interval=3)
    theirs = torch.amp.GradScaler("cpu", init_scale=1024.0, growth_interval=3)
    for step in range(12):
        bad = step in (2, 7)
        g = np.array([np.inf if bad else 1.0, 2.0], np.float32)
        theirs.scale(torch.ones(()))  # torch creates its scale state lazily here
        p.grad = g * ours.scale_value
        t.grad = torch.from_numpy(g * theirs.get_scale())
        ours.step(opt)
        theirs.step(topt)
        ours.update()
        theirs.update()
        assert ours.scale_value == theirs.get_scale(), step
        np.testing.assert_allclose(p.data, t.detach().numpy(), rtol=1e-6)
    assert ours.skipped_steps == 2


def test_scale_multiplies_the_loss_and_unscale_is_idempotent():
    s = GradScaler(init_scale=8.0)
    assert s.scale(Tensor(np.array(2.0, np.float32))).item() == 16.0
    p = Parameter(np.zeros(1, np.float32))
    p.grad = np.array([8.0], np.float32)
    opt = SGD([p], lr=1.0)
    assert not s.unscale_(opt) and not s.unscale_(opt)  # second call does nothing
    assert p.grad[0] == 1.0


def test_fp16_training_step_with_scaling_keeps_small_gradients():
    rng = np.random.default_rng(0)
    model = MLP([8, 16, 4], rng=rng)
    x = Tensor(rng.standard_normal((32, 8)).astype(np.float32))
    y = rng.integers(0, 4, 32)
    scaler = GradScaler(init_scale=2.0**14)
    opt = SGD(model.parameters(), lr=0.1)
    with autocast("fp16"):
        loss = cross_entropy(model(x), y) * 1e-4  # small loss: FP16 grads would underflow
    scaler.scale(loss).backward()
    assert scaler.step(opt)
    first = model[0].weight.grad
    assert np.isfinite(first).all() and np.count_nonzero(first) > 0.9 * first.size
