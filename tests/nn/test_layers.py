"""Linear, Conv2d, Embedding against torch.nn with the same weights."""

import numpy as np
import pytest
import torch

from minitorch.autograd import Tensor
from minitorch.nn import Conv2d, Embedding, Linear

rng = np.random.default_rng(0)


def _copy_to_torch(ours, theirs):
    with torch.no_grad():
        for name, p in ours.named_parameters():
            getattr(theirs, name).copy_(torch.from_numpy(p.data))


def _compare(ours, theirs, x, atol=1e-5):
    _copy_to_torch(ours, theirs)
    xt = torch.from_numpy(x).requires_grad_(True)
    xm = Tensor(x, requires_grad=True)
    y, yt = ours(xm), theirs(xt)
    np.testing.assert_allclose(y.data, yt.detach().numpy(), atol=atol)
    g = rng.standard_normal(y.shape).astype(np.float32)
    y.backward(g)
    yt.backward(torch.from_numpy(g))
    np.testing.assert_allclose(xm.grad, xt.grad.numpy(), atol=atol)
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(p.grad, getattr(theirs, name).grad.numpy(), atol=atol)


@pytest.mark.parametrize("bias", [True, False])
def test_linear(bias):
    x = rng.standard_normal((6, 5)).astype(np.float32)
    _compare(Linear(5, 4, bias, rng=rng), torch.nn.Linear(5, 4, bias), x)


@pytest.mark.parametrize(("stride", "padding"), [(1, 0), (2, 1)])
def test_conv2d(stride, padding):
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    _compare(
        Conv2d(3, 4, 3, stride, padding, rng=rng), torch.nn.Conv2d(3, 4, 3, stride, padding), x
    )


def test_init_matches_torch_bounds():
    lin = Linear(400, 50, rng=np.random.default_rng(0))
    bound = 1 / np.sqrt(400)
    assert np.abs(lin.weight.data).max() <= bound and np.abs(lin.weight.data).max() > 0.9 * bound
    assert lin.weight.dtype == np.float32 and lin.weight.shape == (50, 400)
    conv = Conv2d(3, 8, 5, rng=np.random.default_rng(0))
    assert np.abs(conv.weight.data).max() <= 1 / np.sqrt(75)


def test_seeded_layers_are_reproducible():
    a = Linear(4, 4, rng=np.random.default_rng(3))
    b = Linear(4, 4, rng=np.random.default_rng(3))
    assert np.array_equal(a.weight.data, b.weight.data)


def test_embedding_scatter_adds_repeated_ids():
    emb = Embedding(10, 3, rng=rng)
    ids = np.array([[1, 2, 1], [9, 1, 0]])
    out = emb(ids)
    assert out.shape == (2, 3, 3)
    np.testing.assert_array_equal(out.data[0, 0], emb.weight.data[1])
    out.sum().backward()
    counts = np.bincount(ids.ravel(), minlength=10)
    np.testing.assert_array_equal(emb.weight.grad, np.repeat(counts[:, None], 3, axis=1))
