"""Post-accumulate grad hooks: torch's order, once per backward, final grads, remove()."""

import numpy as np
import pytest
import torch

from minitorch.autograd import Tensor, linear

SHAPES = [(3, 4), (4,), (4, 4), (4,), (4, 2), (2,)]


def _model(ps, x, y, tanh, mean):
    """A 3-layer MLP whose middle layer runs twice (W1, b1 used twice) plus an L2 term."""
    w0, b0, w1, b1, w2, b2 = ps
    h = tanh(x @ w0 + b0)
    h = tanh(h @ w1 + b1)
    h = tanh(h @ w1 + b1)
    out = h @ w2 + b2
    return mean((out - y) ** 2) + 0.1 * mean(w0 * w0)


def _data(seed=0):
    gen = np.random.default_rng(seed)
    arrs = [gen.standard_normal(s) for s in SHAPES]
    return arrs, gen.standard_normal((5, 3)), gen.standard_normal((5, 2))


def _hooked(ts, log):
    return [
        t.register_post_accumulate_grad_hook(lambda t, i=i: log.append((i, np.array(t.grad))))
        for i, t in enumerate(ts)
    ]


def test_hook_order_and_grads_equal_torch():
    arrs, x, y = _data()
    ts = [Tensor(a.copy(), requires_grad=True) for a in arrs]
    log: list = []
    _hooked(ts, log)
    _model(ts, Tensor(x), Tensor(y), Tensor.tanh, Tensor.mean).backward()
    tt = [torch.tensor(a, requires_grad=True) for a in arrs]
    want: list = []
    for i, t in enumerate(tt):
        t.register_post_accumulate_grad_hook(lambda t, i=i: want.append((i, t.grad.clone())))
    _model(tt, torch.tensor(x), torch.tensor(y), torch.tanh, torch.mean).backward()
    assert [i for i, _ in log] == [i for i, _ in want]  # once each, in torch's order
    for (i, seen), (_, g) in zip(log, want, strict=True):
        np.testing.assert_allclose(seen, g.numpy(), rtol=1e-12, atol=1e-12)  # final grad
        np.testing.assert_allclose(ts[i].grad, tt[i].grad.numpy(), rtol=1e-12, atol=1e-12)


def test_ties_in_one_op_follow_torch():
    def run(make):
        a, b, c = (make(np.full(3, v)) for v in (1.0, 2.0, 3.0))
        log: list = []
        for i, t in enumerate((a, b, c)):
            t.register_post_accumulate_grad_hook(lambda t, i=i: log.append(i))
        ((a * b) + c).sum().backward()
        return log

    mine = run(lambda v: Tensor(v, requires_grad=True))
    assert mine == run(lambda v: torch.tensor(v, requires_grad=True)) == [2, 0, 1]


def test_hook_fires_once_when_a_leaf_is_used_many_times():
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    seen: list = []
    x.register_post_accumulate_grad_hook(lambda t: seen.append(np.array(t.grad)))
    y = x * x + x * 3.0 + (x * x).exp()  # x feeds five op inputs
    y.sum().backward()
    assert len(seen) == 1
    np.testing.assert_allclose(seen[0], 2 * x.data + 3 + 2 * x.data * np.exp(x.data**2))
    y2 = (x * x).sum()
    y2.backward()  # accumulates: the hook sees the sum of both backwards
    assert len(seen) == 2
    np.testing.assert_allclose(seen[1], seen[0] + 2 * x.data)


def test_nothing_is_added_after_the_hook():
    def loss(w, x):
        return (linear(x, w) * (x @ w.T)).tanh().sum() + (w * w).sum()  # w used 4 times

    gen = np.random.default_rng(2)
    wd, xd = gen.standard_normal((2, 3)), gen.standard_normal((4, 3))
    plain = Tensor(wd.copy(), requires_grad=True)
    loss(plain, Tensor(xd)).backward()
    w = Tensor(wd.copy(), requires_grad=True)
    seen: list = []

    def replace(t):  # what DDP does: read the final grad, write the averaged one
        seen.append(np.array(t.grad))
        t.grad = np.full_like(t.grad, 7.0)

    w.register_post_accumulate_grad_hook(replace)
    loss(w, Tensor(xd)).backward()
    np.testing.assert_array_equal(seen[0], plain.grad)
    np.testing.assert_array_equal(w.grad, 7.0)  # the engine did not touch it afterwards


def test_remove_and_several_hooks():
    x = Tensor(np.ones(2), requires_grad=True)
    calls: list = []
    h1 = x.register_post_accumulate_grad_hook(lambda t: calls.append(1))
    x.register_post_accumulate_grad_hook(lambda t: calls.append(2))
    (x * 2).sum().backward()
    assert calls == [1, 2]  # registration order
    h1.remove()
    h1.remove()  # a second remove does nothing
    (x * 2).sum().backward()
    assert calls == [1, 2, 2]


def test_root_leaf_and_unreached_leaf():
    x = Tensor(np.array(3.0), requires_grad=True)
    unused = Tensor(np.ones(2), requires_grad=True)
    calls: list = []
    x.register_post_accumulate_grad_hook(lambda t: calls.append("x"))
    unused.register_post_accumulate_grad_hook(lambda t: calls.append("unused"))
    x.backward()
    assert calls == ["x"] and x.grad == 1.0 and unused.grad is None


def test_hooks_only_on_leaves_that_want_grads():
    x = Tensor(np.ones(2), requires_grad=True)
    with pytest.raises(RuntimeError, match="non-leaf"):
        (x * 2).register_post_accumulate_grad_hook(lambda t: None)
    with pytest.raises(RuntimeError, match="require"):
        Tensor(np.ones(2)).register_post_accumulate_grad_hook(lambda t: None)


def test_no_hooks_no_change():
    arrs, x, y = _data(1)
    plain = [Tensor(a.copy(), requires_grad=True) for a in arrs]
    hooked = [Tensor(a.copy(), requires_grad=True) for a in arrs]
    _hooked(hooked, [])
    for ts in (plain, hooked):
        _model(ts, Tensor(x), Tensor(y), Tensor.tanh, Tensor.mean).backward()
    for a, b in zip(plain, hooked, strict=True):
        np.testing.assert_array_equal(a.grad, b.grad)  # bit for bit
