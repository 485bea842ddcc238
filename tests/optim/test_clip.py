"""Gradient clipping against torch.nn.utils."""

import numpy as np
import pytest
import torch

from minitorch.nn import Parameter
from minitorch.optim import clip_grad_norm_, clip_grad_value_

rng = np.random.default_rng(0)


def _pair(scale):
    grads = [rng.standard_normal(s) * scale for s in [(3, 4), (5,), (2, 2, 2)]]
    ours = [Parameter(np.zeros_like(g)) for g in grads]
    theirs = [torch.nn.Parameter(torch.zeros(g.shape, dtype=torch.float64)) for g in grads]
    for p, t, g in zip(ours, theirs, grads, strict=True):
        p.grad, t.grad = g.copy(), torch.from_numpy(g.copy())
    return ours, theirs


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
@pytest.mark.parametrize("scale", [0.01, 10.0])
def test_clip_grad_norm_matches_torch(norm_type, scale):
    ours, theirs = _pair(scale)
    total = clip_grad_norm_(ours, 1.0, norm_type)
    ttotal = torch.nn.utils.clip_grad_norm_(theirs, 1.0, norm_type)
    assert np.isclose(total, ttotal.item())
    for p, t in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(p.grad, t.grad.numpy(), rtol=1e-12)


def test_clip_grad_value_matches_torch():
    ours, theirs = _pair(3.0)
    clip_grad_value_(ours, 0.5)
    torch.nn.utils.clip_grad_value_(theirs, 0.5)
    for p, t in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(p.grad, t.grad.numpy())


def test_clip_never_mutates_a_shared_gradient_array():
    g = np.full(4, 10.0)
    a, b = Parameter(np.zeros(4)), Parameter(np.zeros(4))
    a.grad = b.grad = g
    clip_grad_norm_([a], 1.0)
    assert np.all(b.grad == 10.0)
