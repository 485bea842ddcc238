"""Capture a function over ``minitorch.autograd.Tensor`` into the graph IR by tracing.

    graph = trace(model, [x])      # x: an example Tensor (or an array), only its shape matters

As ``torch.fx.symbolic_trace`` does, the function runs once on :class:`Proxy` objects
instead of tensors: every operator and method a Proxy receives (``+``, ``@``, ``.exp()``,
``.sum(axis)``, ``.reshape``...) appends one node to the graph, with its shape and dtype
inferred (:func:`minitorch.compiler.ir.infer_shape`) rather than computed. A ``Tensor`` the
function holds (a weight) becomes a constant node, once per tensor; a Python number becomes a
0-d constant in the other operand's dtype, as ``minitorch.autograd.as_tensor`` does. Python
control flow runs at trace time, so the graph is the path taken for these shapes.

Lab: 13_graph_capture_ir
Paper: Reed et al. 2022, torch.fx: Practical Program Capture and Transformation for Deep
Learning in Python
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from minitorch.autograd import Tensor
from minitorch.compiler.ir import Graph

__all__ = ["Proxy", "Tracer", "trace"]


class Tracer:
    """The graph being recorded, and the constant node of each tensor seen so far."""

    def __init__(self) -> None:
        self.graph = Graph()
        self.seen: dict[int, str] = {}

    def lift(self, x: Any, like: Proxy) -> str:
        """The node name of an operand: a proxy's own, or a new constant."""
        if isinstance(x, Proxy):
            return x.name
        if isinstance(x, Tensor):
            if id(x) not in self.seen:
                self.seen[id(x)] = self.graph.constant(x.data, name=self.graph.fresh("w"))
            return self.seen[id(x)]
        return self.graph.constant(np.asarray(x, dtype=like.dtype))

    def emit(self, op: str, args: Sequence[Any], **attrs: Any) -> Proxy:
        """Record ``op(*args, **attrs)``; returns the proxy of its result."""
        like = next(a for a in args if isinstance(a, Proxy))
        return Proxy(self, self.graph.op(op, [self.lift(a, like) for a in args], **attrs))


def _axes(axis: int | Sequence[int] | None, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    return tuple(sorted(a % ndim for a in axes))


class Proxy:
    """Stands for a Tensor during tracing: same operators and methods, records nodes."""

    def __init__(self, tracer: Tracer, name: str) -> None:
        self.tracer, self.name = tracer, name

    @property
    def shape(self) -> tuple[int, ...]:
        return self.tracer.graph.node(self.name).shape

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.tracer.graph.node(self.name).dtype)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def _bin(self, op: str, other: Any, flip: bool = False) -> Proxy:
        return self.tracer.emit(op, [other, self] if flip else [self, other])

    def __add__(self, o: Any) -> Proxy:
        return self._bin("add", o)

    def __radd__(self, o: Any) -> Proxy:
        return self._bin("add", o, True)

    def __sub__(self, o: Any) -> Proxy:
        return self._bin("sub", o)

    def __rsub__(self, o: Any) -> Proxy:
        return self._bin("sub", o, True)

    def __mul__(self, o: Any) -> Proxy:
        return self._bin("mul", o)

    def __rmul__(self, o: Any) -> Proxy:
        return self._bin("mul", o, True)

    def __truediv__(self, o: Any) -> Proxy:
        return self._bin("div", o)

    def __rtruediv__(self, o: Any) -> Proxy:
        return self._bin("div", o, True)

    def __pow__(self, o: Any) -> Proxy:
        return self._bin("pow", o)

    def __matmul__(self, o: Any) -> Proxy:
        return self._bin("matmul", o)

    def __rmatmul__(self, o: Any) -> Proxy:
        return self._bin("matmul", o, True)

    def __neg__(self) -> Proxy:
        return self.tracer.emit("neg", [self])

    def exp(self) -> Proxy:
        return self.tracer.emit("exp", [self])

    def log(self) -> Proxy:
        return self.tracer.emit("log", [self])

    def tanh(self) -> Proxy:
        return self.tracer.emit("tanh", [self])

    def sigmoid(self) -> Proxy:
        return self.tracer.emit("sigmoid", [self])

    def relu(self) -> Proxy:
        return self.tracer.emit("relu", [self])

    def _reduce(self, op: str, axis: Any, keepdims: bool) -> Proxy:
        return self.tracer.emit(op, [self], axes=_axes(axis, self.ndim), keepdims=bool(keepdims))

    def sum(self, axis: Any = None, keepdims: bool = False) -> Proxy:
        return self._reduce("sum", axis, keepdims)

    def mean(self, axis: Any = None, keepdims: bool = False) -> Proxy:
        return self._reduce("mean", axis, keepdims)

    def max(self, axis: Any = None, keepdims: bool = False) -> Proxy:
        return self._reduce("max", axis, keepdims)

    def reshape(self, *shape: Any) -> Proxy:
        new = shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape
        new = tuple(int(n) for n in new)
        if -1 in new:  # the one free size follows from the element count
            known = int(np.prod([n for n in new if n != -1]))
            new = tuple(int(np.prod(self.shape)) // known if n == -1 else n for n in new)
        return self.tracer.emit("reshape", [self], shape=new)

    def transpose(self, dim0: int, dim1: int) -> Proxy:
        i, j = sorted((dim0 % self.ndim, dim1 % self.ndim))
        return self.tracer.emit("transpose", [self], dim0=i, dim1=j)

    def permute(self, *dims: Any) -> Proxy:
        order = dims[0] if len(dims) == 1 and not isinstance(dims[0], int) else dims
        return self.tracer.emit("permute", [self], dims=tuple(int(d) % self.ndim for d in order))


def trace(fn: Callable[..., Any], example_inputs: Sequence[Any]) -> Graph:
    """The graph of ``fn`` called on proxies shaped like ``example_inputs``."""
    tracer = Tracer()
    proxies = []
    for i, x in enumerate(example_inputs):
        data = x.data if isinstance(x, Tensor) else np.asarray(x)
        proxies.append(
            Proxy(tracer, tracer.graph.placeholder(f"x{i}", data.shape, str(data.dtype)))
        )
    out = fn(*proxies)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    tracer.graph.outputs = tuple(o.name for o in outs)
    return tracer.graph
