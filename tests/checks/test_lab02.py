"""Lab 02 graders: the reference passes, realistic wrong answers and reference calls fail."""

from __future__ import annotations

import functools
import graphlib
import math
from collections import deque

import numpy as np
import pytest

from a2s.checks import lab02
from a2s.checks.core import CheckFailure, ForbiddenCallError, ReferenceCalledError
from minitorch.autograd import Value, numerical_derivative
from minitorch.autograd import tanh as tensor_tanh
from minitorch.autograd.tensor import Tensor
from tests.helpers.graders import always_equal, rejects


# --------------------------------------------------------------------------- 02.1 local rules
def mul_rule(a, b):
    return a * b, (b, a)


def div_rule(a, b):
    return a / b, (1 / b, -a / (b * b))


def tanh_rule(x):
    t = math.tanh(x)
    return t, (1 - t * t,)


def sigmoid_rule(x):
    s = 0.5 * (1 + math.tanh(0.5 * x))
    return s, (s * (1 - s),)


def pow_rule(x, k):
    return x**k, (k * x ** (k - 1),)


RULES = {
    "mul": mul_rule,
    "div": div_rule,
    "tanh": tanh_rule,
    "sigmoid": sigmoid_rule,
    "pow": pow_rule,
}


def check_rules(**replace):
    lab02.check_local_rules(*{**RULES, **replace}.values())


def test_rules_reference_passes(capsys) -> None:
    check_rules()
    assert "02.1 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("name", "wrong", "match"),
    [
        ("tanh", lambda x: (math.tanh(x), (1 - math.tanh(x),)), "not 1 - tanh"),
        ("tanh", lambda x: (math.tanh(x), (1 - x * x,)), "square the"),
        ("mul", lambda a, b: (a * b, (a, b)), "swapped"),
        ("div", lambda a, b: (a / b, (1 / b, a / b**2)), "sign"),
        ("sigmoid", lambda x: (1 / (1 + math.exp(-x)), (1 / (1 + math.exp(-x)),)), "not s"),
        ("pow", lambda x, k: (x**k, (x ** (k - 1),)), "factor k"),
        ("pow", lambda x, k: (x**k, (k * x**k,)), "drops by one"),
        ("tanh", lambda x: (math.tanh(x), 1 - math.tanh(x) ** 2), "a tuple"),
        ("mul", lambda a, b: (a + b, (b, a)), "value"),
    ],
)
def test_wrong_rules_are_rejected(name, wrong, match) -> None:
    with pytest.raises(CheckFailure, match=match):
        check_rules(**{name: wrong})


def sigmoid_naive(x):
    s = 1 / (1 + math.exp(-x))  # math.exp(1000) raises OverflowError
    return s, (s * (1 - s),)


def sigmoid_naive_numpy(x):
    s = float(1 / (1 + np.exp(-x)))  # np.exp(1000) warns and gives inf
    return s, (s * (1 - s),)


@pytest.mark.parametrize("wrong", [sigmoid_naive, sigmoid_naive_numpy])
def test_a_sigmoid_that_overflows_is_rejected(wrong) -> None:
    with pytest.raises(CheckFailure, match="sigmoid must not overflow"):
        check_rules(sigmoid=wrong)


def test_rules_returning_values_that_decide_their_own_equality_are_rejected() -> None:
    with pytest.raises(CheckFailure, match="subclass of float"):
        check_rules(mul=lambda a, b: (always_equal(a * b), (b, a)))


def test_rules_calling_the_reference_are_rejected() -> None:
    def via_value(x):
        t = Value(x).tanh()
        return t.data, t.local_grads

    def via_tensor(x):
        t = Tensor(x, requires_grad=True)
        y = tensor_tanh(t)
        y.backward()
        return float(y.data), (float(t.grad),)

    def via_numeric(x):
        return math.tanh(x), tuple(numerical_derivative(math.tanh, x))

    for fn in (via_value, via_tensor, via_numeric):
        with pytest.raises(ReferenceCalledError):
            check_rules(tanh=fn)


# --------------------------------------------------------------------------- 02.2 topo sort
def topo_sort(root):
    order, visited, stack = [], set(), [(root, False)]
    while stack:
        v, expanded = stack.pop()
        if expanded:
            order.append(v)
        elif v not in visited:
            visited.add(v)
            stack.append((v, True))
            stack.extend((p, False) for p in v.parents if p not in visited)
    return order


def topo_recursive(root):
    order, visited = [], set()

    def visit(v):
        if v not in visited:
            visited.add(v)
            for p in v.parents:
                visit(p)
            order.append(v)

    visit(root)
    return order


def topo_no_visited(root):
    order, stack = [], [(root, False)]
    while stack:
        v, expanded = stack.pop()
        if expanded:
            order.append(v)
        else:
            stack.append((v, True))
            stack.extend((p, False) for p in v.parents)
    return order


def topo_list_visited(root):
    order, visited, stack = [], [], [(root, False)]
    while stack:
        v, expanded = stack.pop()
        if expanded:
            order.append(v)
        elif v not in visited:
            visited.append(v)
            stack.append((v, True))
            stack.extend((p, False) for p in v.parents)
    return order


def topo_reversed_bfs(root):
    order, seen, queue = [], {root}, deque([root])
    while queue:
        v = queue.popleft()
        order.append(v)
        for p in v.parents:
            if p not in seen:
                seen.add(p)
                queue.append(p)
    return order[::-1]


def test_topo_reference_passes(capsys) -> None:
    lab02.check_topo_sort(topo_sort)
    assert "100,000-node chain" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "match"),
    [
        (topo_recursive, "RecursionError"),
        (topo_no_visited, "appears twice"),
        (lambda root: topo_sort(root)[::-1], "before its parent"),
        (topo_reversed_bfs, "before its parent"),
        (lambda root: topo_sort(root)[1:] if len(topo_sort(root)) > 1 else [], "reachable"),
        (topo_list_visited, "compared nodes"),
    ],
)
def test_wrong_topo_sorts_are_rejected(wrong, match) -> None:
    with pytest.raises(CheckFailure, match=match):
        lab02.check_topo_sort(wrong)


def test_topo_calling_the_reference_is_rejected() -> None:
    with pytest.raises(ReferenceCalledError):
        lab02.check_topo_sort(lambda root: root.topo_order())


def test_topo_through_graphlib_is_forbidden() -> None:
    def via_graphlib(root):
        nodes, stack = {}, [root]
        while stack:
            v = stack.pop()
            if v not in nodes:
                nodes[v] = v.parents
                stack.extend(v.parents)
        return list(graphlib.TopologicalSorter(nodes).static_order())

    rejects(lab02.check_topo_sort, via_graphlib, match="graphlib", error=ForbiddenCallError)


# --------------------------------------------------------------------------- 02.3 backward
def backward(root, order):
    root.grad = 1.0
    for v in reversed(order):
        for p, local in zip(v.parents, v.local_grads, strict=True):
            p.grad += local * v.grad


def backward_assign(root, order):
    root.grad = 1.0
    for v in reversed(order):
        for p, local in zip(v.parents, v.local_grads, strict=True):
            p.grad = local * v.grad


def backward_forward_order(root, order):
    root.grad = 1.0
    for v in order:
        for p, local in zip(v.parents, v.local_grads, strict=True):
            p.grad += local * v.grad


def backward_no_seed(root, order):
    for v in reversed(order):
        for p, local in zip(v.parents, v.local_grads, strict=True):
            p.grad += local * v.grad


def backward_no_chain(root, order):
    root.grad = 1.0
    for v in reversed(order):
        for p, local in zip(v.parents, v.local_grads, strict=True):
            p.grad += local


def test_backward_reference_passes(capsys) -> None:
    lab02.check_backward(backward)
    assert "02.3 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "match"),
    [
        (backward_assign, r"p.grad \+="),
        (backward_forward_order, "reversed"),
        (backward_no_seed, "seeded"),
        (backward_no_chain, "local grad alone"),
    ],
)
def test_wrong_backward_passes_are_rejected(wrong, match) -> None:
    with pytest.raises(CheckFailure, match=match):
        lab02.check_backward(wrong)


def test_backward_calling_the_reference_is_rejected() -> None:
    with pytest.raises(ReferenceCalledError):
        lab02.check_backward(lambda root, order: root.backward())


# --------------------------------------------------------------------------- 02.4 numerical
def numerical_grad(f, xs, h=1e-5):
    grads = []
    for i in range(len(xs)):
        up, down = list(xs), list(xs)
        up[i] += h
        down[i] -= h
        grads.append((f(*up) - f(*down)) / (2 * h))
    return grads


def forward_difference(f, xs, h=1e-5):
    f0, grads = f(*xs), []
    for i in range(len(xs)):
        up = list(xs)
        up[i] += h
        grads.append((f(*up) - f0) / h)
    return grads


def forward_difference_2n(f, xs, h=1e-5):
    grads = []
    for i in range(len(xs)):
        up = list(xs)
        up[i] += h
        grads.append((f(*up) - f(*xs)) / h)
    return grads


def in_place(f, xs, h=1e-5):
    grads = []
    for i in range(len(xs)):
        xs[i] += h
        up = f(*xs)
        xs[i] -= 2 * h
        grads.append((up - f(*xs)) / (2 * h))
    return grads


def all_at_once(f, xs, h=1e-5):
    up, down = [x + h for x in xs], [x - h for x in xs]
    return [(f(*up) - f(*down)) / (2 * h)] * len(xs)


def test_numerical_grad_reference_passes(capsys) -> None:
    lab02.check_numerical_grad(numerical_grad)
    assert "O(h^2" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "match"),
    [
        (forward_difference, "forward difference"),
        (forward_difference_2n, "forward difference"),
        (lambda f, xs, h=1e-5: [2 * g for g in numerical_grad(f, xs, h)], "1/2 is missing"),
        (in_place, "changed xs"),
        (all_at_once, "one input at a time"),
    ],
)
def test_wrong_numerical_grads_are_rejected(wrong, match) -> None:
    with pytest.raises(CheckFailure, match=match):
        lab02.check_numerical_grad(wrong)


def test_numerical_grad_returning_always_equal_floats_is_rejected() -> None:
    def cheat(f, xs, h=1e-5):
        return [always_equal(g) for g in numerical_grad(f, xs, h)]

    rejects(lab02.check_numerical_grad, cheat, match="subclass of float")


def test_numerical_grad_calling_the_reference_is_rejected() -> None:
    with pytest.raises(ReferenceCalledError):
        lab02.check_numerical_grad(lambda f, xs, h=1e-5: numerical_derivative(f, *xs, eps=h))


# --------------------------------------------------------------------------- 02.5 no cycles
class FnValue:
    """The solution: backward functions take the output gradient, capture only the inputs."""

    def __init__(self, data, parents=()):
        self.data, self.grad, self._prev, self._backward = float(data), 0.0, parents, None

    def __add__(self, other):
        out = type(self)(self.data + other.data, (self, other))

        def _backward(g):
            self.grad += g
            other.grad += g

        out._backward = _backward
        return out

    def __mul__(self, other):
        out = type(self)(self.data * other.data, (self, other))

        def _backward(g):
            self.grad += other.data * g
            other.grad += self.data * g

        out._backward = _backward
        return out

    def tanh(self):
        t = math.tanh(self.data)
        out = type(self)(t, (self,))

        def _backward(g):
            self.grad += (1 - t * t) * g

        out._backward = _backward
        return out

    def backward(self):
        order, seen, stack = [], set(), [(self, False)]
        while stack:
            v, done = stack.pop()
            if done:
                order.append(v)
            elif v not in seen:
                seen.add(v)
                stack.append((v, True))
                stack.extend((p, False) for p in v._prev)
        self.grad = 1.0
        for v in reversed(order):
            if v._backward is not None:
                v._backward(v.grad)


class Micrograd(FnValue):
    """micrograd's closures: each captures `out`, so out -> closure -> out is a cycle."""

    def __mul__(self, other):
        out = type(self)(self.data * other.data, (self, other))

        def _backward(g=None):
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad

        out._backward = _backward
        return out


class Partial(FnValue):
    """The cycle hidden in a functools.partial bound to `out`."""

    def tanh(self):
        out = type(self)(math.tanh(self.data), (self,))

        def _backward(node, g):
            self.grad += (1 - node.data**2) * g

        out._backward = functools.partial(_backward, out)
        return out


class BreaksCyclesInBackward(Micrograd):
    """Frees the cycles only when backward runs: a graph built for inference still leaks."""

    def backward(self):
        super().backward()
        stack, seen = [self], set()
        while stack:
            v = stack.pop()
            v._backward = None
            seen.add(v)
            stack.extend(p for p in v._prev if p not in seen)


class WrongTanh(FnValue):
    def tanh(self):
        t = math.tanh(self.data)
        out = type(self)(t, (self,))

        def _backward(g):
            self.grad += (1 - t) * g

        out._backward = _backward
        return out


class AssignsGrad(FnValue):
    """p.grad = ... instead of +=: a node used twice keeps one contribution."""

    def __add__(self, other):
        out = type(self)(self.data + other.data, (self, other))

        def _backward(g):
            self.grad = g
            other.grad = g

        out._backward = _backward
        return out

    def __mul__(self, other):
        out = type(self)(self.data * other.data, (self, other))

        def _backward(g):
            self.grad = other.data * g
            other.grad = self.data * g

        out._backward = _backward
        return out

    def tanh(self):
        t = math.tanh(self.data)
        out = type(self)(t, (self,))

        def _backward(g):
            self.grad = (1 - t * t) * g

        out._backward = _backward
        return out


def test_no_cycles_reference_passes(capsys) -> None:
    lab02.check_no_cycles(FnValue)
    assert "0 cyclic objects" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "match"),
    [
        (Micrograd, "closure variable 'out'"),
        (Partial, "partial.args"),
        (BreaksCyclesInBackward, "without backward"),
        (WrongTanh, r"gradients differ.*in reverse topological order\.$"),
        (AssignsGrad, r"accumulate with p.grad \+="),
    ],
)
def test_cyclic_or_wrong_nodes_are_rejected(wrong, match) -> None:
    with pytest.raises(CheckFailure, match=match):
        lab02.check_no_cycles(wrong)


def test_no_cycles_calling_the_reference_is_rejected() -> None:
    with pytest.raises(ReferenceCalledError):
        lab02.check_no_cycles(Value)

    class ViaReference(FnValue):
        def tanh(self):
            ref = Value(self.data).tanh()  # the reference computes value and local grad
            out = type(self)(ref.data, (self,))
            local = ref.local_grads[0]

            def _backward(g):
                self.grad += local * g

            out._backward = _backward
            return out

    with pytest.raises(ReferenceCalledError):
        lab02.check_no_cycles(ViaReference)


# --------------------------------------------------------------------------- 02.6 train step
def train_step(model, xs, ys, lr, *, zero=True, sign=1.0, mean=True, update=True):
    params = model.parameters()
    if zero:
        for p in params:
            p.grad = 0.0
    losses = [(1 + (-y * model(x)).exp()).log() for x, y in zip(xs, ys, strict=True)]
    loss = sum(losses) / len(losses) if mean else sum(losses)
    loss.backward()
    if update:
        for p in params:
            p.data -= sign * lr * p.grad
    return loss.data


def test_train_step_reference_passes(capsys) -> None:
    lab02.check_train_step(train_step)
    assert "accuracy" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"zero": False}, "p.grad = 0.0"),
        ({"sign": -1.0}, "uphill"),
        ({"mean": False}, "sum"),
        ({"update": False}, "did not change"),
    ],
)
def test_wrong_train_steps_are_rejected(kwargs, match) -> None:
    with pytest.raises(CheckFailure, match=match):
        lab02.check_train_step(functools.partial(train_step, **kwargs))


def test_train_step_returning_an_always_equal_loss_is_rejected() -> None:
    def cheat(model, xs, ys, lr):
        return always_equal(train_step(model, xs, ys, lr))

    rejects(lab02.check_train_step, cheat, match="subclass of float")


def test_every_grader_forbids_torch() -> None:
    checks = [getattr(lab02, name) for name in lab02.__all__]
    assert sorted(c.exercise for c in checks) == [f"02.{i}" for i in range(1, 7)]
    assert all("torch" in c.forbid for c in checks)
    assert {"graphlib", "networkx"} <= set(lab02.check_topo_sort.forbid)


def test_a_wrong_gradient_that_is_not_all_at_once_gets_no_perturbation_hint() -> None:
    def off_by_one_percent(f, xs, h=1e-5):  # a wrong answer of another kind
        return [1.01 * g for g in numerical_grad(f, xs, h)]

    with pytest.raises(CheckFailure) as err:
        lab02.check_numerical_grad(off_by_one_percent)
    assert "one input at a time" not in str(err.value)
