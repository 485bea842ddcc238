"""Graph passes: constant folding, dead-code elimination, CSE, algebraic simplification, and a
pass manager that runs them to a fixed point and reports what each changed.

    graph, report = PassManager([fold_constants, simplify, cse, dce]).run(graph)

Every pass takes a graph and returns ``(new_graph, changes)``, the number of nodes it
removed or rewrote; it never mutates its input. A value that is replaced keeps the graph in
SSA form by renaming every use (``replace_uses``). Semantics are preserved exactly: the
interpreter gives the same bits before and after (``tests/compiler/test_passes.py`` checks
that on random graphs).

Lab: 14_graph_passes_memory_planning
Paper: Cocke 1970, Global Common Subexpression Elimination; Click 1995, Global Code Motion /
Global Value Numbering; Chen et al. 2018, TVM (graph-level optimizations)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from minitorch.compiler.interp import evaluate
from minitorch.compiler.ir import Graph, Node

__all__ = ["PassManager", "cse", "dce", "fold_constants", "replace_uses", "simplify"]

Pass = Callable[[Graph], tuple[Graph, int]]


def replace_uses(graph: Graph, old: str, new: str) -> Graph:
    """Every use of ``old`` (inputs and outputs) renamed to ``new``; ``old``'s node kept."""
    nodes = [
        replace(n, inputs=tuple(new if i == old else i for i in n.inputs)) if old in n.inputs else n
        for n in graph.nodes
    ]
    return Graph(nodes, tuple(new if o == old else o for o in graph.outputs))


def dce(graph: Graph) -> tuple[Graph, int]:
    """Remove every op and constant no output depends on (placeholders stay: the signature)."""
    live = set(graph.outputs)
    for n in reversed(graph.nodes):
        if n.name in live:
            live.update(n.inputs)
    keep = [n for n in graph.nodes if n.name in live or n.op == "placeholder"]
    return Graph(keep, graph.outputs), len(graph.nodes) - len(keep)


def _key(n: Node) -> Any:
    if n.op == "placeholder":
        return None  # inputs are never merged
    value = None if n.value is None else np.ascontiguousarray(n.value).tobytes()
    return (n.op, n.attrs, n.inputs, tuple(n.shape), n.dtype, value)


def cse(graph: Graph) -> tuple[Graph, int]:
    """Merge nodes that compute the same thing: same op, attrs, inputs (after merging), value."""
    seen: dict[Any, str] = {}
    rename: dict[str, str] = {}
    nodes = []
    for n in graph.nodes:
        n = replace(n, inputs=tuple(rename.get(i, i) for i in n.inputs))
        key = _key(n)
        if key is not None and key in seen:
            rename[n.name] = seen[key]
            continue
        if key is not None:
            seen[key] = n.name
        nodes.append(n)
    outputs = tuple(rename.get(o, o) for o in graph.outputs)
    return Graph(nodes, outputs), len(rename)


def fold_constants(graph: Graph) -> tuple[Graph, int]:
    """Replace every op whose inputs are all constants by a constant holding its value."""
    values: dict[str, np.ndarray] = {}
    nodes, folded = [], 0
    for n in graph.nodes:
        if n.op == "constant":
            values[n.name] = np.asarray(n.value)
        elif n.op != "placeholder" and n.inputs and all(i in values for i in n.inputs):
            out = np.asarray(evaluate(n.op, [values[i] for i in n.inputs], dict(n.attrs)))
            values[n.name] = out
            n = Node(n.name, "constant", (), (), out.shape, str(out.dtype), out)
            folded += 1
        nodes.append(n)
    return Graph(nodes, graph.outputs), folded


def _is_const(graph: Graph, name: str, value: float) -> bool:
    n = graph.node(name)
    return n.op == "constant" and n.value is not None and bool(np.all(n.value == value))


def _identity_of(graph: Graph, n: Node) -> str | None:
    """The operand ``n`` is equal to (bit for bit, same shape and dtype), if any."""
    a, b = (*n.inputs, "", "")[:2]
    if n.op == "mul":
        cands = [x for x, y in ((a, b), (b, a)) if _is_const(graph, y, 1.0)]
    elif n.op == "add":
        cands = [x for x, y in ((a, b), (b, a)) if _is_const(graph, y, 0.0)]
    elif n.op in ("sub", "div"):
        cands = [a] if _is_const(graph, b, 0.0 if n.op == "sub" else 1.0) else []
    elif n.op in ("reshape", "transpose", "permute"):
        src = graph.node(a)
        if n.op == "reshape" or src.op != n.op:
            cands = [a] if n.op == "reshape" and src.shape == n.shape else []
        else:  # transpose(transpose(x)) with the same dims, permute(permute(x)) composing to id
            inner = src.attr("dims") if n.op == "permute" else (src.attr("dim0"), src.attr("dim1"))
            outer = n.attr("dims") if n.op == "permute" else (n.attr("dim0"), n.attr("dim1"))
            if n.op == "permute":
                composed = [inner[d] for d in outer]
                cancels = composed == list(range(len(composed)))
            else:
                cancels = inner == outer
            cands = [src.inputs[0]] if cancels else []
    else:
        cands = []
    same = [c for c in cands if (graph.node(c).shape, graph.node(c).dtype) == (n.shape, n.dtype)]
    return same[0] if same else None


def simplify(graph: Graph) -> tuple[Graph, int]:
    """Algebraic identities: x*1, x+0, x-0, x/1, transpose of transpose, reshape chains."""
    changes = 0
    for n in list(graph.nodes):
        if n.op in ("placeholder", "constant"):
            continue
        n = graph.node(n.name)
        target = _identity_of(graph, n)
        if target is not None:
            graph, changes = replace_uses(graph, n.name, target), changes + 1
            continue
        if n.op == "reshape" and graph.node(n.inputs[0]).op == "reshape":  # reshape(reshape(x))
            inner = graph.node(n.inputs[0])
            nodes = [
                replace(m, inputs=inner.inputs) if m.name == n.name else m for m in graph.nodes
            ]
            graph, changes = Graph(nodes, graph.outputs), changes + 1
    return graph, changes


@dataclass
class PassManager:
    """Run ``passes`` in order, again and again, until a whole round changes nothing."""

    passes: Sequence[Pass]
    max_rounds: int = 10
    report: list[tuple[int, str, int, int]] = field(default_factory=list)

    def run(self, graph: Graph) -> tuple[Graph, list[tuple[int, str, int, int]]]:
        """The optimized graph and ``(round, pass, changes, nodes after)`` for every pass run."""
        self.report = []
        for round_ in range(1, self.max_rounds + 1):
            total = 0
            for p in self.passes:
                graph, changes = p(graph)
                self.report.append((round_, p.__name__, changes, len(graph.nodes)))
                total += changes
            if total == 0:
                break
        return graph, self.report
