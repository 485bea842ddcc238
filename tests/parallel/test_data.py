"""DDP: buckets, readiness order, averaged gradients equal to torch on the whole batch."""

from __future__ import annotations

import itertools

import numpy as np
import torch

from minitorch.autograd import Tensor
from minitorch.comm.simworld import SimWorld
from minitorch.parallel.data import DDP, assign_buckets, ddp_sync, ready_order


def test_buckets_fill_from_the_last_parameter():
    assert assign_buckets([400, 40, 400, 40], 440) == [[3, 2], [1, 0]]
    assert assign_buckets([8, 8, 8], 10**9) == [[2, 1, 0]]
    assert assign_buckets([5, 5, 5], 1) == [[2], [1], [0]]
    assert assign_buckets([], 10) == []


def test_buckets_cover_every_parameter_once():
    gen = np.random.default_rng(0)
    for _ in range(50):
        sizes = [int(v) for v in gen.integers(1, 100, int(gen.integers(1, 20)))]
        cap = int(gen.integers(1, 300))
        buckets = assign_buckets(sizes, cap)
        assert [i for b in buckets for i in b] == list(range(len(sizes) - 1, -1, -1))
        assert all(sum(sizes[i] for i in b) >= cap for b in buckets[:-1])
        assert all(sum(sizes[i] for i in b[:-1]) < cap for b in buckets)


def _mlp(seed: int, widths=(3, 5, 4, 2)):
    gen = np.random.default_rng(seed)
    ps = []
    for a, b in itertools.pairwise(widths):
        ps += [gen.standard_normal((a, b)), gen.standard_normal(b)]
    return ps


def _loss(ts, x, y):
    h = Tensor(x)
    for k in range(0, len(ts), 2):
        h = h @ ts[k] + ts[k + 1]
        if k + 2 < len(ts):
            h = h.tanh()
    return ((h - Tensor(y)) ** 2).mean()


def _torch_grads(ps, x, y):
    ts = [torch.tensor(p, requires_grad=True) for p in ps]
    h = torch.tensor(x)
    for k in range(0, len(ts), 2):
        h = h @ ts[k] + ts[k + 1]
        if k + 2 < len(ts):
            h = h.tanh()
    ((h - torch.tensor(y)) ** 2).mean().backward()
    return [t.grad.numpy() for t in ts]


def test_ready_order_is_backward_order():
    ps = [Tensor(p, requires_grad=True) for p in _mlp(0)]
    loss = _loss(ps, np.ones((2, 3)), np.zeros((2, 2)))
    order = ready_order(loss, ps)
    assert sorted(order) == list(range(6))
    assert order.index(5) < order.index(3) < order.index(1)  # last layer's bias first


def test_ready_order_is_the_order_the_hooks_fire():
    ps = [Tensor(np.full(3, v), requires_grad=True) for v in (1.0, 2.0, 3.0, 4.0, 5.0)]
    a, b, c, d, _unused = ps
    loss = ((a * b).tanh() * c + (d * a).exp()).sum()  # a tie (a, b) and a leaf used twice
    fired: list[int] = []
    for i, p in enumerate(ps):
        p.register_post_accumulate_grad_hook(lambda t, i=i: fired.append(i))
    order = ready_order(loss, ps)
    loss.backward()
    assert order == [*fired, 4]  # the unused parameter comes last


def test_buckets_are_launched_during_backward():
    gen = np.random.default_rng(5)
    x, y = gen.standard_normal((8, 3)), gen.standard_normal((8, 2))

    def rank(comm):
        ts = [Tensor(a, requires_grad=True) for a in _mlp(6)]
        seen = {}
        # registered before DDP's own hooks: runs when W0, the last gradient, is complete
        ts[0].register_post_accumulate_grad_hook(
            lambda t: seen.update(
                launched=list(ddp.launches), sent=comm._world.msgs_sent[comm.rank]
            )
        )
        ddp = DDP(comm, ts, bucket_bytes=100)
        before = comm._world.msgs_sent[comm.rank]
        rows = np.arange(4) + 4 * comm.rank
        ddp.backward(_loss(ts, x[rows], y[rows]))
        return seen, before, ddp.launches

    for seen, before, launches in SimWorld(2).run(rank):
        assert seen["launched"] == launches[:-1] and len(launches) >= 2
        assert seen["sent"] > before  # the first buckets' all-reduces went out mid-backward
        assert launches[-1] == (len(launches) - 1, 6)  # W0's bucket, last, at 6 of 6


def test_backward_outside_ddp_communicates_nothing():
    def rank(comm):
        ts = [Tensor(a, requires_grad=True) for a in _mlp(7)]
        ddp = DDP(comm, ts, bucket_bytes=100)
        sent = comm._world.msgs_sent[comm.rank]
        _loss(ts, np.ones((2, 3)), np.zeros((2, 2))).backward()  # plain backward: hooks idle
        idle = comm._world.msgs_sent[comm.rank] - sent, list(ddp.launches)
        ddp.remove_hooks()
        ddp.backward(_loss(ts, np.ones((2, 3)), np.zeros((2, 2))))  # every bucket after backward
        return idle, ddp.launches, len(ddp.buckets), [t.grad for t in ts]

    (idle0, launches0, n, g0), (idle1, launches1, _, g1) = SimWorld(2).run(rank)
    assert idle0 == idle1 == (0, [])
    assert launches0 == launches1 and [b for b, _ in launches0] == list(range(n))
    for a, b in zip(g0, g1, strict=True):
        np.testing.assert_array_equal(a, b)  # still synchronised, after backward


def test_ddp_gradients_equal_torch_on_the_whole_batch():
    gen = np.random.default_rng(1)
    x, y = gen.standard_normal((12, 3)), gen.standard_normal((12, 2))
    want = _torch_grads(_mlp(2), x, y)
    for p in (1, 2, 3, 4):

        def rank(comm, p=p):
            ts = [Tensor(a, requires_grad=True) for a in _mlp(2 + comm.rank)]  # rank 0's win
            ddp = DDP(comm, ts, bucket_bytes=100)
            rows = np.array_split(np.arange(12), p)[comm.rank]
            ddp.backward(_loss(ts, x[rows], y[rows]))
            return [t.grad for t in ts], ddp.launches

        for grads, launches in SimWorld(p).run(rank):
            for g, w in zip(grads, want, strict=True):
                np.testing.assert_allclose(g, w, rtol=0, atol=1e-12)
            assert launches[0][1] < 6  # the first all-reduce starts before backward ends


def test_no_sync_accumulates_then_averages():
    gen = np.random.default_rng(3)
    x, y = gen.standard_normal((8, 3)), gen.standard_normal((8, 2))
    half = _torch_grads(_mlp(4), x[:4], y[:4]), _torch_grads(_mlp(4), x[4:], y[4:])
    want = [(a + b) / 2 for a, b in zip(*half, strict=True)]

    def rank(comm):
        ts = [Tensor(a, requires_grad=True) for a in _mlp(4)]
        ddp = DDP(comm, ts, bucket_bytes=64)
        mine = [[0, 1], [2, 3]][comm.rank]
        with ddp.no_sync():
            ddp.backward(_loss(ts, x[mine], y[mine]))
        sent = comm._world.bytes_sent[comm.rank]
        ddp.backward(_loss(ts, x[[m + 4 for m in mine]], y[[m + 4 for m in mine]]))
        return [t.grad / 2 for t in ts], sent

    (g0, sent0), (g1, sent1) = SimWorld(2).run(rank)
    for grads in (g0, g1):
        for g, w in zip(grads, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=0, atol=1e-12)
    assert (sent0, sent1) == (sum(a.nbytes for a in _mlp(4)), 0)  # only the initial broadcast


def test_ddp_sync_sends_one_all_reduce_per_bucket():
    grads = [np.arange(4.0), np.ones((2, 2)), np.full(3, 2.0)]
    world = SimWorld(2)
    out = world.run(lambda c: ddp_sync(c, grads, [[2, 1], [0]]))
    for got in out:
        for g, w in zip(got, grads, strict=True):
            np.testing.assert_array_equal(g, w)
    assert world.msgs_sent == [2, 2]
