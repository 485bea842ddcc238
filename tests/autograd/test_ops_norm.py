"""Batch norm (train and eval) and layer norm against torch in float64."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from minitorch.autograd import Tensor, batch_norm, layer_norm
from tests.helpers.torch_compare import check_op

rng = np.random.default_rng(0)


@pytest.mark.parametrize("shape", [(8, 3), (4, 3, 5, 5), (2, 3, 4)])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm(shape, training):
    c = shape[1]
    x, w, b = rng.standard_normal(shape) * 2 + 1, rng.standard_normal(c), rng.standard_normal(c)
    rm0, rv0 = rng.standard_normal(c), rng.uniform(0.5, 2, c)
    ours_rm, ours_rv = rm0.copy(), rv0.copy()
    theirs_rm, theirs_rv = torch.tensor(rm0), torch.tensor(rv0)
    check_op(
        lambda x, w, b: batch_norm(x, w, b, ours_rm, ours_rv, training, momentum=0.2),
        lambda x, w, b: F.batch_norm(x, theirs_rm, theirs_rv, w, b, training, momentum=0.2),
        x,
        w,
        b,
    )
    np.testing.assert_allclose(ours_rm, theirs_rm.numpy(), rtol=1e-12)
    np.testing.assert_allclose(ours_rv, theirs_rv.numpy(), rtol=1e-12)


def test_batch_norm_without_affine():
    x = rng.standard_normal((6, 4))
    check_op(
        lambda t: batch_norm(t, None, None, None, None, True),
        lambda t: F.batch_norm(t, None, None, None, None, True),
        x,
    )


@pytest.mark.parametrize(
    ("shape", "normalized"), [((4, 6), (6,)), ((2, 3, 5), (5,)), ((2, 3, 4), (3, 4))]
)
def test_layer_norm(shape, normalized):
    x = rng.standard_normal(shape) * 3
    w, b = rng.standard_normal(normalized), rng.standard_normal(normalized)
    check_op(
        lambda x, w, b: layer_norm(x, normalized, w, b),
        lambda x, w, b: F.layer_norm(x, normalized, w, b),
        x,
        w,
        b,
    )


def test_layer_norm_without_affine_float32():
    x = Tensor(rng.standard_normal((3, 8)).astype(np.float32), requires_grad=True)
    y = layer_norm(x, (8,))
    y.sum().backward()
    assert y.dtype == np.float32 and np.allclose(y.data.mean(-1), 0, atol=1e-6)
    assert np.allclose(x.grad, 0, atol=1e-5)  # sum of a normalized row is constant
