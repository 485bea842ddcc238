"""Grader of exercise 14.3: constant folding and algebraic simplification.

Teaching cases with their expected graphs written out by hand (folded values computed here in
float32 with numpy); the student's result and the expected graph are both cleaned by the
grader's own dead-code sweep before the structural comparison, so leftover dead nodes do not
matter. Fresh random graphs: semantics preserved, no identity left, nothing folded that reads
an input.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import assert_true, fresh_rng, grader, rng
from a2s.checks.lab13._truth import read_graph
from a2s.checks.lab14._truth import live_names, random_graph, same_semantics, structural
from minitorch.compiler.ir import Graph

__all__ = ["check_fold_and_simplify"]

_P = "minitorch.compiler.passes"
_DTYPE = "A folded constant keeps the op's dtype (float32 here), as the interpreter computes it."
_INPUT = "Fold only ops whose inputs are ALL constants: a placeholder's value is unknown."
_SHAPE = (
    "x * 1 is x only when the result has x's shape and dtype: multiplying a (4,) vector by a "
    "(3, 4) matrix of ones broadcasts it, so that product must stay."
)
_TT = (
    "transpose(transpose(x)) is x only when both swap the same two axes (permutes: when they "
    "compose to the identity); reshape(reshape(x)) is one reshape of x, and a reshape to x's "
    "own shape is x."
)
_ID = "x*1, 1*x, x+0, 0+x, x-0 and x/1 are x (same shape and dtype): redirect the uses to x."


def _dead_free(g: Graph) -> Graph:
    live = live_names(g)
    return Graph([n for n in g.nodes if n.name in live], g.outputs)


def _f32(v: float) -> np.ndarray:
    return np.asarray(v, np.float32)


def _fold_cases() -> list[tuple[str, Graph, Graph, str]]:
    out = []
    g = Graph()
    x = g.placeholder("x", (3, 4))
    g.outputs = (g.op("mul", [g.op("add", [g.constant(_f32(2)), g.constant(_f32(1))]), x]),)
    w = Graph()
    x = w.placeholder("x", (3, 4))
    w.outputs = (w.op("mul", [w.constant(_f32(2) + _f32(1)), x]),)
    out.append(("(2 + 1) * x", g, w, _DTYPE))
    c = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    g = Graph()
    x = g.placeholder("x", (3, 4))
    k = g.op("mul", [g.op("tanh", [g.constant(c)]), g.constant(_f32(0.5))])
    g.outputs = (g.op("add", [x, g.op("sum", [k], axes=(1,), keepdims=True)]),)
    w = Graph()
    x = w.placeholder("x", (3, 4))
    folded = np.asarray((np.tanh(c) * _f32(0.5)).sum(axis=(1,), keepdims=True))
    w.outputs = (w.op("add", [x, w.constant(folded)]),)
    out.append(("a constant chain: sum(tanh(C) * 0.5)", g, w, _DTYPE))
    g = Graph()
    x = g.placeholder("x", (3, 4))
    g.outputs = (g.op("mul", [g.op("tanh", [x]), g.constant(_f32(2))]),)
    out.append(("tanh(x) * 2: nothing to fold", g, g, _INPUT))
    return out


def _simplify_cases() -> list[tuple[str, Graph, Graph, str]]:
    out = []
    for label, op, const, left in [
        ("x * 1", "mul", 1.0, False),
        ("1 * x", "mul", 1.0, True),
        ("x + 0", "add", 0.0, False),
        ("0 + x", "add", 0.0, True),
        ("x - 0", "sub", 0.0, False),
        ("x / 1", "div", 1.0, False),
    ]:
        g = Graph()
        x = g.placeholder("x", (3, 4))
        c = g.constant(_f32(const))
        g.outputs = (g.op("tanh", [g.op(op, [c, x] if left else [x, c])]),)
        w = Graph()
        w.outputs = (w.op("tanh", [w.placeholder("x", (3, 4))]),)
        out.append((label, g, w, _ID))
    g = Graph()
    x = g.placeholder("x", (4,))
    g.outputs = (g.op("mul", [x, g.constant(np.ones((3, 4), np.float32))]),)
    out.append(("(4,) * ones((3, 4)): broadcasting, must stay", g, g, _SHAPE))
    g = Graph()
    x = g.placeholder("x", (2, 3, 4))
    t = g.op("transpose", [g.op("transpose", [x], dim0=0, dim1=1)], dim0=0, dim1=1)
    g.outputs = (g.op("transpose", [g.op("transpose", [t], dim0=0, dim1=1)], dim0=1, dim1=2),)
    w = Graph()
    x = w.placeholder("x", (2, 3, 4))
    w.outputs = (w.op("transpose", [w.op("transpose", [x], dim0=0, dim1=1)], dim0=1, dim1=2),)
    out.append(("transpose pairs: (0,1)(0,1) cancels, (0,1)(1,2) does not", g, w, _TT))
    g = Graph()
    x = g.placeholder("x", (2, 3, 4))
    r = g.op(
        "reshape",
        [g.op("reshape", [g.op("reshape", [x], shape=(24,))], shape=(6, 4))],
        shape=(4, 6),
    )
    g.outputs = (g.op("reshape", [g.op("tanh", [r])], shape=(4, 6)),)
    w = Graph()
    x = w.placeholder("x", (2, 3, 4))
    w.outputs = (w.op("tanh", [w.op("reshape", [x], shape=(4, 6))]),)
    out.append(("a reshape chain, then a reshape to the same shape", g, w, _TT))
    return out


def _identities(g: Graph) -> list[str]:
    """Ops the simplifier should have removed: x*1, x+0, x-0, x/1 kept, a reshape of a reshape."""
    left = []
    for n in g.nodes:
        ins = [g.node(i) for i in n.inputs]
        if n.op == "reshape" and ins[0].op == "reshape":
            left.append(n.name)
        unit = {"mul": 1.0, "div": 1.0, "add": 0.0, "sub": 0.0}.get(n.op)
        if unit is None:
            continue
        pairs = (
            [(ins[0], ins[1]), (ins[1], ins[0])] if n.op in ("mul", "add") else [(ins[0], ins[1])]
        )
        for x, c in pairs:
            if (
                c.op == "constant"
                and np.all(c.value == unit)
                and (x.shape, x.dtype) == (n.shape, n.dtype)
            ):
                left.append(n.name)
                break
    return left


def _one(
    student: Callable[..., Any],
    g: Graph,
    want: Graph,
    case: str,
    hint: str,
    gen: np.random.Generator,
    what: str,
) -> int:
    got = _dead_free(read_graph(student(copy.deepcopy(g)), case))
    structural(got, _dead_free(want), case, hint)
    same_semantics(g, got, case, gen, what)
    return len(_dead_free(g).nodes) - len(got.nodes)


@grader(
    "14.3",
    blocks=(
        f"{_P}:fold_constants",
        f"{_P}:simplify",
        f"{_P}:_identity_of",
        f"{_P}:PassManager",
    ),
    hand="property",
)
def check_fold_and_simplify(
    fold_constants: Callable[..., Any], simplify: Callable[..., Any]
) -> str:
    """Exercise 14.3: ``fold_constants(graph)`` and ``simplify(graph)``, each -> Graph."""
    gen, saved, count = rng(1403), 0, 3
    for label, g, want, hint in _fold_cases():
        saved += _one(fold_constants, g, want, f"fold: {label}", hint, gen, "constant folding")
        count += 1
    for label, g, want, hint in _simplify_cases():
        saved += _one(simplify, g, want, f"simplify: {label}", hint, gen, "simplification")
        count += 1
    new = fresh_rng("14.3")
    for i in range(3):
        g = random_graph(new)
        case = fresh(f"random graph {i}")
        folded = read_graph(fold_constants(copy.deepcopy(g)), case)
        same_semantics(g, folded, case, new, "constant folding")
        done = _dead_free(read_graph(simplify(folded), case))
        same_semantics(g, done, case, new, "simplification")
        left = _identities(done)
        assert_true(not left, f"[{case}] identities left after simplify: {left[:3]}. {_ID} {_TT}")
        saved += len(_dead_free(g).nodes) - len(done.nodes)
    return (
        f"{count} graphs (3 fresh): {saved} nodes saved by folding and identities, "
        "every output unchanged"
    )
