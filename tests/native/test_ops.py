"""The C++ bias + GELU inside the course autograd equals torch's, forward and backward."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from minitorch.autograd.tensor import Tensor
from minitorch.native.ops import OP, bias_gelu
from tests.native.conftest import needs_gxx

pytestmark = needs_gxx


@pytest.mark.parametrize("shape", [(5, 7), (2, 3, 7), (7,)])
def test_forward_and_backward_equal_torch(shape: tuple[int, ...]) -> None:
    g = np.random.default_rng(len(shape))
    xv, bv, up = g.normal(size=shape) * 2, g.normal(size=7), g.normal(size=shape)
    x, b = Tensor(xv, requires_grad=True), Tensor(bv, requires_grad=True)
    y = bias_gelu(x, b)
    assert y.node is not None and y.node.op == OP
    (y * Tensor(up)).sum().backward()
    xt = torch.tensor(xv, requires_grad=True)
    bt = torch.tensor(bv, requires_grad=True)
    yt = torch.nn.functional.gelu(xt + bt, approximate="tanh")
    (yt * torch.tensor(up)).sum().backward()
    np.testing.assert_allclose(y.data, yt.detach().numpy(), rtol=1e-12, atol=1e-14)
    assert x.grad is not None and b.grad is not None
    np.testing.assert_allclose(x.grad, xt.grad.numpy(), rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(b.grad, bt.grad.numpy(), rtol=1e-10, atol=1e-13)


def test_dtype_is_kept_and_shapes_are_checked() -> None:
    x = Tensor(np.ones((2, 3), dtype=np.float32), requires_grad=True)
    y = bias_gelu(x, Tensor(np.zeros(3, dtype=np.float32)))
    assert y.data.dtype == np.float32
    y.sum().backward()
    assert x.grad is not None and x.grad.dtype == np.float32
    with pytest.raises(ValueError, match=r"\(d,\)"):
        bias_gelu(x, Tensor(np.zeros(2)))


def test_no_graph_without_grad() -> None:
    y = bias_gelu(Tensor(np.ones((1, 2))), Tensor(np.zeros(2)))
    assert y.node is None and not y.requires_grad
