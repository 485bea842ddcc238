"""A small SSA graph IR: placeholders, constants and op nodes with shapes and dtypes.

    g = Graph()
    x = g.placeholder("x", (4, 8))
    w = g.constant(np.ones((8, 16), np.float32), name="w")
    y = g.op("relu", [g.op("matmul", [x, w])])
    g.outputs = (y,)
    print(g)            # one node a line, like torch.fx's print_readable

Every node defines one value (its ``name``) exactly once; ``inputs`` name earlier nodes;
``attrs`` are a sorted tuple of ``(key, value)`` pairs (hashable, compared by value). The
shape and dtype of an op node follow from its inputs by :func:`infer_shape` (numpy's
broadcasting, batched matmul, reductions, reshape/transpose/permute). :func:`verify` checks
SSA, topological order, that every use is defined and that every shape is consistent;
:func:`same_structure` says whether two graphs are equal up to renaming (hash-consing:
a node's key is its op, attrs, shape, dtype and its inputs' keys).

Lab: 13_graph_capture_ir
Paper: Cytron et al. 1991, Efficiently Computing Static Single Assignment Form; Reed et al.
2022, torch.fx: Practical Program Capture and Transformation for Deep Learning in Python
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "BINARY",
    "REDUCE",
    "SHAPE_OPS",
    "SHAPE_RULES",
    "UNARY",
    "Graph",
    "Node",
    "broadcast_shape",
    "infer_shape",
    "op_counts",
    "same_structure",
    "verify",
]

BINARY = ("add", "sub", "mul", "div", "pow")
UNARY = ("neg", "exp", "log", "tanh", "sigmoid", "relu")
REDUCE = ("sum", "mean", "max")
SHAPE_OPS = ("reshape", "transpose", "permute")
ARITY = {**dict.fromkeys(BINARY, 2), **dict.fromkeys(UNARY, 1), **dict.fromkeys(REDUCE, 1)}
ARITY.update({"matmul": 2, "reshape": 1, "transpose": 1, "permute": 1})
Shape = tuple[int, ...]
SHAPE_RULES: dict[str, Callable[[Sequence[Shape], dict[str, Any]], Shape]] = {}  # later ops


@dataclass(frozen=True)
class Node:
    """One SSA value: ``name = op(*inputs, **attrs)`` of ``shape`` and ``dtype``."""

    name: str
    op: str
    inputs: tuple[str, ...] = ()
    attrs: tuple[tuple[str, Any], ...] = ()
    shape: Shape = ()
    dtype: str = "float32"
    value: np.ndarray | None = field(default=None, compare=False, repr=False)

    def attr(self, key: str, default: Any = None) -> Any:
        """The value of attribute ``key`` (``default`` when absent)."""
        return dict(self.attrs).get(key, default)

    def text(self) -> str:
        """One line: ``%y : float32[4, 16] = matmul(%x, %w)``."""
        args = [f"%{i}" for i in self.inputs] + [f"{k}={v!r}" for k, v in self.attrs]
        call = (
            self.op if self.op in ("placeholder", "constant") else f"{self.op}({', '.join(args)})"
        )
        return f"%{self.name} : {self.dtype}{list(self.shape)} = {call}"


@dataclass
class Graph:
    """A list of nodes in definition order and the names of the outputs."""

    nodes: list[Node] = field(default_factory=list)
    outputs: tuple[str, ...] = ()

    def node(self, name: str) -> Node:
        """The node that defines ``name``."""
        return next(n for n in self.nodes if n.name == name)

    def fresh(self, stem: str = "v") -> str:
        """A name not yet used in the graph (``v0``, ``v1``, ...)."""
        used = {n.name for n in self.nodes}
        return next(f"{stem}{i}" for i in range(len(used) + 1) if f"{stem}{i}" not in used)

    def placeholder(self, name: str, shape: Sequence[int], dtype: str = "float32") -> str:
        """Add an input of ``shape``; returns its name."""
        self.nodes.append(Node(name, "placeholder", shape=tuple(shape), dtype=dtype))
        return name

    def constant(self, value: np.ndarray, name: str | None = None) -> str:
        """Add a constant (a weight, or a scalar such as ``0.5``); returns its name."""
        value = np.asarray(value)
        name = name or self.fresh("c")
        self.nodes.append(Node(name, "constant", (), (), value.shape, str(value.dtype), value))
        return name

    def op(self, op: str, inputs: Sequence[str], name: str | None = None, **attrs: Any) -> str:
        """Add ``op(*inputs, **attrs)`` with its inferred shape and dtype; returns its name."""
        ins = [self.node(i) for i in inputs]
        items = tuple(sorted(attrs.items()))
        shape = infer_shape(op, [n.shape for n in ins], dict(items))
        dtype = str(np.result_type(*[n.dtype for n in ins]))
        self.nodes.append(Node(name or self.fresh(), op, tuple(inputs), items, shape, dtype))
        return self.nodes[-1].name

    def users(self, name: str) -> list[Node]:
        """The nodes that read ``name``."""
        return [n for n in self.nodes if name in n.inputs]

    def __str__(self) -> str:
        lines = [n.text() for n in self.nodes]
        return "\n".join([*lines, f"return ({', '.join('%' + o for o in self.outputs)})"])


def broadcast_shape(a: Shape, b: Shape) -> Shape:
    """Numpy's rule: align on the right; each pair of sizes equal, or one of them 1."""
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x, y = (a[-i] if i <= len(a) else 1), (b[-i] if i <= len(b) else 1)
        if x != y and 1 not in (x, y):
            raise ValueError(f"shapes {a} and {b} do not broadcast")
        out.append(y if x == 1 else x)
    return tuple(reversed(out))


def infer_shape(op: str, shapes: Sequence[Shape], attrs: dict[str, Any]) -> Shape:
    """The output shape of ``op`` on inputs of ``shapes`` (``ValueError`` when illegal)."""
    if op in ARITY and len(shapes) != ARITY[op]:
        raise ValueError(f"{op} takes {ARITY[op]} inputs, got {len(shapes)}")
    if op in BINARY:
        return broadcast_shape(shapes[0], shapes[1])
    if op in UNARY:
        return tuple(shapes[0])
    if op == "matmul":
        a, b = shapes
        if len(a) < 2 or len(b) < 2 or a[-1] != b[-2]:
            raise ValueError(f"matmul of {a} and {b}")
        return (*broadcast_shape(a[:-2], b[:-2]), a[-2], b[-1])
    if op in REDUCE:
        axes, (x,) = attrs["axes"], shapes
        if any(not 0 <= ax < len(x) for ax in axes):
            raise ValueError(f"axes {axes} out of range for {x}")
        if attrs.get("keepdims"):
            return tuple(1 if i in axes else n for i, n in enumerate(x))
        return tuple(n for i, n in enumerate(x) if i not in axes)
    if op == "reshape":
        new, size = attrs["shape"], int(np.prod(shapes[0], dtype=np.int64))
        if int(np.prod(new, dtype=np.int64)) != size or any(n < 0 for n in new):
            raise ValueError(f"cannot reshape {shapes[0]} to {new}")
        return tuple(new)
    if op == "transpose":
        dims, (i, j) = list(shapes[0]), (attrs["dim0"], attrs["dim1"])
        dims[i], dims[j] = dims[j], dims[i]
        return tuple(dims)
    if op == "permute":
        if sorted(attrs["dims"]) != list(range(len(shapes[0]))):
            raise ValueError(f"permute {attrs['dims']} of {shapes[0]}")
        return tuple(shapes[0][d] for d in attrs["dims"])
    if op in SHAPE_RULES:
        return SHAPE_RULES[op](shapes, attrs)
    raise ValueError(f"unknown op {op!r}")


def verify(graph: Graph) -> list[str]:
    """Every problem of ``graph`` (empty when it is well formed)."""
    problems: list[str] = []
    defined: dict[str, Node] = {}
    for pos, n in enumerate(graph.nodes):
        if n.name in defined:
            problems.append(f"%{n.name} defined twice (not SSA)")
        later = {m.name for m in graph.nodes[pos + 1 :]}
        for i in n.inputs:
            if i not in defined:
                where = "defined only later" if i in later else "never defined"
                problems.append(f"%{n.name} uses %{i}, {where}")
        if n.op == "constant":
            if n.value is None or n.value.shape != n.shape or str(n.value.dtype) != n.dtype:
                problems.append(f"constant %{n.name}: value does not match {n.shape} {n.dtype}")
        elif n.op != "placeholder" and all(i in defined for i in n.inputs):
            ins = [defined[i] for i in n.inputs]
            try:
                shape = infer_shape(n.op, [m.shape for m in ins], dict(n.attrs))
                dtype = str(np.result_type(*[m.dtype for m in ins]))
            except (ValueError, KeyError, IndexError, TypeError) as exc:
                problems.append(f"%{n.name} = {n.op}: {exc}")
            else:
                if (shape, dtype) != (tuple(n.shape), n.dtype):
                    problems.append(
                        f"%{n.name} says {n.shape} {n.dtype}, its op gives {shape} {dtype}"
                    )
        defined.setdefault(n.name, n)
    problems += [f"output %{o} never defined" for o in graph.outputs if o not in defined]
    return problems


def _keys(graph: Graph, table: dict[Any, int]) -> dict[str, int]:
    """Hash-cons every node: equal keys exactly when equal up to renaming."""
    ids: dict[str, int] = {}
    n_inputs = 0
    for n in graph.nodes:
        if n.op == "placeholder":
            extra: Any = n_inputs
            n_inputs += 1
        elif n.op == "constant":
            extra = np.ascontiguousarray(n.value).tobytes() if n.value is not None else None
        else:
            extra = tuple(ids[i] for i in n.inputs)
        key = (n.op, n.attrs, tuple(n.shape), n.dtype, extra)
        ids[n.name] = table.setdefault(key, len(table))
    return ids


def _signature(graph: Graph, table: dict[Any, int]) -> tuple[Any, ...]:
    ids = _keys(graph, table)
    fan_out: Counter[str] = Counter(i for n in graph.nodes for i in n.inputs)
    nodes = Counter((ids[n.name], fan_out[n.name]) for n in graph.nodes)
    return nodes, tuple(ids[o] for o in graph.outputs)


def same_structure(a: Graph, b: Graph) -> bool:
    """Whether ``a`` and ``b`` are the same graph up to the names of their values."""
    table: dict[Any, int] = {}
    return _signature(a, table) == _signature(b, table)


def op_counts(graph: Graph, skip: Iterable[str] = ("placeholder", "constant")) -> dict[str, int]:
    """How many nodes of each op the graph has (placeholders and constants left out)."""
    return dict(Counter(n.op for n in graph.nodes if n.op not in set(skip)))
