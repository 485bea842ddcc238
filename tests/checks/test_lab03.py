"""Graders of lab 03: correct rules pass, realistic wrong ones and reference calls fail."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import minitorch.autograd as ag
from a2s.checks import lab03
from a2s.checks.core import ForbiddenCallError, ReferenceCalledError, StudentError, blocked
from minitorch.autograd import Tensor, engine, ops_conv
from tests.helpers.graders import always_equal, rejects, unblocked_in

unblocked = unblocked_in("minitorch.autograd")


def _out(size, k, s, p):
    return (size + 2 * p - k) // s + 1


# --------------------------------------------------------------------------- correct rules
def unbroadcast(grad, shape):
    lead = grad.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and grad.shape[lead + i] != 1
    )
    return grad.sum(axis=axes).reshape(shape)


def matmul_backward(a, b, g):
    ga, gb = g @ np.swapaxes(b, -1, -2), np.swapaxes(a, -1, -2) @ g
    return unbroadcast(ga, a.shape), unbroadcast(gb, b.shape)


def im2col(x, kh, kw, stride=1, pad=0):
    n, c, h, w = x.shape
    ho, wo = _out(h, kh, stride, pad), _out(w, kw, stride, pad)
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    cols = np.empty((n, c, kh, kw, ho, wo), dtype=x.dtype)
    for i in range(kh):
        for j in range(kw):
            cols[:, :, i, j] = xp[:, :, i : i + stride * ho : stride, j : j + stride * wo : stride]
    return cols.reshape(n, c * kh * kw, ho * wo)


def conv2d_forward(x, w, b, stride=1, padding=0, flip=False):
    (n, _, h, wd), (o, _, kh, kw) = x.shape, w.shape
    w = w[:, :, ::-1, ::-1] if flip else w
    y = w.reshape(o, -1) @ im2col(x, kh, kw, stride, padding)
    y = y if b is None else y + b[:, None]
    return y.reshape(n, o, _out(h, kh, stride, padding), _out(wd, kw, stride, padding))


def col2im(cols, x_shape, kh, kw, stride=1, pad=0, add=True):
    n, c, h, w = x_shape
    ho, wo = _out(h, kh, stride, pad), _out(w, kw, stride, pad)
    taps = cols.reshape(n, c, kh, kw, ho, wo)
    xp = np.zeros((n, c, h + 2 * pad, w + 2 * pad), dtype=cols.dtype)
    for i in range(kh):
        for j in range(kw):
            sl = (slice(None), slice(None), slice(i, i + stride * ho, stride))
            sl += (slice(j, j + stride * wo, stride),)
            xp[sl] = xp[sl] + taps[:, :, i, j] if add else taps[:, :, i, j]
    return xp[:, :, pad : pad + h, pad : pad + w]


def conv2d_backward(x, w, g, stride=1, padding=0, bug=""):
    (o, _, kh, kw), (n, _, ho, wo) = w.shape, g.shape
    cols = ag.im2col(x, kh, kw, stride, padding)
    g3 = g.reshape(n, o, ho * wo)
    gw = np.einsum("nol,nkl->nok", g3, cols).reshape(n, *w.shape)
    gw = gw if bug == "no batch sum" else gw.sum(axis=0)
    gx = col2im(w.reshape(o, -1).T @ g3, x.shape, kh, kw, stride, padding, add=bug != "overwrite")
    gb = g3.sum(axis=2)[0] if bug == "bias" else g3.sum(axis=(0, 2))
    return (gx / 2 if bug == "gx halved" else gx), gw, gb


def max_pool2d_backward(x, g, k, s, p=0, ties="first", assign=False):
    (h, w), (ho, wo) = x.shape[2:], g.shape[2:]
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)), constant_values=-np.inf)
    taps = [(i, j) for i in range(k) for j in range(k)]
    win = np.stack([xp[:, :, i : i + s * ho : s, j : j + s * wo : s] for i, j in taps], axis=-1)
    if ties == "first":
        share = (np.arange(k * k) == win.argmax(axis=-1)[..., None]).astype(float)
    else:
        share = (win == win.max(axis=-1, keepdims=True)).astype(float)
        if ties == "split":
            share /= share.sum(axis=-1, keepdims=True)
    gxp = np.zeros_like(xp)
    for t, (i, j) in enumerate(taps):
        sl = gxp[:, :, i : i + s * ho : s, j : j + s * wo : s]
        if assign:
            sl[share[..., t] > 0] = g[share[..., t] > 0]
        else:
            sl += g * share[..., t]
    return gxp[:, :, p : p + h, p : p + w]


def avg_pool2d_backward(x_shape, g, k, s, p=0, exclude_pad=False):
    (n, c, h, w), (ho, wo) = x_shape, g.shape[2:]
    if exclude_pad:  # divide by the real pixels of each window
        valid = np.pad(np.ones((h, w)), p)
        count = sum(
            valid[i : i + s * ho : s, j : j + s * wo : s] for i in range(k) for j in range(k)
        )
        g = g * (k * k) / count
    gxp = np.zeros((n, c, h + 2 * p, w + 2 * p))
    for i in range(k):
        for j in range(k):
            gxp[:, :, i : i + s * ho : s, j : j + s * wo : s] += g / (k * k)
    return gxp[:, :, p : p + h, p : p + w]


def batch_norm_backward(x, gamma, g, eps=1e-5, bug=""):
    axes = (0, *range(2, x.ndim))
    stat_axes = (0,) if bug == "axes" else axes
    m = x.size // x.shape[1] if bug != "axes" else x.shape[0]
    mu = x.mean(axis=stat_axes, keepdims=True)
    var = x.var(axis=stat_axes, keepdims=True, ddof=1 if bug == "unbiased" else 0)
    invstd = 1.0 / np.sqrt(var + (0.0 if bug == "no eps" else eps))
    xhat = (x - mu) * invstd
    ghat = g * gamma.reshape(1, -1, *[1] * (x.ndim - 2))
    s1 = ghat.sum(axis=stat_axes, keepdims=True)
    s2 = (ghat * xhat).sum(axis=stat_axes, keepdims=True)
    if bug == "eval formula":
        gx = ghat * invstd
    elif bug == "no variance term":
        gx = invstd / m * (m * ghat - s1)
    else:
        gx = invstd / m * (m * ghat - s1 - xhat * s2)
    return gx, (g * xhat).sum(axis=axes), g.sum(axis=axes)


def cross_entropy(logits, target, bug=""):
    n, rows = logits.shape[0], np.arange(logits.shape[0])
    with np.errstate(all="ignore"):
        if bug == "naive":
            p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
            logp = np.log(p)
        else:
            shifted = logits - logits.max(axis=1, keepdims=True)
            p = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
            logp = (
                np.log(p)
                if bug == "log of softmax"
                else shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
            )
    grad = np.exp(logp)
    grad[rows, target] -= 1.0
    return float(-logp[rows, target].mean()), grad if bug == "sum" else grad / n


# --------------------------------------------------------------------------- 03.1
def test_unbroadcast_correct_and_reference_pass(capsys):
    lab03.check_unbroadcast(unbroadcast)
    lab03.check_unbroadcast(unblocked(engine.unbroadcast))
    assert capsys.readouterr().out.count("✔ Exercise 03.1 passed") == 2


def _leading_only(g, shape):
    return g.sum(axis=tuple(range(g.ndim - len(shape))))


def _no_keepdims(g, shape):
    g = _leading_only(g, shape)
    return g.sum(axis=tuple(i for i, n in enumerate(shape) if n == 1))


def _left_aligned(g, shape):
    g = g.sum(axis=tuple(i for i, n in enumerate(shape) if n == 1), keepdims=True)
    return g.sum(axis=tuple(range(len(shape), g.ndim)))


def _float64_zeros(g, shape):
    out = np.zeros(shape)
    out += unbroadcast(g, shape)
    return out


def _in_place(g, shape):
    g *= 1.0
    if g.size:
        g.flat[0] += 1.0
    return unbroadcast(g, shape)


@pytest.mark.parametrize(
    ("wrong", "match"),
    [
        (_leading_only, "summed the extra leading axes but not the size-1"),
        (_no_keepdims, "keepdims"),
        (_left_aligned, "aligns shapes on the \\*right\\*"),
        (_float64_zeros, "keep grad's dtype"),
        (_in_place, "modified one of its input arrays"),
    ],
)
def test_unbroadcast_rejects_wrong_answers(wrong, match):
    rejects(lab03.check_unbroadcast, wrong, match=match)


def test_unbroadcast_rejects_the_engine():
    def through_engine(g, shape):
        x = Tensor(np.zeros(shape), requires_grad=True)
        (x + Tensor(np.zeros(g.shape))).backward(g)
        return x.grad

    rejects(
        lab03.check_unbroadcast, engine.unbroadcast, match="unbroadcast", error=ReferenceCalledError
    )
    rejects(lab03.check_unbroadcast, through_engine, match="engine", error=ReferenceCalledError)


# --------------------------------------------------------------------------- 03.2
def test_matmul_backward_passes(capsys):
    lab03.check_matmul_backward(matmul_backward)
    assert "✔ Exercise 03.2 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "match"),
    [
        (lambda a, b, g: (unbroadcast(g @ b, a.shape), matmul_backward(a, b, g)[1]), "transpose"),
        (lambda a, b, g: (matmul_backward(a, b, g)[0], unbroadcast(a @ g, b.shape)), "transpose"),
        (
            lambda a, b, g: (g @ np.swapaxes(b, -1, -2), np.swapaxes(a, -1, -2) @ g),
            "not summed over the broadcast batch axes",
        ),
        (lambda a, b, g: matmul_backward(a, b, g)[::-1], "grad_a"),
    ],
)
def test_matmul_backward_rejects_wrong_answers(wrong, match):
    rejects(lab03.check_matmul_backward, wrong, match=match)


def test_matmul_backward_rejects_dot_t_on_batches():
    # .T reverses every axis: right on matrices, a crash on the first batched case
    wrong = lambda a, b, g: (unbroadcast(g @ b.T, a.shape), unbroadcast(a.T @ g, b.shape))  # noqa: E731
    rejects(lab03.check_matmul_backward, wrong, match="raised", error=StudentError)


def test_matmul_backward_rejects_the_reference():
    def through_engine(a, b, g):
        ta, tb = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
        (ta @ tb).backward(g)
        return ta.grad, tb.grad

    def through_linear(a, b, g):
        ta, tw = Tensor(a, requires_grad=True), Tensor(np.swapaxes(b, -1, -2), requires_grad=True)
        ag.linear(ta, tw).backward(g)
        return ta.grad, tw.grad.T

    for fn in (through_engine, through_linear):
        rejects(lab03.check_matmul_backward, fn, match="reference", error=ReferenceCalledError)


# --------------------------------------------------------------------------- 03.3
def test_conv2d_forward_passes_with_ours_and_the_reference_im2col(capsys):
    lab03.check_conv2d_forward(im2col, conv2d_forward)
    lab03.check_conv2d_forward(unblocked(ops_conv.im2col), conv2d_forward)
    assert capsys.readouterr().out.count("✔ Exercise 03.3 passed") == 2


def _channel_last(x, kh, kw, stride=1, pad=0):
    cols = im2col(x, kh, kw, stride, pad)
    n, c, ll = x.shape[0], x.shape[1], cols.shape[-1]
    return cols.reshape(n, c, kh * kw, ll).transpose(0, 2, 1, 3).reshape(cols.shape)


@pytest.mark.parametrize(
    ("fns", "match"),
    [
        ((_channel_last, conv2d_forward), "channel-last"),
        ((lambda *a: np.swapaxes(im2col(*a), 1, 2), conv2d_forward), "one column per output"),
        ((im2col, lambda *a: conv2d_forward(*a, flip=True)), "not flipped"),
        ((im2col, lambda x, w, b, s, p: conv2d_forward(x, w, None, s, p)), "conv2d_forward"),
    ],
)
def test_conv2d_forward_rejects_wrong_answers(fns, match):
    rejects(lab03.check_conv2d_forward, *fns, match=match)


def conv2d_per_image(x, w, b, stride=1, padding=0):
    """One matmul per image instead of one over all the columns."""
    return np.concatenate(
        [conv2d_forward(x[i : i + 1], w, b, stride, padding) for i in range(len(x))]
    )


def conv2d_multiply_sum(x, w, b, stride=1, padding=0):
    """Broadcast multiply and sum: the right numbers, but no matmul."""
    (n, _, h, wd), (o, _, kh, kw) = x.shape, w.shape
    y = (w.reshape(1, o, -1, 1) * im2col(x, kh, kw, stride, padding)[:, None]).sum(axis=2)
    y = y if b is None else y + b[:, None]
    return y.reshape(n, o, _out(h, kh, stride, padding), _out(wd, kw, stride, padding))


def conv2d_without_im2col(x, w, b, stride=1, padding=0):
    """The right numbers from a loop over kernel taps: the columns are never built."""
    (n, _, h, wd), (o, _, kh, kw) = x.shape, w.shape
    ho, wo = _out(h, kh, stride, padding), _out(wd, kw, stride, padding)
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    y = np.zeros((n, o, ho, wo))
    for i in range(kh):
        for j in range(kw):
            tap = xp[:, :, i : i + stride * ho : stride, j : j + stride * wo : stride]
            y += np.einsum("nchw,oc->nohw", tap, w[:, :, i, j])
    return y if b is None else y + b[:, None, None]


@pytest.mark.parametrize(
    ("fn", "match"),
    [
        (conv2d_per_image, "multiplied the columns 2 times"),
        (conv2d_multiply_sum, "did not multiply the columns with a matmul"),
        (conv2d_without_im2col, "did not call your im2col"),
    ],
)
def test_conv2d_forward_must_be_one_matmul_over_the_columns(fn, match):
    rejects(lab03.check_conv2d_forward, im2col, fn, match=match)


def test_conv2d_forward_rejects_values_that_decide_their_own_equality():
    rejects(
        lab03.check_conv2d_forward,
        lambda *a: always_equal(im2col(*a)),
        conv2d_forward,
        match="subclass of ndarray",
    )


def test_conv2d_forward_rejects_the_reference():
    def ref_conv(x, w, b, s, p):
        bias = None if b is None else Tensor(b)
        return ag.conv2d(Tensor(x), Tensor(w), bias, s, p).data

    rejects(
        lab03.check_conv2d_forward,
        ops_conv.im2col,
        conv2d_forward,
        match="im2col",
        error=ReferenceCalledError,
    )
    rejects(
        lab03.check_conv2d_forward, im2col, ref_conv, match="conv2d", error=ReferenceCalledError
    )


# --------------------------------------------------------------------------- 03.4
def test_conv2d_backward_passes_with_ours_and_the_reference_col2im(capsys):
    lab03.check_conv2d_backward(col2im, conv2d_backward)
    lab03.check_conv2d_backward(unblocked(ops_conv.col2im), conv2d_backward)
    assert capsys.readouterr().out.count("✔ Exercise 03.4 passed") == 2


@pytest.mark.parametrize(
    ("fns", "match"),
    [
        ((lambda *a: col2im(*a, add=False), conv2d_backward), "must \\*add\\*"),
        ((col2im, lambda *a: conv2d_backward(*a, bug="overwrite")), "must \\*add\\*"),
        ((col2im, lambda *a: conv2d_backward(*a, bug="no batch sum")), "batch axis: sum it"),
        ((col2im, lambda *a: conv2d_backward(*a, bug="bias")), "over the batch and both spatial"),
        ((col2im, lambda *a: conv2d_backward(*a, bug="gx halved")), r"scatter-add\.$"),
    ],
)
def test_conv2d_backward_rejects_wrong_answers(fns, match):
    """The overwrite hint only for the overwrite's answer; another wrong grad_x gets the rule."""
    rejects(lab03.check_conv2d_backward, *fns, match=match)


def test_conv2d_backward_rejects_the_reference():
    def through_engine(x, w, g, s, p):
        tx, tw = Tensor(x, requires_grad=True), Tensor(w, requires_grad=True)
        tb = Tensor(np.zeros(w.shape[0]), requires_grad=True)
        ag.conv2d(tx, tw, tb, s, p).backward(g)
        return tx.grad, tw.grad, tb.grad

    rejects(
        lab03.check_conv2d_backward,
        ops_conv.col2im,
        conv2d_backward,
        match="col2im",
        error=ReferenceCalledError,
    )
    rejects(
        lab03.check_conv2d_backward,
        col2im,
        through_engine,
        match="conv2d",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 03.5
def test_pool_backward_passes(capsys):
    lab03.check_pool_backward(max_pool2d_backward, avg_pool2d_backward)
    assert "✔ Exercise 03.5 passed" in capsys.readouterr().out


def _last_max(x, g, k, s, p=0):
    flip = (slice(None), slice(None), slice(None, None, -1), slice(None, None, -1))
    return max_pool2d_backward(x[flip], g[flip], k, s, p)[flip]


@pytest.mark.parametrize(
    ("fns", "match"),
    [
        ((lambda *a: max_pool2d_backward(*a, ties="all"), avg_pool2d_backward), "\\*every\\*"),
        ((lambda *a: max_pool2d_backward(*a, ties="split"), avg_pool2d_backward), "split g"),
        ((_last_max, avg_pool2d_backward), "\\*last\\* maximum"),
        ((lambda *a: max_pool2d_backward(*a, assign=True), avg_pool2d_backward), "\\*added\\*"),
        (
            (max_pool2d_backward, lambda *a: avg_pool2d_backward(*a, exclude_pad=True)),
            "count_include_pad",
        ),
    ],
)
def test_pool_backward_rejects_wrong_answers(fns, match):
    rejects(lab03.check_pool_backward, *fns, match=match)


def test_pool_backward_rejects_the_reference():
    def through_engine(x, g, k, s, p):
        tx = Tensor(x, requires_grad=True)
        ag.max_pool2d(tx, k, s, p).backward(g)
        return tx.grad

    def through_col2im(x_shape, g, k, s, p):
        n, c, h, w = x_shape
        cols = np.repeat(g.reshape(n * c, 1, -1) / (k * k), k * k, axis=1)
        return ag.col2im(cols, (n * c, 1, h, w), k, k, s, p).reshape(x_shape)

    rejects(
        lab03.check_pool_backward,
        through_engine,
        avg_pool2d_backward,
        match="max_pool2d",
        error=ReferenceCalledError,
    )
    rejects(
        lab03.check_pool_backward,
        max_pool2d_backward,
        through_col2im,
        match="col2im",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 03.6
def test_batch_norm_backward_passes(capsys):
    lab03.check_batch_norm_backward(batch_norm_backward)
    assert "✔ Exercise 03.6 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("bug", "match"),
    [
        ("eval formula", "mean-of-gradient terms are missing"),
        ("no variance term", "through the variance"),
        ("unbiased", "biased variance"),
        ("axes", "every other\\* axis"),
        ("no eps", "inside the square root"),
    ],
)
def test_batch_norm_backward_rejects_wrong_answers(bug, match):
    rejects(
        lab03.check_batch_norm_backward, lambda *a: batch_norm_backward(*a, bug=bug), match=match
    )


def test_batch_norm_backward_identities_catch_an_unnamed_mistake():
    def shifted(x, gamma, g, eps):  # right up to a constant per channel: breaks sum(dx) = 0
        gx, gg, gb = batch_norm_backward(x, gamma, g, eps)
        return gx + 1e-3, gg, gb

    rejects(lab03.check_batch_norm_backward, shifted, match="sum\\(dL/dx\\) should be")


def test_batch_norm_backward_rejects_the_reference():
    def through_engine(x, gamma, g, eps):
        tx, tg = Tensor(x, requires_grad=True), Tensor(gamma, requires_grad=True)
        tb = Tensor(np.zeros_like(gamma), requires_grad=True)
        ag.batch_norm(tx, tg, tb, None, None, True, eps=eps).backward(g)
        return tx.grad, tg.grad, tb.grad

    rejects(
        lab03.check_batch_norm_backward,
        through_engine,
        match="batch_norm",
        error=ReferenceCalledError,
    )


# --------------------------------------------------------------------------- 03.7
def test_cross_entropy_passes(capsys):
    lab03.check_cross_entropy(cross_entropy)
    assert "✔ Exercise 03.7 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("bug", "match"),
    [
        ("naive", "exp overflowed"),
        ("log of softmax", "log\\(softmax\\) underflowed"),
        ("sum", "\\*mean\\*"),
    ],
)
def test_cross_entropy_rejects_wrong_answers(bug, match):
    rejects(lab03.check_cross_entropy, lambda z, t: cross_entropy(z, t, bug=bug), match=match)


def test_cross_entropy_rejects_in_place_shift_and_the_reference():
    def in_place(z, t):
        z -= z.max(axis=1, keepdims=True)
        return cross_entropy(z, t)

    def through_engine(z, t):
        tz = Tensor(z, requires_grad=True)
        loss = ag.cross_entropy(tz, t)
        loss.backward()
        return loss.item(), tz.grad

    rejects(lab03.check_cross_entropy, in_place, match="modified one of its input arrays")
    rejects(
        lab03.check_cross_entropy, through_engine, match="cross_entropy", error=ReferenceCalledError
    )


# --------------------------------------------------------------------------- all graders
def test_graders_are_registered_and_blocks_resolve():
    checks = [getattr(lab03, name) for name in lab03.__all__]
    assert sorted(c.exercise for c in checks) == [f"03.{i}" for i in range(1, 8)]
    for c in checks:
        assert "minitorch.autograd.engine:backward" in c.blocks
        assert "torch" in c.forbid
        with blocked(c.blocks):
            pass
    # the exercises that may call the student's earlier function get the reference instead
    # when that one failed
    assert lab03.check_matmul_backward.uses == (
        ("03.1", "unbroadcast", "minitorch.autograd.engine:unbroadcast"),
    )
    assert lab03.check_conv2d_backward.uses == (
        ("03.3", "im2col", "minitorch.autograd.ops_conv:im2col"),
    )


def test_torch_is_forbidden():
    def via_torch(g, shape):
        return torch.from_numpy(g).sum_to_size(shape).numpy() if shape else g.sum()

    rejects(lab03.check_unbroadcast, via_torch, match="torch", error=ForbiddenCallError)


def test_stub_and_crash_are_reported():
    def stub(*args):
        raise NotImplementedError("Exercise 03.1: unbroadcast")

    rejects(lab03.check_unbroadcast, stub, match="not implemented")
    rejects(
        lab03.check_matmul_backward, lambda a, b, g: 1 / 0, match="ZeroDivision", error=StudentError
    )
