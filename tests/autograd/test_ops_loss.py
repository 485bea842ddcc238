"""softmax, log_softmax, fused cross-entropy and seeded dropout."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from minitorch.autograd import Tensor, cross_entropy, dropout, log_softmax, softmax
from tests.helpers.torch_compare import check_op

rng = np.random.default_rng(0)


@pytest.mark.parametrize(("shape", "axis"), [((4, 5), -1), ((4, 5), 0), ((2, 3, 4), 1)])
def test_softmax_and_log_softmax(shape, axis):
    x = rng.standard_normal(shape) * 4
    check_op(lambda t: softmax(t, axis), lambda t: torch.softmax(t, axis), x)
    check_op(lambda t: log_softmax(t, axis), lambda t: torch.log_softmax(t, axis), x)


def test_softmax_is_stable_for_large_logits():
    x = Tensor(np.array([[1000.0, 1001.0, 999.0]]))
    assert np.all(np.isfinite(softmax(x).data)) and np.all(np.isfinite(log_softmax(x).data))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape", [(8, 5), (2, 3, 4)])
def test_cross_entropy(reduction, shape):
    logits = rng.standard_normal(shape) * 3
    target = rng.integers(0, shape[-1], shape[:-1])
    tt = torch.from_numpy(target)

    def theirs(x):
        return F.cross_entropy(
            x.reshape(-1, shape[-1]), tt.reshape(-1), reduction=reduction
        ).reshape(target.shape if reduction == "none" else ())

    check_op(lambda x: cross_entropy(x, target, reduction), theirs, logits)


def test_cross_entropy_rejects_unknown_reduction():
    with pytest.raises(ValueError, match="reduction"):
        cross_entropy(Tensor(np.zeros((2, 3))), np.array([0, 1]), "avg")


def test_dropout_is_seeded_scaled_and_masks_its_gradient():
    x = Tensor(np.ones((200, 50)), requires_grad=True)
    y1, y2 = dropout(x, 0.3, seed=7), dropout(x, 0.3, seed=7)
    assert np.array_equal(y1.data, y2.data)  # same seed, same mask
    assert not np.array_equal(y1.data, dropout(x, 0.3, seed=8).data)
    assert set(np.unique(y1.data)) <= {0.0, 1 / 0.7}
    assert abs((y1.data == 0).mean() - 0.3) < 0.02
    y1.sum().backward()
    assert np.array_equal(x.grad, y1.data)  # grad = mask / (1 - p) for x = 1


def test_dropout_eval_and_p_one():
    x = Tensor(np.ones(4), requires_grad=True)
    assert dropout(x, 0.5, seed=0, training=False) is x
    y = dropout(x, 1.0, seed=0)
    y.sum().backward()
    assert not y.data.any() and not x.grad.any()
