"""The scalar engine: values and grads against torch, deep graphs, and no cyclic garbage."""

import gc
import math

import pytest
import torch

from minitorch.autograd import Value, numerical_derivative


def _both(fn, *xs):
    vs = [Value(x) for x in xs]
    out = fn(*vs)
    out.backward()
    ts = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in xs]
    ref = fn(*ts)
    ref.backward()
    return out, vs, ref, ts


EXPRS = {
    "add_mul": lambda a, b: a * b + a + 3.0,
    "sub_div": lambda a, b: (a - b) / (b * b + 1.0) - 2.0 / a + (1.0 - a),
    "pow": lambda a, b: a**3 + (b * b) ** 0.5 + a**-2,
    "exp_log": lambda a, b: (a * b).exp() + (a * a).log(),
    "tanh_sigmoid": lambda a, b: a.tanh() * b.sigmoid(),
    "relu": lambda a, b: (a - b).relu() + (b - a).relu() * 2.0,
    "neg_reuse": lambda a, b: -(a * a * a) + a * b * a,
}


@pytest.mark.parametrize("name", sorted(EXPRS))
@pytest.mark.parametrize(("a", "b"), [(1.5, -0.7), (-2.0, 0.3), (0.4, 2.5)])
def test_matches_torch(name, a, b):
    out, vs, ref, ts = _both(EXPRS[name], a, b)
    assert math.isclose(out.data, ref.item(), rel_tol=1e-12, abs_tol=1e-12)
    for v, t in zip(vs, ts, strict=True):
        assert math.isclose(v.grad, t.grad.item(), rel_tol=1e-10, abs_tol=1e-12)


def test_matches_numerical_derivative():
    f = EXPRS["sub_div"]
    vs = [Value(1.3), Value(-0.4)]
    f(*vs).backward()
    num = numerical_derivative(lambda a, b: f(Value(a), Value(b)).data, 1.3, -0.4)
    assert all(math.isclose(v.grad, n, rel_tol=1e-6) for v, n in zip(vs, num, strict=True))


def test_chain_of_100k_nodes_needs_no_recursion():
    x = Value(0.5)
    y = x
    for _ in range(100_000):
        y = y.relu()
    y.backward()
    assert x.grad == 1.0


def test_backward_records_each_node_once():
    x = Value(2.0)
    y = x * x  # x reached twice from y
    assert len(y.topo_order()) == 2
    y.backward()
    assert x.grad == 4.0


def test_large_graph_leaves_no_cyclic_garbage():
    gc.collect()
    xs = [Value(0.01 * i) for i in range(100)]
    y = Value(0.0)
    for i in range(10_000):
        y = y + (xs[i % 100] * xs[(i * 7) % 100]).tanh()
    y.backward()
    del y, xs
    assert gc.collect() == 0


def test_values_hold_no_closures():
    y = Value(1.0) * Value(2.0)
    referents = gc.get_referents(y)
    assert not any(callable(r) and not isinstance(r, type) for r in referents)
    assert all(y not in gc.get_referents(p) for p in y.parents)
