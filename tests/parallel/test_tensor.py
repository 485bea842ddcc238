"""Tensor-parallel layers on the simulated world equal torch autograd on the unsharded layer."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from minitorch.comm.simworld import SimWorld
from minitorch.parallel import tensor as tp


def _gelu(z: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.gelu(z, approximate="tanh")


def _mlp_data(seed: int, s: int = 3, b: int = 2, h: int = 4) -> list[np.ndarray]:
    gen = np.random.default_rng(seed)
    return [
        gen.standard_normal(shape)
        for shape in ((s, b, h), (h, 4 * h), (4 * h,), (4 * h, h), (h,), (s, b, h))
    ]


@pytest.mark.parametrize("t", [1, 2, 4])
def test_mlp_forward_and_backward_equal_torch(t: int) -> None:
    x, w1, b1, w2, b2, dy = _mlp_data(t)
    tx, tw1, tb1, tw2, tb2 = (torch.tensor(a, requires_grad=True) for a in (x, w1, b1, w2, b2))
    ty = _gelu(tx @ tw1 + tb1) @ tw2 + tb2
    ty.backward(torch.tensor(dy))

    def rank(comm):
        r = comm.rank
        args = (x, tp.shard(w1, t, r, 1), tp.shard(b1, t, r, 0), tp.shard(w2, t, r, 0))
        y = tp.tp_mlp_forward(comm, *args, b2)
        return y, tp.tp_mlp_backward(comm, *args, dy)

    world = SimWorld(t)
    outs = world.run(rank)
    for y, _ in outs:
        np.testing.assert_allclose(y, ty.detach().numpy(), atol=1e-12)
    for r, (_, (dx, dw1, db1, dw2, db2)) in enumerate(outs):
        np.testing.assert_allclose(dx, tx.grad.numpy(), atol=1e-12)
        np.testing.assert_allclose(dw1, tp.shard(tw1.grad.numpy(), t, r, 1), atol=1e-12)
        np.testing.assert_allclose(db1, tp.shard(tb1.grad.numpy(), t, r, 0), atol=1e-12)
        np.testing.assert_allclose(dw2, tp.shard(tw2.grad.numpy(), t, r, 0), atol=1e-12)
        np.testing.assert_allclose(db2, tb2.grad.numpy(), atol=1e-12)


def _attention_torch(x, ws, bo, a):
    wq, wk, wv, wo = ws
    s, b, h = x.shape
    q, k, v = ((x @ w).reshape(s, b, a, h // a).permute(1, 2, 0, 3) for w in (wq, wk, wv))
    o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    return o.permute(2, 0, 1, 3).reshape(s, b, h) @ wo + bo


@pytest.mark.parametrize("t", [1, 2, 4])
def test_head_parallel_attention_equals_torch(t: int) -> None:
    gen = np.random.default_rng(10 + t)
    s, b, h, a = 5, 2, 8, 4
    x, dy = gen.standard_normal((s, b, h)), gen.standard_normal((s, b, h))
    ws = [gen.standard_normal((h, h)) / np.sqrt(h) for _ in range(4)]
    bo = gen.standard_normal(h)
    tx, *tws, tbo = (torch.tensor(v, requires_grad=True) for v in (x, *ws, bo))
    ty = _attention_torch(tx, tws, tbo, a)
    ty.backward(torch.tensor(dy))

    def rank(comm):
        r = comm.rank
        wq, wk, wv = (tp.shard(w, t, r, 1) for w in ws[:3])
        wo = tp.shard(ws[3], t, r, 0)
        y = tp.tp_attention_forward(comm, x, wq, wk, wv, wo, bo, a // t)
        return y, tp.tp_attention_backward(comm, x, wq, wk, wv, wo, a // t, dy)

    world = SimWorld(t)
    for r, (y, grads) in enumerate(world.run(rank)):
        np.testing.assert_allclose(y, ty.detach().numpy(), atol=1e-12)
        dx, dwq, dwk, dwv, dwo, dbo = grads
        np.testing.assert_allclose(dx, tx.grad.numpy(), atol=1e-12)
        for got, tw, axis in zip((dwq, dwk, dwv, dwo), tws, (1, 1, 1, 0), strict=True):
            np.testing.assert_allclose(got, tp.shard(tw.grad.numpy(), t, r, axis), atol=1e-12)
        np.testing.assert_allclose(dbo, tbo.grad.numpy(), atol=1e-12)


def test_one_all_reduce_per_block_forward_and_backward() -> None:
    t, (x, w1, b1, w2, b2, _) = 2, _mlp_data(3)
    nbytes = x.nbytes

    def fwd(comm):
        r = comm.rank
        return tp.tp_mlp_forward(
            comm, x, tp.shard(w1, t, r, 1), tp.shard(b1, t, r, 0), tp.shard(w2, t, r, 0), b2
        )

    world = SimWorld(t)
    world.run(fwd)
    assert sum(world.bytes_sent) == 2 * (t - 1) * nbytes  # one all-reduce of (s, b, h)


@pytest.mark.parametrize("t", [1, 2, 4])
def test_vocab_parallel_cross_entropy_equals_torch(t: int) -> None:
    gen = np.random.default_rng(t)
    n, v = 6, 16
    logits = 30 * gen.standard_normal((n, v)) + 800.0  # large: the max shift matters
    targets = gen.integers(0, v, n)
    tl = torch.tensor(logits, requires_grad=True)
    loss = torch.nn.functional.cross_entropy(tl, torch.tensor(targets), reduction="none")
    loss.mean().backward()
    world = SimWorld(t)
    outs = world.run(
        lambda comm: tp.vocab_parallel_cross_entropy(
            comm, tp.shard(logits, t, comm.rank, 1), targets, comm.rank * v // t
        )
    )
    for r, (got, grad) in enumerate(outs):
        np.testing.assert_allclose(got, loss.detach().numpy(), atol=1e-10)
        np.testing.assert_allclose(grad, tp.shard(tl.grad.numpy(), t, r, 1), atol=1e-12)
    assert max(world.bytes_sent) <= 3 * (t - 1) * n * 8 * 2  # never the (n, V) logits


@pytest.mark.parametrize("t", [1, 2, 4])
def test_vocab_parallel_embedding(t: int) -> None:
    gen = np.random.default_rng(t)
    table, ids = gen.standard_normal((12, 3)), gen.integers(0, 12, (4, 2))
    dout = gen.standard_normal((4, 2, 3))
    want_grad = np.zeros_like(table)
    for i, j in np.ndindex(ids.shape):
        want_grad[ids[i, j]] += dout[i, j]

    def rank(comm):
        shard, start = tp.shard(table, t, comm.rank, 0), comm.rank * 12 // t
        out = tp.vocab_embedding_forward(comm, ids, shard, start)
        return out, tp.vocab_embedding_backward(ids, shard.shape, start, dout)

    for r, (out, grad) in enumerate(SimWorld(t).run(rank)):
        np.testing.assert_allclose(out, table[ids])
        np.testing.assert_allclose(grad, tp.shard(want_grad, t, r, 0))


def test_shard_needs_divisible_sizes() -> None:
    with pytest.raises(ValueError, match="divide"):
        tp.shard(np.zeros((3, 5)), 2, 0, 1)
