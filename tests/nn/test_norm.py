"""BatchNorm (train and eval, running stats) and LayerNorm against torch.nn."""

import numpy as np
import pytest
import torch

from minitorch.autograd import Tensor
from minitorch.nn import BatchNorm, BatchNorm2d, LayerNorm

rng = np.random.default_rng(0)


@pytest.mark.parametrize(
    ("cls", "shape"), [(torch.nn.BatchNorm1d, (16, 4)), (torch.nn.BatchNorm2d, (4, 3, 5, 5))]
)
def test_batch_norm_train_then_eval(cls, shape):
    c = shape[1]
    ours, theirs = BatchNorm(c, momentum=0.3), cls(c, momentum=0.3)
    for _ in range(3):
        x = (rng.standard_normal(shape) * 2 + 0.5).astype(np.float32)
        xm, xt = Tensor(x, requires_grad=True), torch.from_numpy(x).requires_grad_(True)
        y, yt = ours(xm), theirs(xt)
        np.testing.assert_allclose(y.data, yt.detach().numpy(), atol=1e-5)
        g = rng.standard_normal(shape).astype(np.float32)
        y.backward(g)
        yt.backward(torch.from_numpy(g))
        np.testing.assert_allclose(xm.grad, xt.grad.numpy(), atol=1e-4)
    np.testing.assert_allclose(ours.weight.grad, theirs.weight.grad.numpy(), atol=1e-4)
    np.testing.assert_allclose(ours.running_mean, theirs.running_mean.numpy(), atol=1e-6)
    np.testing.assert_allclose(ours.running_var, theirs.running_var.numpy(), atol=1e-5)
    ours.eval()
    theirs.eval()
    x = rng.standard_normal(shape).astype(np.float32)
    np.testing.assert_allclose(
        ours(Tensor(x)).data, theirs(torch.from_numpy(x)).detach().numpy(), atol=1e-5
    )


def test_batch_norm_eval_output_is_per_sample():
    bn = BatchNorm2d(2).eval()
    x = rng.standard_normal((4, 2, 3, 3)).astype(np.float32)
    np.testing.assert_allclose(bn(Tensor(x[:1])).data, bn(Tensor(x)).data[:1])


def test_layer_norm():
    ours, theirs = LayerNorm((3, 4)), torch.nn.LayerNorm((3, 4))
    with torch.no_grad():
        theirs.weight.copy_(torch.from_numpy(rng.standard_normal((3, 4)).astype(np.float32)))
    ours.weight.data[...] = theirs.weight.detach().numpy()
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    y, yt = ours(Tensor(x)), theirs(torch.from_numpy(x))
    np.testing.assert_allclose(y.data, yt.detach().numpy(), atol=1e-5)
    y.sum().backward()
    yt.sum().backward()
    np.testing.assert_allclose(ours.weight.grad, theirs.weight.grad.numpy(), atol=1e-5)
    np.testing.assert_allclose(ours.bias.grad, theirs.bias.grad.numpy(), atol=1e-5)
