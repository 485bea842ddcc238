"""RMSNorm and SwiGLU against torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from minitorch.autograd import Tensor
from minitorch.model.blocks import rms_norm, silu

pytestmark = pytest.mark.lab09


def test_rms_norm_matches_torch_with_gradients() -> None:
    g = np.random.default_rng(0)
    x, w = g.standard_normal((3, 5, 8)) + 2, g.uniform(0.5, 2, 8)
    tx, tw = Tensor(x, requires_grad=True), Tensor(w, requires_grad=True)
    y = rms_norm(tx, tw, 1e-5)
    (y * y).sum().backward()
    rx, rw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    ry = F.rms_norm(rx, (8,), rw, 1e-5)
    (ry * ry).sum().backward()
    assert np.allclose(y.data, ry.detach().numpy(), atol=1e-12)
    assert np.allclose(tx.grad, rx.grad.numpy(), atol=1e-10)
    assert np.allclose(tw.grad, rw.grad.numpy(), atol=1e-10)


def test_silu_matches_torch() -> None:
    x = np.linspace(-6, 6, 25)
    assert np.allclose(silu(Tensor(x)).data, F.silu(torch.from_numpy(x)).numpy(), atol=1e-14)
