"""Grader of exercise 02.2: an iterative topological sort of a ``Value`` graph.

The order must hold every node reachable from the root exactly once, each parent before its
children (checked edge by edge against the graph, and against Kahn's algorithm for the node
set). Then it must scale: a 3,000-node chain counts node comparisons (a ``visited`` *list*
costs ~n^2/2 of them, a set none), and a 100,000-node chain rejects recursion.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

from a2s.checks.cases import fresh
from a2s.checks.core import CheckFailure, StudentError, fresh_rng, grader, plain, rng
from a2s.checks.graphs import order_problem, random_program, run_on_values
from minitorch.autograd.scalar import Value

__all__ = ["check_topo_sort"]

_S = "minitorch.autograd.scalar:Value"
BLOCKS = (
    f"{_S}.topo_order",
    f"{_S}.backward",
    "minitorch.autograd.engine:toposort",
    "minitorch.autograd.engine:backward",
)
DEEP = 100_000


def _named() -> list[tuple[str, Value]]:
    x, w, b = Value(0.5), Value(-1.5), Value(0.25)
    ladder = x
    for _ in range(40):  # 40 diamonds in a row: 2^40 paths from root to x
        ladder = ladder * 2.0 + ladder.tanh()
    return [
        ("a leaf alone", Value(3.0)),
        ("y = x * x (one parent used twice)", x * x),
        ("diamond: y = tanh(x) * exp(x)", x.tanh() * x.exp()),
        ("a neuron: tanh(w x + b)", (w * x + b).tanh()),
        ("a ladder of 40 diamonds", ladder),
    ]


def _counting_class() -> tuple[type[Value], list[int]]:
    """A Value whose == is counted: `node in some_list` compares node by node, a set does not."""
    calls = [0]

    class Counted(Value):
        __slots__ = ()
        __hash__ = Value.__hash__

        def __eq__(self, other: object) -> bool:
            calls[0] += 1
            return self is other

    return Counted, calls


def _chain(n: int, cls: type[Value] = Value) -> Value:
    v = cls(0.5)
    for _ in range(n):
        v = cls(v.data, (v,), (1.0,), "id")
    return v


def _stack_depth() -> int:
    frame: FrameType | None = sys._getframe()
    depth = 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1
    return depth


def _order_of(student: Callable[[Value], Any], root: Value, case: str) -> Any:
    """Run with a normal recursion limit, so recursion on a deep graph fails, never crashes."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(min(old, _stack_depth() + 1000))
    try:
        return plain(student(root), what="your order", case=case)
    except StudentError as exc:
        if isinstance(exc.__cause__, RecursionError):
            raise CheckFailure(
                f"[{case}] RecursionError: a recursive DFS needs one Python "
                "frame per node on the path, and real graphs (an unrolled RNN, 100 layers of "
                "scalar ops) are deeper than the recursion limit. Keep your own stack: a list of "
                "(node, expanded) pairs, pop one, push its parents, append it once they are done."
            ) from None
        raise
    finally:
        sys.setrecursionlimit(old)


@grader("02.2", blocks=BLOCKS, forbid=("torch", "graphlib", "networkx"), hand="property")
def check_topo_sort(student) -> str:
    """Validate the order on named, random, long and deep graphs."""
    cases = _named()
    for g, n, label in (
        (rng(22), 20, "random graph {}"),
        (fresh_rng("02.2"), 3, fresh("graph {}")),
    ):
        for k in range(n):
            n_in, n_ops = int(g.integers(1, 6)), int(g.integers(3, 300))
            prog = random_program(g, n_in, n_ops, ("add", "mul", "tanh", "scale"))
            cases.append((label.format(k), run_on_values(prog)[-1]))
    for case, root in cases:
        order_problem(_order_of(student, root, case), root, case)

    counted, calls = _counting_class()
    n = 3000
    root = _chain(n, counted)
    order_problem(_order_of(student, root, f"a chain of {n:,} nodes"), root, "chain")
    if calls[0] > 20 * n:
        raise CheckFailure(
            f"[a chain of {n:,} nodes] your code compared nodes {calls[0]:,} times: `node in "
            "some_list` scans the list, so the sort costs O(n^2) and a 100,000-node graph would "
            "take minutes. Keep visited nodes in a set (of nodes, or of id(node)): O(1) lookups."
        )
    deep = _chain(DEEP)
    case = f"a chain of {DEEP:,} nodes"
    order_problem(_order_of(student, deep, case), deep, case)
    return (
        f"{len(cases) + 1} graphs ordered parent-first; a {DEEP:,}-node chain without "
        f"recursion; {calls[0]:,} node comparisons on a {n:,}-node chain"
    )
