"""A scalar reverse-mode autograd engine: one :class:`Value` per number.

Each op computes its result and, right away, the local derivative of the result with
respect to each input. Backward is then the chain rule along the graph, in reverse
topological order:

    v = f(a, b)   stores   parents (a, b)   local grads (dv/da, dv/db)
    backward:     a.grad += dv/da * v.grad,   b.grad += dv/db * v.grad

Why parents + local grads instead of a ``_backward`` closure per node (micrograd's way):
the closure must reach ``out.grad``, so it captures ``out``, and ``out`` holds the
closure: every node is a reference cycle. Cycles are not freed by reference counting, so
each dead graph waits for Python's cyclic garbage collector, and every collection walks
every live node. On graphs of 10^5 nodes that makes building + backward several times
slower (about 20 µs instead of 2-3 µs per node, see ``a2s bench 02``). Here nodes point
only to their parents, so a graph is freed the moment its output is dropped.

Lab: 02_autograd_scalar
Paper: Baydin et al. 2018, "Automatic Differentiation in Machine Learning: a Survey"
"""

from __future__ import annotations

import math

__all__ = ["Value"]

Number = float | int


class Value:
    """A float that remembers how it was computed, and collects dL/d(itself) in ``grad``."""

    __slots__ = ("data", "grad", "local_grads", "op", "parents")

    def __init__(
        self,
        data: Number,
        parents: tuple[Value, ...] = (),
        local_grads: tuple[float, ...] = (),
        op: str = "",
    ) -> None:
        self.data = float(data)
        self.grad = 0.0
        self.parents = parents
        self.local_grads = local_grads
        self.op = op

    def __repr__(self) -> str:
        return f"Value(data={self.data:.6g}, grad={self.grad:.6g})"

    # ------------------------------------------------------------------ ops
    def __add__(self, other: Value | Number) -> Value:
        o = other if isinstance(other, Value) else Value(other)
        return Value(self.data + o.data, (self, o), (1.0, 1.0), "+")

    def __mul__(self, other: Value | Number) -> Value:
        o = other if isinstance(other, Value) else Value(other)
        return Value(self.data * o.data, (self, o), (o.data, self.data), "*")

    def __pow__(self, k: Number) -> Value:
        """self**k for a constant exponent k: d/dx x^k = k x^(k-1)."""
        return Value(self.data**k, (self,), (k * self.data ** (k - 1),), f"**{k}")

    def exp(self) -> Value:
        e = math.exp(self.data)
        return Value(e, (self,), (e,), "exp")

    def log(self) -> Value:
        return Value(math.log(self.data), (self,), (1.0 / self.data,), "log")

    def tanh(self) -> Value:
        t = math.tanh(self.data)
        return Value(t, (self,), (1.0 - t * t,), "tanh")

    def sigmoid(self) -> Value:
        s = 0.5 * (1.0 + math.tanh(0.5 * self.data))  # 1/(1+e^-x) without overflow
        return Value(s, (self,), (s * (1.0 - s),), "sigmoid")

    def relu(self) -> Value:
        pos = self.data > 0
        return Value(self.data if pos else 0.0, (self,), (1.0 if pos else 0.0,), "relu")

    # derived ops: one line each, their gradients come from the ops above
    def __neg__(self) -> Value:
        return self * -1.0

    def __radd__(self, other: Number) -> Value:
        return self + other

    def __sub__(self, other: Value | Number) -> Value:
        return self + (-other)

    def __rsub__(self, other: Number) -> Value:
        return (-self) + other

    def __rmul__(self, other: Number) -> Value:
        return self * other

    def __truediv__(self, other: Value | Number) -> Value:
        return self * (other**-1.0 if isinstance(other, Value) else 1.0 / other)

    def __rtruediv__(self, other: Number) -> Value:
        return self**-1.0 * other

    # ------------------------------------------------------------------ backward
    def topo_order(self) -> list[Value]:
        """Every value this one depends on, parents first, by an iterative DFS."""
        order: list[Value] = []
        visited: set[int] = set()
        stack: list[tuple[Value, bool]] = [(self, False)]
        while stack:
            v, expanded = stack.pop()
            if expanded:
                order.append(v)
                continue
            if id(v) in visited:
                continue
            visited.add(id(v))
            stack.append((v, True))
            for p in v.parents:
                if id(p) not in visited:
                    stack.append((p, False))
        return order

    def backward(self) -> None:
        """Set d(self)/d(v) into ``v.grad`` for every v in the graph (added, not assigned)."""
        self.grad = 1.0
        for v in reversed(self.topo_order()):
            g = v.grad
            for p, local in zip(v.parents, v.local_grads, strict=True):
                p.grad += local * g
