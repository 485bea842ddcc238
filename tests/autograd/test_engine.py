"""The reverse-mode engine: ordering, accumulation, unbroadcast, no_grad, rule table, memory."""

import gc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from minitorch.autograd import (
    BACKWARD_RULES,
    Tensor,
    enable_grad,
    is_grad_enabled,
    linear,
    no_grad,
    override_rule,
    toposort,
    unbroadcast,
)


def test_chain_of_100k_nodes_needs_no_recursion():
    x = Tensor(np.array(1.0), requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y + 1.0
    y.backward()
    assert x.grad == 1.0 and y.item() == 100_001.0


def test_gradients_from_several_paths_add_up():
    x = Tensor(np.array([2.0, -1.0]), requires_grad=True)
    a = x * 3
    y = (a * a + a + x).sum()  # dy/dx = 3 * (2a + 1) + 1
    y.backward()
    assert np.allclose(x.grad, 3 * (2 * 3 * x.data + 1) + 1)


def test_toposort_puts_parents_first():
    x = Tensor(np.ones(2), requires_grad=True)
    b = x * 2
    a = b + x  # a depends on b and x; listed parents (b, x)
    y = a * b
    order = toposort(y)
    pos = {id(t): i for i, t in enumerate(order)}
    for t in order:
        if t.node is not None:
            assert all(pos[id(p)] < pos[id(t)] for p in t.node.parents if p.requires_grad)


def test_leaf_grads_accumulate_across_backward_calls():
    x = Tensor(np.ones(3), requires_grad=True)
    (x * 2).sum().backward()
    (x * 2).sum().backward()
    assert np.allclose(x.grad, 4)


def test_no_grad_builds_no_graph_and_enable_grad_restores():
    x = Tensor(np.ones(3), requires_grad=True)
    with no_grad():
        assert not is_grad_enabled()
        y = x * 2
        with enable_grad():
            z = x * 2
    assert is_grad_enabled()
    assert y.node is None and not y.requires_grad
    assert z.requires_grad and z.node is not None


def test_constants_do_not_record_nodes():
    y = Tensor(np.ones(3)) * 2
    assert y.node is None and not y.requires_grad


def test_retain_grad_and_backward_errors():
    x = Tensor(np.ones(3), requires_grad=True)
    h = x * 2
    h.retain_grad()
    (h * h).sum().backward()
    assert np.allclose(h.grad, 4) and np.allclose(x.grad, 8)
    with pytest.raises(RuntimeError, match="one-element"):
        (x * 2).backward()
    with pytest.raises(RuntimeError, match="does not require grad"):
        Tensor(np.ones(1)).backward()


def test_override_rule_swaps_one_rule_and_restores_it():
    def wrong_tanh(node, g):
        return (g * 0 + 7,)

    original = BACKWARD_RULES["tanh"]
    x = Tensor(np.zeros(2), requires_grad=True)
    y = x.tanh().sum()  # built before the override: rules are looked up at backward time
    with override_rule("tanh", wrong_tanh):
        y.backward()
    assert np.allclose(x.grad, 7) and BACKWARD_RULES["tanh"] is original


def _mlp_loss(rng):
    x = Tensor(rng.standard_normal((16, 8)))
    w1 = Tensor(rng.standard_normal((32, 8)), requires_grad=True)
    w2 = Tensor(rng.standard_normal((4, 32)), requires_grad=True)
    h = linear(x, w1).relu()
    for _ in range(50):
        h = (h * 0.5 + h.tanh()).sigmoid()
    return linear(h, w2).mean(), (w1, w2)


def test_graph_creates_no_cyclic_garbage():
    rng = np.random.default_rng(0)
    gc.collect()
    loss, params = _mlp_loss(rng)
    loss.backward()
    del loss, params
    assert gc.collect() == 0  # everything was freed by reference counting


def test_nodes_do_not_refer_to_their_outputs():
    loss, _ = _mlp_loss(np.random.default_rng(1))
    for t in toposort(loss):
        if t.node is not None:
            assert t not in gc.get_referents(t.node)
            assert all(r is not t for s in t.node.saved for r in gc.get_referents(s))


@st.composite
def shape_and_broadcast(draw):
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3))
    lead = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3))
    target = tuple(lead) + tuple(n if n != 1 else draw(st.integers(1, 3)) for n in shape)
    return shape, target


@settings(max_examples=60, deadline=None)
@given(shape_and_broadcast())
def test_unbroadcast_is_the_adjoint_of_broadcast(shapes):
    # <broadcast(x), g> == <x, unbroadcast(g)>
    shape, target = shapes
    rng = np.random.default_rng(0)
    x, g = rng.standard_normal(shape), rng.standard_normal(target)
    back = unbroadcast(g, shape)
    assert back.shape == shape
    assert np.isclose((np.broadcast_to(x, target) * g).sum(), (x * back).sum())


def test_unbroadcast_rejects_incompatible_shapes():
    with pytest.raises(ValueError, match="does not reduce"):
        unbroadcast(np.ones((2, 3)), (2,))
