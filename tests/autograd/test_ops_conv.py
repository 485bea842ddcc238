"""conv2d (im2col), max and average pooling against torch.autograd in float64."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from minitorch.autograd import avg_pool2d, col2im, conv2d, im2col, max_pool2d
from tests.helpers.torch_compare import check_op

rng = np.random.default_rng(0)


@pytest.mark.parametrize(
    ("x_shape", "w_shape", "stride", "pad"),
    [
        ((2, 3, 7, 7), (4, 3, 3, 3), 1, 0),
        ((2, 3, 7, 7), (4, 3, 3, 3), 2, 1),
        ((1, 2, 6, 5), (3, 2, 2, 3), 1, 2),
        ((3, 1, 5, 5), (2, 1, 1, 1), 1, 0),
        ((1, 2, 4, 4), (2, 2, 4, 4), 1, 0),
    ],
)
@pytest.mark.parametrize("bias", [True, False])
def test_conv2d(x_shape, w_shape, stride, pad, bias):
    arrays = [rng.standard_normal(x_shape), rng.standard_normal(w_shape)]
    if bias:
        arrays.append(rng.standard_normal(w_shape[0]))
    check_op(
        lambda x, w, b=None: conv2d(x, w, b, stride=stride, padding=pad),
        lambda x, w, b=None: F.conv2d(x, w, b, stride=stride, padding=pad),
        *arrays,
    )


def test_col2im_is_the_adjoint_of_im2col():
    # <im2col(x), c> == <x, col2im(c)> for all x, c: the definition of the adjoint
    x = rng.standard_normal((2, 3, 6, 5))
    cols = im2col(x, 3, 2, stride=2, pad=1)
    c = rng.standard_normal(cols.shape)
    back = col2im(c, x.shape, 3, 2, stride=2, pad=1)
    assert np.isclose((cols * c).sum(), (x * back).sum())


@pytest.mark.parametrize(("k", "s", "pad"), [(2, None, 0), (3, 1, 1), (3, 2, 0), (2, 1, 0)])
def test_max_pool2d(k, s, pad):
    x = rng.standard_normal((2, 3, 6, 7))
    check_op(lambda t: max_pool2d(t, k, s, pad), lambda t: F.max_pool2d(t, k, s, pad), x)


@pytest.mark.parametrize(("k", "s", "pad"), [(2, None, 0), (3, 1, 1), (3, 2, 0)])
def test_avg_pool2d(k, s, pad):
    x = rng.standard_normal((2, 3, 6, 7))
    check_op(lambda t: avg_pool2d(t, k, s, pad), lambda t: F.avg_pool2d(t, k, s, pad), x)


def test_conv_float32_end_to_end():
    from minitorch.autograd import Tensor

    x = Tensor(rng.standard_normal((2, 3, 8, 8)).astype(np.float32), requires_grad=True)
    w = Tensor(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), requires_grad=True)
    y = max_pool2d(conv2d(x, w, padding=1).relu(), 2)
    y.sum().backward()
    assert y.shape == (2, 4, 4, 4) and x.grad.dtype == np.float32 and w.grad.dtype == np.float32
    want = F.max_pool2d(
        F.conv2d(torch.from_numpy(x.data), torch.from_numpy(w.data), padding=1).relu(), 2
    )
    assert np.allclose(y.data, want.numpy(), atol=1e-5)
