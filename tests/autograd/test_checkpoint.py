"""Checkpointed segments: same gradients as the plain tape, fewer bytes held."""

import functools

import numpy as np

from minitorch.autograd import (
    Tensor,
    backward_peak_bytes,
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


def _chain(n, width=16, batch=4):
    """n tanh layers and an input; activation = batch * width float64 = 512 bytes."""
    rng = np.random.default_rng(0)
    _, fns = _layers(n, width, rng)
    return fns, Tensor(rng.standard_normal((batch, width)))


def _peak_in_activations(out):
    return backward_peak_bytes((out * out).sum()) / (4 * 16 * 8)


def test_backward_peak_bytes_adds_the_recomputed_segment():
    fns, x = _chain(16)
    plain = _peak_in_activations(functools.reduce(lambda h, f: f(h), fns, x))
    assert round(plain) == 33  # 16 layers x (linear out, tanh out) + the loss's square
    fns, x = _chain(16)
    sqrt = _peak_in_activations(checkpoint_sequential(fns, 4, x))
    assert round(sqrt) == 20  # 3 boundaries + last chunk (8) + square, then 8 recomputed
    fns, x = _chain(16)
    one = _peak_in_activations(checkpoint(lambda h: functools.reduce(lambda a, f: f(a), fns, h), x))
    assert round(one) == 34  # a tiny tape, but backward rebuilds the whole net at once


def test_backward_peak_bytes_counts_nested_recomputation():
    fns, x = _chain(16)
    nested = _peak_in_activations(checkpoint(lambda h: checkpoint_sequential(fns, 4, h), x))
    assert round(nested) == 21  # 2 kept + outer rebuild (3 + 8) + inner rebuild (8)


def test_backward_peak_bytes_still_computes_the_gradients():
    fns, x = _chain(8)
    ws = [f.args[0] for f in fns]
    functools.reduce(lambda h, f: f(h), fns, x).sum().backward()
    want = _grads(ws)
    for w in ws:
        w.grad = None
    backward_peak_bytes(checkpoint_sequential(fns, 3, x).sum())
    for a, b in zip(want, _grads(ws), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12)
