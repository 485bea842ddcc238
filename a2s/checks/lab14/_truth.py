"""Lab 14's trusted side, shared by its graders: random graphs with dead code, duplicates and
identities; the ground-truth passes written as plain loops here (never the reference's);
semantics checked by running graphs before and after on random inputs.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from a2s.checks.core import assert_true
from minitorch.compiler import interp
from minitorch.compiler.ir import Graph, same_structure, verify

__all__ = ["live_names", "random_graph", "same_semantics", "structural", "value_number"]


def random_graph(gen: np.random.Generator, n_ops: int = 14, rows: int = 3, cols: int = 4) -> Graph:
    """Inputs, scalar constants (0, 1, 2), a weight; random ops on earlier values, with
    repeated subexpressions, identities and dead values; one or two outputs."""
    g = Graph()
    x = g.placeholder("x", (rows, cols))
    y = g.placeholder("y", (rows, cols))
    w = g.constant(gen.standard_normal((cols, cols)).astype(np.float32) / 2)
    one, zero, two = (g.constant(np.asarray(v, np.float32)) for v in (1.0, 0.0, 2.0))
    vals = [x, y]
    for _ in range(n_ops):
        a = vals[int(gen.integers(max(0, len(vals) - 4), len(vals)))]
        b = vals[int(gen.integers(0, len(vals)))]
        kind = int(gen.integers(0, 9))
        if kind == 0:
            v = g.op(str(gen.choice(["add", "mul", "sub"])), [a, b])
        elif kind == 1:
            v = g.op("tanh", [a])
        elif kind == 2:
            v = g.op(str(gen.choice(["mul", "div"])), [a, one])
        elif kind == 3:
            v = g.op(str(gen.choice(["add", "sub"])), [a, zero])
        elif kind == 4:
            v = g.op("matmul", [a, w])
        elif kind == 5:
            v = g.op("transpose", [g.op("transpose", [a], dim0=0, dim1=1)], dim0=0, dim1=1)
        elif kind == 6:
            v = g.op("mul", [g.op("add", [two, one]), a])  # a constant subexpression
        elif kind == 7:
            s = g.op("sum", [a], axes=(1,), keepdims=True)
            v = g.op("sub", [a, g.op("div", [s, g.constant(np.asarray(cols, np.float32))])])
        else:
            v = g.op(
                "relu",
                [g.op("reshape", [g.op("reshape", [a], shape=(rows * cols,))], shape=(rows, cols))],
            )
        if gen.random() < 0.3:  # the same expression again
            n = g.node(v)
            g.op(n.op, list(n.inputs), **dict(n.attrs))
        vals.append(g.op("tanh", [v]) if gen.random() < 0.3 else v)
    outs = [vals[-1]] if gen.random() < 0.5 else [vals[-1], vals[len(vals) // 2]]
    g.outputs = tuple(dict.fromkeys(outs))
    return g


def live_names(graph: Graph) -> set[str]:
    """Ground truth of DCE: the values some output depends on, and every placeholder."""
    live = set(graph.outputs)
    changed = True
    while changed:
        changed = False
        for n in graph.nodes:
            if n.name in live and not set(n.inputs) <= live:
                live |= set(n.inputs)
                changed = True
    return live | {n.name for n in graph.nodes if n.op == "placeholder"}


def value_number(graph: Graph, commutative: bool = False) -> int:
    """Ground truth of CSE: how many distinct values the graph computes (a plain loop);
    ``commutative``: ``add`` and ``mul`` with swapped inputs count as one value."""
    number: dict[str, int] = {}
    table: dict[Any, int] = {}
    for n in graph.nodes:
        if n.op == "placeholder":
            key: Any = ("in", n.name)
        else:
            value = (
                None if n.value is None else (n.value.dtype.str, n.value.shape, n.value.tobytes())
            )
            ins = [number[i] for i in n.inputs]
            if commutative and n.op in ("add", "mul"):
                ins.sort()
            key = (n.op, n.attrs, tuple(ins), value)
        number[n.name] = table.setdefault(key, len(table))
    return len(table)


def same_semantics(
    before: Graph, after: Graph, case: str, gen: np.random.Generator, what: str
) -> None:
    """The two graphs give equal outputs on two random inputs (values, shapes and dtypes)."""
    shapes = [n.shape for n in before.nodes if n.op == "placeholder"]
    for _ in range(2):
        xs = [gen.standard_normal(s).astype(np.float32) for s in shapes]
        want, got = interp.run(before, *xs), interp.run(after, *xs)
        assert_true(len(got) == len(want), f"[{case}] {what} changed the number of outputs")
        for k, (a, b) in enumerate(zip(got, want, strict=True)):
            same = (
                a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
            )
            assert_true(
                same,
                f"[{case}] {what} changed output {k}: the graph no longer computes the same "
                "values.",
            )


def structural(got: Graph, want: Graph, case: str, hint: str) -> None:
    """``got`` is well formed and equals ``want`` up to renaming."""
    problems = verify(got)
    assert_true(
        not problems, f"[{case}] the result is not a well-formed graph: {problems[:2]}. {hint}"
    )
    if same_structure(got, want):
        return
    if max(len(got.nodes), len(want.nodes)) <= 16:
        shown = f"\nExpected:\n{want}\nGot:\n{got}\n"
    else:  # a fresh random graph: what differs, not two long listings
        kinds = lambda g: Counter(n.op for n in g.nodes)  # noqa: E731
        extra, missing = kinds(got) - kinds(want), kinds(want) - kinds(got)
        shown = (
            f" Expected {len(want.nodes)} nodes, got {len(got.nodes)}"
            + (f"; extra: {dict(extra)}" if extra else "")
            + (f"; missing: {dict(missing)}" if missing else "")
            + ". "
        )
    assert_true(False, f"[{case}] the result differs from the expected graph.{shown}{hint}")
