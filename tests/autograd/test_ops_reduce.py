"""Reductions (sum, mean, max over axes) against torch.autograd in float64."""

import numpy as np
import pytest
import torch

from minitorch.autograd import Tensor
from minitorch.autograd.ops_reduce import normalize_axes
from tests.helpers.torch_compare import check_op

CASES = [
    ((3, 4), None, False),
    ((3, 4), 0, False),
    ((3, 4), 1, True),
    ((2, 3, 4), (0, 2), False),
    ((2, 3, 4), -1, True),
    ((2, 3, 4), (-3, -2), True),
    ((5,), 0, False),
    ((), None, False),
]


def _torch_dims(axis, ndim):
    return tuple(range(ndim)) if axis is None else axis


@pytest.mark.parametrize(("shape", "axis", "keepdims"), CASES)
def test_sum(shape, axis, keepdims):
    x = np.random.default_rng(0).standard_normal(shape)
    check_op(
        lambda t: t.sum(axis, keepdims),
        lambda t: t.sum(dim=_torch_dims(axis, t.ndim), keepdim=keepdims),
        x,
    )


@pytest.mark.parametrize(("shape", "axis", "keepdims"), CASES)
def test_mean(shape, axis, keepdims):
    x = np.random.default_rng(1).standard_normal(shape)
    check_op(
        lambda t: t.mean(axis, keepdims),
        lambda t: t.mean(dim=_torch_dims(axis, t.ndim), keepdim=keepdims),
        x,
    )


@pytest.mark.parametrize(("shape", "axis", "keepdims"), CASES)
def test_max_matches_amax(shape, axis, keepdims):
    x = np.random.default_rng(2).standard_normal(shape)
    check_op(
        lambda t: t.max(axis, keepdims),
        lambda t: torch.amax(t, dim=_torch_dims(axis, t.ndim), keepdim=keepdims),
        x,
    )


def test_max_ties_share_the_gradient_like_amax():
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    check_op(lambda t: t.max(1), lambda t: torch.amax(t, dim=1), x)


def test_zero_size_sum_and_mean():
    check_op(lambda t: t.sum(0), lambda t: t.sum(0), np.zeros((0, 3)))
    out = Tensor(np.zeros((0, 3))).mean()
    assert np.isnan(out.item())


def test_normalize_axes():
    assert normalize_axes(None, 3) == (0, 1, 2)
    assert normalize_axes(-1, 3) == (2,)
    assert normalize_axes((2, -3), 3) == (0, 2)


def test_float32_grads_stay_float32():
    x = Tensor(np.ones((2, 3), np.float32), requires_grad=True)
    (x.max(1).sum() + x.mean()).backward()
    assert x.grad.dtype == np.float32
