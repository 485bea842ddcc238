"""Lab 02 experiments: the scalar engine against torch, and the garbage-collector trap.

1. Forward + backward of one 10,000-node scalar graph, ours vs torch on 0-d tensors
   (torch pays its per-op dispatch on every scalar; we pay Python's object cost).
2. The GC trap: a micrograd-style engine whose ``_backward`` closures capture their own
   output makes every node a reference cycle. Measured per node on a 100,000-node graph
   with the cyclic collector on and off, next to the reference engine (no cycles).

Lab: 02_autograd_scalar
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any

from a2s.bench import Figure, alternate, one_thread, register
from minitorch.autograd import Value

N_NODES = 10_000


def _graph(make: Callable[[float], Any], nodes: int) -> Any:
    """y = sum_i tanh(x_a * x_b): 3 nodes per term over 100 inputs; returns (y, inputs)."""
    xs = [make(0.01 * i - 0.5) for i in range(100)]
    y = xs[0]
    for i in range(nodes // 3):
        y = y + (xs[i % 100] * xs[(i * 7 + 3) % 100]).tanh()
    return y, xs


def _ours(nodes: int) -> None:
    y, _ = _graph(Value, nodes)
    y.backward()


def _torch(nodes: int) -> None:
    import torch

    y, _ = _graph(lambda v: torch.tensor(v, dtype=torch.float64, requires_grad=True), nodes)
    y.backward()


@register
def scalar_engine_vs_torch() -> list[Figure]:
    with one_thread():
        a, b = alternate(lambda: _ours(N_NODES), lambda: _torch(N_NODES), repeats=5)
    return [
        Figure("scalar graph fwd+bwd, 10k nodes", a * 1e3, "ms", "ours"),
        Figure("scalar graph fwd+bwd, 10k nodes, torch 0-d", b * 1e3, "ms", "torch eager"),
        Figure("scalar engine / torch, 10k nodes", a / b, "x", "torch 0-d tensors = 1.0"),
        Figure("scalar engine per node", a / N_NODES * 1e6, "us", "fwd+bwd"),
    ]


class _ClosureValue:
    """micrograd's design: each node keeps a closure that captures the node itself."""

    def __init__(self, data: float, parents: tuple[Any, ...] = ()) -> None:
        self.data, self.grad, self._prev = data, 0.0, parents
        self._backward: Callable[[], None] = lambda: None

    def __add__(self, o: _ClosureValue) -> _ClosureValue:
        out = _ClosureValue(self.data + o.data, (self, o))

        def _backward() -> None:  # captures out: out -> closure -> out is a cycle
            self.grad += out.grad
            o.grad += out.grad

        out._backward = _backward
        return out

    def __mul__(self, o: _ClosureValue) -> _ClosureValue:
        out = _ClosureValue(self.data * o.data, (self, o))

        def _backward() -> None:
            self.grad += o.data * out.grad
            o.grad += self.data * out.grad

        out._backward = _backward
        return out

    def tanh(self) -> _ClosureValue:
        import math

        t = math.tanh(self.data)
        out = _ClosureValue(t, (self,))

        def _backward() -> None:
            self.grad += (1 - t * t) * out.grad

        out._backward = _backward
        return out

    def backward(self) -> None:
        order, seen, stack = [], set(), [(self, False)]
        while stack:
            v, done = stack.pop()
            if done:
                order.append(v)
            elif id(v) not in seen:
                seen.add(id(v))
                stack.append((v, True))
                stack.extend((p, False) for p in v._prev)
        self.grad = 1.0
        for v in reversed(order):
            v._backward()


def _per_node(make: Callable[[float], Any], nodes: int, gc_on: bool, repeats: int = 3) -> float:
    """Median seconds per node of build + backward, repeated so dead graphs pile up."""
    times = []
    gc.collect()
    gc.freeze()  # objects alive now (torch, if imported) are never walked: measure the engine
    (gc.enable if gc_on else gc.disable)()
    try:
        for _ in range(repeats):
            t0 = time.perf_counter()
            y, _ = _graph(make, nodes)
            y.backward()
            times.append((time.perf_counter() - t0) / nodes)
            del y
    finally:
        gc.enable()
        gc.unfreeze()
        gc.collect()
    return sorted(times)[len(times) // 2]


@register
def gc_trap() -> list[Figure]:
    n = 100_000
    closure_on = _per_node(_ClosureValue, n, gc_on=True)
    closure_off = _per_node(_ClosureValue, n, gc_on=False)
    ours_on = _per_node(Value, n, gc_on=True)
    return [
        Figure("closure engine, gc on, 100k nodes", closure_on * 1e6, "us/node", "cycles"),
        Figure("closure engine, gc off, 100k nodes", closure_off * 1e6, "us/node", "cycles"),
        Figure("reference engine, gc on, 100k nodes", ours_on * 1e6, "us/node", "no cycles"),
        Figure("closure (gc on) / reference", closure_on / ours_on, "x", "reference = 1.0"),
    ]
