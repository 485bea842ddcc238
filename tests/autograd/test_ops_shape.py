"""Shape ops (reshape, permute, indexing, concat, stack) against torch.autograd."""

import numpy as np
import pytest
import torch

from minitorch.autograd import Tensor, concat, stack
from tests.helpers.torch_compare import check_op

rng = np.random.default_rng(0)


@pytest.mark.parametrize(
    ("shape", "new"), [((2, 3, 4), (6, 4)), ((2, 3, 4), (-1,)), ((6,), (1, 2, 3)), ((), (1, 1))]
)
def test_reshape(shape, new):
    check_op(lambda t: t.reshape(new), lambda t: t.reshape(new), rng.standard_normal(shape))


@pytest.mark.parametrize("dims", [(0, 1, 2), (2, 0, 1), (1, 2, 0), (-1, 0, 1)])
def test_permute(dims):
    x = rng.standard_normal((2, 3, 4))
    check_op(lambda t: t.permute(dims), lambda t: t.permute(dims), x)


def test_transpose_and_T():
    x = rng.standard_normal((2, 3, 4))
    check_op(lambda t: t.transpose(0, 2), lambda t: t.transpose(0, 2), x)
    check_op(lambda t: t.T, lambda t: t.permute(2, 1, 0), x)


def test_flatten():
    x = rng.standard_normal((2, 3, 4, 5))
    check_op(lambda t: t.flatten(1), lambda t: t.flatten(1), x)


INDEXES = [
    (1,),
    (slice(1, 3),),
    (slice(None), 2),
    (slice(None, None, 2), slice(1, None)),
    (Ellipsis, 0),
    (None, 1),
    ([0, 2, 2, 1],),  # repeated rows: gradients must add
    (np.array([[0, 1], [1, 1]]), slice(None)),
    (np.array([0, 3]), np.array([1, 1])),
]


@pytest.mark.parametrize("index", INDEXES, ids=[str(i) for i in range(len(INDEXES))])
def test_getitem(index):
    x = rng.standard_normal((4, 5, 3))
    tindex = tuple(torch.as_tensor(i) if isinstance(i, (list, np.ndarray)) else i for i in index)
    check_op(lambda t: t[index], lambda t: t[tindex], x)


def test_getitem_bool_mask_and_tensor_index():
    x = rng.standard_normal((4, 3))
    mask = x[:, 0] > 0
    check_op(lambda t: t[mask], lambda t: t[torch.as_tensor(mask)], x)
    idx = Tensor(np.array([3, 0, 3]))
    check_op(lambda t: t[idx], lambda t: t[torch.tensor([3, 0, 3])], x)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat(axis):
    a, b, c = rng.standard_normal((2, 3)), rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    check_op(lambda *ts: concat(ts, axis=axis), lambda *ts: torch.cat(ts, dim=axis), a, b, c)


def test_concat_uneven_and_zero_size():
    a, b, c = rng.standard_normal((2, 3)), rng.standard_normal((0, 3)), rng.standard_normal((4, 3))
    check_op(lambda *ts: concat(ts), lambda *ts: torch.cat(ts), a, b, c)


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_stack(axis):
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    check_op(lambda *ts: stack(ts, axis), lambda *ts: torch.stack(ts, dim=axis), a, b)
