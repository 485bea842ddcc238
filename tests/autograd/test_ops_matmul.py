"""matmul (batched, broadcast, 1-d) and the fused linear op against torch.autograd."""

import numpy as np
import pytest
import torch

from minitorch.autograd import Tensor, linear
from tests.helpers.torch_compare import check_op

rng = np.random.default_rng(0)


@pytest.mark.parametrize(
    ("sa", "sb"),
    [
        ((3, 4), (4, 5)),
        ((2, 3, 4), (2, 4, 5)),
        ((2, 3, 4), (4, 5)),  # weight shared over the batch
        ((3, 4), (2, 4, 5)),
        ((2, 1, 3, 4), (5, 4, 2)),  # broadcast batch axes
        ((4,), (4, 5)),
        ((3, 4), (4,)),
        ((4,), (4,)),
        ((2, 3, 4), (4,)),
        ((0, 4), (4, 5)),
        ((3, 0), (0, 5)),
    ],
)
def test_matmul(sa, sb):
    check_op(
        lambda a, b: a @ b, lambda a, b: a @ b, rng.standard_normal(sa), rng.standard_normal(sb)
    )


@pytest.mark.parametrize("x_shape", [(8, 5), (2, 3, 5), (5,)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear(x_shape, bias):
    arrays = [rng.standard_normal(x_shape), rng.standard_normal((4, 5))]
    if bias:
        arrays.append(rng.standard_normal(4))
    check_op(linear, torch.nn.functional.linear, *arrays)


def test_linear_skips_input_grad_for_constant_input():
    x = Tensor(rng.standard_normal((3, 5)))
    w = Tensor(rng.standard_normal((4, 5)), requires_grad=True)
    linear(x, w).sum().backward()
    assert x.grad is None and w.grad.shape == (4, 5)
