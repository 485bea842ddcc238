"""Operator fusion: elementwise chains and matmul + bias + activation epilogues become single
``fused`` nodes whose kernels are generated as numpy source and compiled with ``exec``.

    fused = fuse(graph)        # groups of >= 2 ops -> one node each
    print(fused.node("f0").attr("source"))

Grouping walks the graph backwards: an elementwise op (or a matmul, at most one per group and
only as its first op) joins the group of its users when all its users are in that one group
and it is not a graph output, so its value never leaves the kernel. The kernel computes the
members in the original order with the same numpy calls as the interpreter (so results are
bit-identical) and writes each temporary into a dead operand's buffer (``out=``) when shape
and dtype allow: one output array per kernel instead of one per op.
:func:`bytes_moved` counts what every node reads and writes, fused or not.

Lab: 14_graph_passes_memory_planning
Paper: Chen et al. 2018, TVM (operator fusion); Ansel et al. 2024, PyTorch 2 (TorchInductor)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from minitorch.compiler import interp, ir
from minitorch.compiler.ir import BINARY, UNARY, Graph, Node

__all__ = ["bytes_moved", "compile_kernel", "fuse", "groups", "kernel_source"]

_UFUNC = {
    "add": "np.add",
    "sub": "np.subtract",
    "mul": "np.multiply",
    "div": "np.divide",
    "pow": "np.power",
    "neg": "np.negative",
    "exp": "np.exp",
    "log": "np.log",
    "tanh": "np.tanh",
    "matmul": "np.matmul",
}
_CACHE: dict[str, Any] = {}


def groups(graph: Graph) -> list[list[str]]:
    """The fusion groups (member names in graph order) of two or more ops."""
    group_of: dict[str, int] = {}
    members: dict[int, list[str]] = {}
    has_matmul: set[int] = set()
    outputs = set(graph.outputs)
    for n in reversed(graph.nodes):
        if n.op not in BINARY + UNARY + ("matmul",):
            continue
        users = {group_of.get(u.name, -1) for u in graph.users(n.name)}
        gid = next(iter(users)) if len(users) == 1 else -1
        joins = gid >= 0 and n.name not in outputs
        if joins and n.op == "matmul":
            joins = gid not in has_matmul
        if joins and gid in has_matmul:  # nothing may feed the group's matmul (no prologue)
            joins = all(graph.node(u.name).op != "matmul" for u in graph.users(n.name))
        if not joins:
            gid = len(members)
            members[gid] = []
        group_of[n.name] = gid
        members[gid].append(n.name)
        if n.op == "matmul":
            has_matmul.add(gid)
    order = {n.name: i for i, n in enumerate(graph.nodes)}
    return [sorted(m, key=order.__getitem__) for m in members.values() if len(m) > 1]


def kernel_source(graph: Graph, member_names: Sequence[str]) -> tuple[str, list[str]]:
    """Numpy source of ``def kernel(a0, a1, ...)`` for a group, and its external inputs."""
    members = [graph.node(m) for m in member_names]
    inside = set(member_names)
    ext: list[str] = []
    for n in members:
        for i in n.inputs:
            if i not in inside and i not in ext:
                ext.append(i)
    var = {name: f"a{k}" for k, name in enumerate(ext)}
    last_use = {i: k for k, n in enumerate(members) for i in n.inputs}
    free: dict[str, str] = {}  # temp -> buffer it lives in (dead temps are reused)
    lines = []
    for k, n in enumerate(members):
        args = [var[i] for i in n.inputs]
        reuse = next(
            (
                var[i]
                for i in n.inputs
                if i in inside
                and last_use[i] == k
                and graph.node(i).shape == n.shape
                and graph.node(i).dtype == n.dtype
                and var[i] not in free.values()
            ),
            None,
        )
        out = f", out={reuse}" if reuse and n.op != "matmul" else ""
        if n.op == "sigmoid":
            expr = f"0.5 * (1 + np.tanh(0.5 * {args[0]}))"
        elif n.op == "relu":
            expr = f"np.maximum({args[0]}, 0{out})"
        else:
            expr = f"{_UFUNC[n.op]}({', '.join(args)}{out})"
        var[n.name] = reuse if reuse and out else f"t{k}"
        lines.append(f"    {var[n.name]} = {expr}")
    lines.append(f"    return {var[members[-1].name]}")
    head = f"def kernel({', '.join(var[i] for i in ext)}):"
    return "\n".join([head, *lines]), ext


def compile_kernel(source: str) -> Any:
    """``exec`` the generated source once (cached by its text); return the kernel function."""
    if source not in _CACHE:
        scope: dict[str, Any] = {"np": np}
        exec(compile(source, "<fused kernel>", "exec"), scope)
        _CACHE[source] = scope["kernel"]
    return _CACHE[source]


def _run_fused(args: Sequence[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    return np.asarray(compile_kernel(attrs["source"])(*args))


interp.EXTENSIONS["fused"] = _run_fused
ir.SHAPE_RULES["fused"] = lambda shapes, attrs: tuple(attrs["out_shape"])


def fuse(graph: Graph) -> Graph:
    """``graph`` with every fusion group replaced by one ``fused`` node (at its last member)."""
    replaced: dict[str, Node] = {}
    dropped: set[str] = set()
    for names in groups(graph):
        source, ext = kernel_source(graph, names)
        root = graph.node(names[-1])
        ops = "+".join(graph.node(m).op for m in names)
        attrs = (("ops", ops), ("out_shape", tuple(root.shape)), ("source", source))
        replaced[root.name] = Node(root.name, "fused", tuple(ext), attrs, root.shape, root.dtype)
        dropped.update(names[:-1])
        compile_kernel(source)
    nodes = [replaced.get(n.name, n) for n in graph.nodes if n.name not in dropped]
    return Graph(nodes, graph.outputs)


def bytes_moved(graph: Graph) -> int:
    """Bytes every op node reads (its inputs) and writes (its output), summed over the graph."""
    size = {n.name: int(np.prod(n.shape)) * np.dtype(n.dtype).itemsize for n in graph.nodes}
    ops = [n for n in graph.nodes if n.op not in ("placeholder", "constant")]
    return sum(size[n.name] + sum(size[i] for i in n.inputs) for n in ops)
