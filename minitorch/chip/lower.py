"""Lower an ATen-level FX graph to the course IR of lab 13, one FX node at a time.

    graph, feeds = lower(aten_gm, frozen={0: w, 1: b})   # frozen inputs become constants

An FX graph traced by ``make_fx`` holds ATen calls (``aten.addmm``, ``aten._softmax``,
``aten.native_layer_norm``...) with shapes in each node's ``meta["val"]``. The course IR knows
fewer, smaller ops, so each ATen op becomes a few IR ops: ``addmm`` is a matmul then a bias
add (the epilogue fusion sees), ``_softmax`` is max, sub, exp, sum, div, layer norm is two
means and the arithmetic between. Inputs marked ``frozen`` (the module's weights and
buffers, as a freezing inference compiler treats them) become constants, so constant folding
can pre-transpose weights and the conv-BatchNorm fold can apply. An op with no rule raises
:class:`Unsupported`, naming it: the backend then runs the graph eagerly (a graph break).

Lab: 31_pytorch_backend
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import torch

from minitorch.chip.kernels import OPS, erf
from minitorch.compiler import convbn, interp, ir
from minitorch.compiler.ir import Graph

__all__ = ["RULES", "Unsupported", "lower"]

ir.SHAPE_RULES["erf"] = lambda shapes, attrs: tuple(shapes[0])
interp.EXTENSIONS["erf"] = lambda a, attrs: erf(a[0])
ir.SHAPE_RULES["expand"] = lambda shapes, attrs: tuple(attrs["shape"])
interp.EXTENSIONS["expand"] = lambda a, attrs: np.broadcast_to(a[0], attrs["shape"]).copy()
ir.SHAPE_RULES["select"] = lambda shapes, attrs: tuple(
    n for i, n in enumerate(shapes[0]) if i != attrs["dim"]
)
interp.EXTENSIONS["select"] = lambda a, attrs: np.take(a[0], attrs["index"], axis=attrs["dim"])
ir.SHAPE_RULES["embedding"] = lambda shapes, attrs: (*shapes[1], shapes[0][1])
interp.EXTENSIONS["embedding"] = lambda a, attrs: a[0][a[1].astype(np.int64)]
_ = convbn  # registers conv2d and batch_norm with the IR

_DROP = ("layout", "device", "pin_memory", "memory_format", "non_blocking")
Rule = Callable[["_Ctx", Any, list[Any]], Any]
RULES: dict[str, Rule] = {}


class Unsupported(NotImplementedError):
    """The lowering has no rule for an ATen op."""


class _Ctx:
    def __init__(self, graph: Graph) -> None:
        self.g = graph

    def dtype(self, name: str) -> str:
        return self.g.node(name).dtype

    def scalar(self, value: float, like: str) -> str:
        return self.g.constant(np.asarray(value, dtype=self.dtype(like)))

    def ndim(self, name: str) -> int:
        return len(self.g.node(name).shape)

    def axes(self, name: str, dims: Any) -> tuple[int, ...]:
        dims = [dims] if isinstance(dims, int) else list(dims)
        return tuple(sorted(d % self.ndim(name) for d in dims))


def rule(*names: str) -> Callable[[Rule], Rule]:
    """Register a lowering for ATen overloads (``"mm"`` is ``aten::mm``)."""

    def register(fn: Rule) -> Rule:
        for n in names:
            RULES[f"aten::{n}"] = fn
        return fn

    return register


def _binary(op: str) -> Rule:
    def lower_binary(c: _Ctx, node: Any, a: list[Any]) -> str:
        x, y = a[0], a[1]
        if not isinstance(x, str):
            x = c.scalar(x, y)
        if not isinstance(y, str):
            y = c.scalar(y, x)
        alpha = node.kwargs.get("alpha", 1)
        if alpha != 1:
            y = c.g.op("mul", [y, c.scalar(alpha, y)])
        return c.g.op(op, [x, y])

    return lower_binary


for _op in ("add", "sub", "mul", "div"):
    rule(f"{_op}.Tensor", f"{_op}.Scalar")(_binary(_op))


def _unary(op: str) -> Rule:
    def lower_unary(c: _Ctx, node: Any, a: list[Any]) -> str:
        return c.g.op(op, [a[0]])

    return lower_unary


for _op in ("neg", "exp", "log", "tanh", "sigmoid", "relu"):
    rule(_op)(_unary(_op))
rule("pow.Tensor_Scalar")(lambda c, n, a: c.g.op("pow", [a[0], c.scalar(a[1], a[0])]))
rule("rsqrt")(lambda c, n, a: c.g.op("pow", [a[0], c.scalar(-0.5, a[0])]))
rule("sqrt")(lambda c, n, a: c.g.op("pow", [a[0], c.scalar(0.5, a[0])]))
rule("mm", "bmm", "matmul")(lambda c, n, a: c.g.op("matmul", [a[0], a[1]]))
rule("t")(lambda c, n, a: c.g.op("transpose", [a[0]], dim0=0, dim1=1))
rule("transpose.int")(
    lambda c, n, a: c.g.op("transpose", [a[0]], dim0=a[1] % c.ndim(a[0]), dim1=a[2] % c.ndim(a[0]))
)
rule("permute")(
    lambda c, n, a: c.g.op("permute", [a[0]], dims=tuple(d % c.ndim(a[0]) for d in a[1]))
)
rule("view", "_unsafe_view", "reshape")(lambda c, n, a: c.g.op("reshape", [a[0]], shape=_shape(n)))
rule("unsqueeze", "squeeze.dim", "squeeze.dims")(
    lambda c, n, a: c.g.op("reshape", [a[0]], shape=_shape(n))
)
rule("expand")(lambda c, n, a: c.g.op("expand", [a[0]], shape=_shape(n)))
rule("detach", "clone", "alias", "lift_fresh_copy", "contiguous")(lambda c, n, a: a[0])
rule("select.int")(
    lambda c, n, a: c.g.op(
        "select", [a[0]], dim=a[1] % c.ndim(a[0]), index=a[2] % c.g.node(a[0]).shape[a[1]]
    )
)


@rule("embedding")
def _embedding(c: _Ctx, n: Any, a: list[Any]) -> str:
    """Rows of the weight: the index input is declared in the weight's dtype (the IR infers a
    dtype from its operands; ids are exact in float32 below 2^24) and cast at upload."""
    w, idx = a[0], a[1]
    node = c.g.node(idx)
    if node.op == "placeholder" and node.dtype != c.dtype(w):
        c.g.nodes[c.g.nodes.index(node)] = replace(node, dtype=c.dtype(w))
    return c.g.op("embedding", [w, idx])


rule("silu")(lambda c, n, a: c.g.op("mul", [a[0], c.g.op("sigmoid", [a[0]])]))


@rule("addmm")
def _addmm(c: _Ctx, n: Any, a: list[Any]) -> str:
    return c.g.op("add", [c.g.op("matmul", [a[1], a[2]]), a[0]])


def _reduce(op: str) -> Rule:
    def lower_reduce(c: _Ctx, n: Any, a: list[Any]) -> str:
        dims = a[1] if len(a) > 1 and a[1] not in (None, []) else range(c.ndim(a[0]))
        keep = bool(a[2]) if len(a) > 2 else bool(n.kwargs.get("keepdim", False))
        return c.g.op(op, [a[0]], axes=c.axes(a[0], dims), keepdims=keep)

    return lower_reduce


rule("sum.dim_IntList")(_reduce("sum"))
rule("mean.dim")(_reduce("mean"))
rule("amax")(_reduce("max"))


@rule("_softmax", "_safe_softmax")
def _softmax(c: _Ctx, n: Any, a: list[Any]) -> str:
    axes = c.axes(a[0], a[1])
    m = c.g.op("max", [a[0]], axes=axes, keepdims=True)
    e = c.g.op("exp", [c.g.op("sub", [a[0], m])])
    return c.g.op("div", [e, c.g.op("sum", [e], axes=axes, keepdims=True)])


@rule("native_layer_norm")
def _layer_norm(c: _Ctx, n: Any, a: list[Any]) -> tuple[str, str, str]:
    x, shape, w, b, eps = a
    axes = tuple(range(c.ndim(x) - len(shape), c.ndim(x)))
    mu = c.g.op("mean", [x], axes=axes, keepdims=True)
    d = c.g.op("sub", [x, mu])
    var = c.g.op("mean", [c.g.op("mul", [d, d])], axes=axes, keepdims=True)
    r = c.g.op("pow", [c.g.op("add", [var, c.scalar(eps, x)]), c.scalar(-0.5, x)])
    y = c.g.op("mul", [d, r])
    y = c.g.op("mul", [y, w]) if w is not None else y
    return (c.g.op("add", [y, b]) if b is not None else y), mu, r


@rule("gelu")
def _gelu(c: _Ctx, n: Any, a: list[Any]) -> str:
    x = a[0]
    if n.kwargs.get("approximate", "none") == "tanh":
        cube = c.g.op("mul", [c.g.op("pow", [x, c.scalar(3.0, x)]), c.scalar(0.044715, x)])
        inner = c.g.op("mul", [c.g.op("add", [x, cube]), c.scalar(math.sqrt(2 / math.pi), x)])
        t = c.g.op("tanh", [inner])
    else:
        t = c.g.op("erf", [c.g.op("mul", [x, c.scalar(1 / math.sqrt(2), x)])])
    half = c.g.op("mul", [x, c.scalar(0.5, x)])
    return c.g.op("mul", [half, c.g.op("add", [t, c.scalar(1.0, x)])])


@rule("convolution")
def _conv(c: _Ctx, n: Any, a: list[Any]) -> str:
    x, w, b, stride, padding, dilation, transposed, _, groups = a
    if transposed or groups != 1 or any(d != 1 for d in dilation) or len(stride) != 2:
        raise Unsupported("aten::convolution beyond 2-D, groups 1, dilation 1")
    if b is None:
        b = c.g.constant(np.zeros(c.g.node(w).shape[0], c.dtype(w)))
    return c.g.op("conv2d", [x, w, b], stride=tuple(stride), padding=tuple(padding))


@rule("native_batch_norm", "_native_batch_norm_legit_no_training")
def _batch_norm(c: _Ctx, n: Any, a: list[Any]) -> tuple[str, None, None]:
    x, w, b, mean, var = a[:5]
    if n.target.name().endswith("native_batch_norm") and a[5]:
        raise Unsupported("aten::native_batch_norm in training mode")
    return c.g.op("batch_norm", [x, mean, var, w, b], eps=float(a[-1])), None, None


def _shape(node: Any) -> tuple[int, ...]:
    return tuple(int(s) for s in node.meta["val"].shape)


def _np(t: torch.Tensor) -> np.ndarray:
    return np.array(t.detach().cpu().numpy(), copy=True)


def _on_constants(g: Graph, node: Any, name: str, args: Any) -> np.ndarray | None:
    """The value of a node computed from constants only, with the chip's own kernels (and
    numpy for factories such as ``ones``/``arange``); ``None`` when it reads a real input."""
    names: list[str] = []
    torch.fx.node.map_aggregate(args, lambda a: names.append(a) if isinstance(a, str) else None)
    if any(g.node(i).op != "constant" for i in names) or node.op != "call_function":
        return None
    dtype = np.dtype(str(node.meta["val"].dtype).split(".")[1])
    if name in (
        "aten::ones",
        "aten::zeros",
        "aten::full",
        "aten::arange.start_step",
        "aten::arange.start",
        "aten::arange",
    ):
        if name.startswith("aten::arange"):
            return np.arange(*args[:3]).astype(dtype)
        fill = {"aten::ones": 1, "aten::zeros": 0}.get(name, args[-1])
        return np.full(_shape(node), fill, dtype)
    if name == "aten::_to_copy" and names:
        return np.array(g.node(names[0]).value, dtype=dtype)
    if name not in OPS or not names or name in ("aten::embedding",):
        return None
    values = torch.fx.node.map_aggregate(
        args, lambda a: g.node(a).value if isinstance(a, str) else a
    )
    kw = {k: (dtype if k == "dtype" else v) for k, v in node.kwargs.items() if k not in _DROP}
    out = OPS[name](*values, **kw)
    return np.ascontiguousarray(out).astype(dtype) if not isinstance(out, tuple) else None


def lower(gm: torch.fx.GraphModule, frozen: dict[int, torch.Tensor]) -> tuple[Graph, list[int]]:
    """The course IR of ``gm`` and the positions of the placeholders it still takes."""
    g, env, feeds = Graph(), {}, []
    ctx = _Ctx(g)
    for pos, node in enumerate(n for n in gm.graph.nodes if n.op == "placeholder"):
        if pos in frozen:
            env[node] = g.constant(_np(frozen[pos]), name=f"w{pos}")
        else:
            dtype = str(node.meta["val"].dtype).split(".")[1]
            env[node] = g.placeholder(f"x{pos}", _shape(node), dtype)
            feeds.append(pos)
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            continue
        if node.op == "get_attr":  # a tensor constant make_fx kept on the module
            value = _np(operator.attrgetter(node.target)(gm))
            env[node] = g.constant(value, name=g.fresh("k"))
            continue
        args = torch.fx.node.map_arg(node.args, lambda m: env[m])
        if node.op == "output":
            out = args[0]
            g.outputs = (out,) if isinstance(out, str) else tuple(out)
            break
        if node.target is operator.getitem:
            env[node] = args[0][args[1]]
            continue
        if not node.users:
            continue  # a dead node (an unused empty(), a statistic nobody reads)
        name = node.target.name().removesuffix(".default") if node.op == "call_function" else ""
        folded = _on_constants(g, node, name, args)
        if folded is not None:  # a mask or a slope table built in the model: one constant
            env[node] = g.constant(folded, name=g.fresh("k"))
            continue
        if name not in RULES:
            raise Unsupported(f"no lowering for {name or node.format_node()}")
        env[node] = RULES[name](ctx, node, list(args))
    return g, feeds
