"""Checkpointed segments: same gradients as the plain tape, fewer bytes held."""

import functools

import numpy as np

from minitorch.autograd import (
    Tensor,
    checkpoint,
    checkpoint_sequential,
    dropout,
    linear,
    no_grad,
    tape_bytes,
)


def _layers(n, width, rng):
    ws = [
        Tensor(rng.standard_normal((width, width)) / np.sqrt(width), requires_grad=True)
        for _ in range(n)
    ]
    return ws, [functools.partial(lambda w, h: linear(h, w).tanh(), w) for w in ws]


def _grads(ws):
    return [w.grad.copy() for w in ws]


def _run(segments, n=8, width=16, batch=4):
    rng = np.random.default_rng(0)
    ws, fns = _layers(n, width, rng)
    x = Tensor(rng.standard_normal((batch, width)))
    out = (
        checkpoint_sequential(fns, segments, x)
        if segments
        else functools.reduce(lambda h, f: f(h), fns, x)
    )
    loss = (out * out).sum()
    held = tape_bytes(loss)
    loss.backward()
    return loss.item(), _grads(ws), held


def test_checkpoint_sequential_matches_the_plain_tape():
    loss, grads, full = _run(0)
    for segments in (2, 3, 8):
        loss_c, grads_c, held = _run(segments)
        assert np.isclose(loss, loss_c)
        for a, b in zip(grads, grads_c, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-12)
        assert held < full


def test_tape_bytes_shrinks_like_sqrt_n():
    _, _, full = _run(0, n=16)
    _, _, sqrt = _run(4, n=16)
    assert sqrt <= full / 2.5  # 16 layers of activations vs 4 segment outputs + 4 layers


def test_checkpoint_gives_input_grads_and_respects_no_grad():
    rng = np.random.default_rng(1)
    x = Tensor(rng.standard_normal((3, 5)), requires_grad=True)
    w = Tensor(rng.standard_normal((5, 5)), requires_grad=True)

    def seg(h):
        return dropout(linear(h, w).tanh(), 0.5, seed=3)  # seeded: recompute draws the same mask

    seg(x).sum().backward()
    want_x, want_w = x.grad.copy(), w.grad.copy()
    x.grad = w.grad = None
    checkpoint(seg, x).sum().backward()
    np.testing.assert_allclose(x.grad, want_x)
    np.testing.assert_allclose(w.grad, want_w)
    with no_grad():
        assert checkpoint(seg, x).node is None


def test_tape_bytes_counts_views_once_and_skips_leaves():
    x = Tensor(np.ones((100, 10)), requires_grad=True)
    y = x * 2  # 8000 bytes
    z = y.reshape(1000).reshape(10, 100)  # views of y: no new bytes
    assert tape_bytes(z) == 8000
