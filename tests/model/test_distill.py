"""minitorch.model.distill against torch (the loss and its gradient), the T^2 scaling, the
teacher's transfer set, and a seeded student that beats the same student without a teacher."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from threadpoolctl import threadpool_limits

from minitorch.autograd import Tensor
from minitorch.model.checkpoint import load_pretrained
from minitorch.model.corpus import IGNORE, task_batch
from minitorch.model.distill import (
    distill_loss,
    kl_divergence,
    soft_targets,
    token_accuracy,
    train_student,
    transfer_set,
)
from minitorch.model.gpt import GPT


@pytest.fixture(autouse=True, scope="module")
def _one_blas_thread():
    """Tiny matrices: BLAS threads only contend with the other test workers."""
    with threadpool_limits(limits=1):
        yield


G = np.random.default_rng(0)
ZS, ZT = G.standard_normal((3, 5, 16)) * 2, G.standard_normal((3, 5, 16)) * 3
TARGETS = G.integers(0, 16, (3, 5))
TARGETS[0, :2] = IGNORE


def _torch_loss(zs, zt, y, t, a):
    keep = y.reshape(-1) != IGNORE
    s = zs.reshape(-1, 16)[keep]
    soft = F.kl_div(
        F.log_softmax(s / t, -1),
        F.softmax(torch.from_numpy(zt).reshape(-1, 16)[keep] / t, -1),
        reduction="batchmean",
    )
    return a * t * t * soft + (1 - a) * F.cross_entropy(s, torch.from_numpy(y).reshape(-1)[keep])


@pytest.mark.parametrize("t, a", [(1.0, 0.5), (2.0, 0.7), (4.0, 1.0), (3.0, 0.0)])
def test_loss_and_gradient_match_torch(t, a):
    zs = Tensor(ZS.copy(), requires_grad=True)
    ours = distill_loss(zs, ZT, TARGETS, t, a)
    ours.backward()
    ref = torch.from_numpy(ZS.copy()).requires_grad_()
    want = _torch_loss(ref, ZT, TARGETS, t, a)
    want.backward()
    assert ours.item() == pytest.approx(want.item(), rel=1e-10)
    assert np.allclose(zs.grad, ref.grad.numpy(), atol=1e-12)


def test_t_squared_keeps_the_soft_gradient_scale():
    norms = []
    for t in (2.0, 8.0):
        zs = Tensor(ZS.copy(), requires_grad=True)
        distill_loss(zs, ZT, TARGETS, t, 1.0).backward()
        norms.append(np.abs(zs.grad).sum())
        zs2 = Tensor(ZS.copy(), requires_grad=True)
        (distill_loss(zs2, ZT, TARGETS, t, 1.0) * (1.0 / t**2)).backward()
        assert np.abs(zs2.grad).sum() == pytest.approx(norms[-1] / t**2)
    # the gradient is (p_s - p_t) T^2 / T = T (p_s - p_t), and p_s - p_t ~ (z_s - z_t) / T^2
    assert 0.5 < norms[1] / norms[0] < 2.0


def test_soft_targets_and_kl():
    p = soft_targets(ZT, 2.0)
    assert np.allclose(p.sum(-1), 1) and np.allclose(p, torch.softmax(torch.from_numpy(ZT) / 2, -1))
    assert np.allclose(kl_divergence(p, p), 0)
    q = soft_targets(ZS, 2.0)
    want = F.kl_div(torch.from_numpy(q).log(), torch.from_numpy(p), reduction="none").sum(-1)
    assert np.allclose(kl_divergence(p, q), want.numpy())
    with pytest.raises(ValueError):
        distill_loss(Tensor(ZS), ZT, TARGETS, temperature=0.0)


@pytest.fixture(scope="module")
def teacher() -> GPT:
    return load_pretrained()


def test_transfer_set_is_the_teachers_answers_in_task_batch_layout(teacher):
    x, y = transfer_set(teacher, 48, seed=5)
    xt, yt = task_batch(["reverse", "sort"], 48, seed=5)
    assert x.shape == xt.shape and np.array_equal(y != IGNORE, yt != IGNORE)
    assert (y[y != IGNORE] == yt[yt != IGNORE]).mean() > 0.95  # the teacher is almost always right


def test_distilled_student_beats_the_student_without_teacher_and_is_deterministic(teacher):
    kd, _ = train_student(teacher, steps=150, seed=0)
    base, _ = train_student(None, steps=150, seed=0)
    assert train_student(teacher, steps=8, seed=0)[1] == train_student(teacher, steps=8, seed=0)[1]
    acc_kd, acc_base = token_accuracy(kd), token_accuracy(base)
    assert acc_kd > acc_base + 0.03, (acc_kd, acc_base)
    assert kd.n_params() < teacher.n_params() / 5
