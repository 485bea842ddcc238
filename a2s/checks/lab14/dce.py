"""Graders of exercises 14.1 (dead-code elimination) and 14.2 (common-subexpression
elimination): expected graphs written out by hand for the teaching cases; for fresh random
graphs, ground truth from plain loops here (reachability from the outputs, value numbering).
Every result must also compute what the input graph computed.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import assert_true, fresh_rng, grader, rng
from a2s.checks.lab13._truth import read_graph
from a2s.checks.lab14._truth import (
    live_names,
    random_graph,
    same_semantics,
    structural,
    value_number,
)
from minitorch.compiler.ir import Graph, verify

__all__ = ["check_cse", "check_dce"]

_P = "minitorch.compiler.passes"
_USED = (
    "Your DCE removed an op whose output is still used: a node is live when an output or a "
    "live node reads it. Walk the nodes backwards from the outputs, marking inputs live."
)
_TRANSITIVE = (
    "Dead code is left: a node whose only users are dead is dead too. One backwards sweep "
    "from the outputs finds them all (removing only nodes with no users at all is not enough)."
)
_INPUTS = "Placeholders are the graph's signature: keep every input, used or not."
_CONSTANTS = "A constant that no live node reads is dead too: only placeholders stay when unused."
_ATTRS = (
    "Your CSE merged ops with different attributes (sum over axis 0 and over axis 1 are "
    "different values): the key must include the attributes, not just the op and inputs."
)
_CASCADE = (
    "Duplicates are left: after merging a node, its users' inputs are renamed, which can make "
    "them duplicates too; rename inputs *before* looking a node up, in one forward pass."
)
_INPUTS_CSE = "Two placeholders are two different inputs, never merged, even with equal shapes."
_OUTPUTS_CSE = (
    "An output can be a merged duplicate: rename the graph's outputs too, as you rename inputs."
)
_ORDER_CSE = (
    "x - y and y - x are different values: inputs are compared in order (only add and mul "
    "could be sorted, and need not be)."
)
_RENAME = "Every use of a merged node must be renamed to the node it was merged into."
_MUTATED = (
    "Your pass changed the graph it was given: build a new node list and return a new "
    "Graph (Graph(nodes, outputs)); the caller may still need the old graph."
)


def _dce_cases() -> list[tuple[str, Graph, Graph]]:
    out = []
    g = Graph()
    x = g.placeholder("x", (3, 4))
    g.op("exp", [g.op("tanh", [x])])
    g.outputs = (g.op("relu", [x]),)
    w = Graph()
    w.outputs = (w.op("relu", [w.placeholder("x", (3, 4))]),)
    out.append(("a dead chain tanh -> exp", g, w))
    g = Graph()
    a = g.op("tanh", [g.placeholder("x", (3, 4))])
    g.op("exp", [a])
    g.outputs = (g.op("relu", [a]),)
    w = Graph()
    w.outputs = (w.op("relu", [w.op("tanh", [w.placeholder("x", (3, 4))])]),)
    out.append(("a dead user of a live value", g, w))
    g = Graph()
    x, _ = g.placeholder("x", (3, 4)), g.placeholder("y", (3, 4))
    c = g.constant(np.full((3, 4), 2.0, np.float32))
    g.op("mul", [x, c])
    g.outputs = (g.op("tanh", [x]),)
    w = Graph()
    x, _ = w.placeholder("x", (3, 4)), w.placeholder("y", (3, 4))
    w.outputs = (w.op("tanh", [x]),)
    out.append(("an unused input and a constant only dead code reads", g, w))
    g = Graph()
    x = g.placeholder("x", (3, 4))
    t = g.op("tanh", [x])
    g.outputs = (t, g.op("mul", [t, t]))
    out.append(("nothing dead: an output another op reads", g, g))
    return out


def _dce_hint(got: Graph, want: Graph) -> str:
    if sum(n.op == "placeholder" for n in got.nodes) < sum(
        n.op == "placeholder" for n in want.nodes
    ):
        return _INPUTS
    if sum(n.op == "constant" for n in got.nodes) > sum(n.op == "constant" for n in want.nodes):
        return _CONSTANTS
    return _TRANSITIVE if len(got.nodes) > len(want.nodes) else _USED


def _one(
    student: Callable[..., Any],
    g: Graph,
    want: Graph,
    case: str,
    hint: Callable[[Graph, Graph], str],
    gen: np.random.Generator,
    what: str,
    keep_input: bool = False,
) -> int:
    given = copy.deepcopy(g)
    got = read_graph(student(given), case)
    if keep_input:
        assert_true(str(given) == str(g) and given.nodes == g.nodes, f"[{case}] {_MUTATED}")
    structural(got, want, case, hint(got, want))
    same_semantics(g, got, case, gen, what)
    return len(g.nodes) - len(got.nodes)


@grader("14.1", blocks=(f"{_P}:dce",), hand="property")
def check_dce(dce: Callable[..., Any]) -> str:
    """Exercise 14.1: ``dce(graph) -> Graph`` without the values no output needs."""
    gen, removed = rng(1401), 0
    for label, g, want in _dce_cases():
        removed += _one(dce, g, want, label, _dce_hint, gen, "DCE", keep_input=True)
    new = fresh_rng("14.1")
    for i in range(3):
        g = random_graph(new)
        live = live_names(g)
        want = Graph([n for n in g.nodes if n.name in live], g.outputs)
        removed += _one(
            dce, g, want, fresh(f"random graph {i}"), _dce_hint, new, "DCE", keep_input=True
        )
    return (
        f"7 graphs (3 fresh): {removed} dead nodes removed, nothing live touched, outputs unchanged"
    )


def _cse_cases() -> list[tuple[str, Graph, Graph, str]]:
    out = []

    def base() -> tuple[Graph, str, str]:
        g = Graph()
        return g, g.placeholder("x", (3, 4)), g.placeholder("y", (3, 4))

    g, x, y = base()
    g.outputs = (g.op("add", [g.op("mul", [x, y]), g.op("mul", [x, y])]),)
    w, x, y = base()
    m = w.op("mul", [x, y])
    w.outputs = (w.op("add", [m, m]),)
    out.append(("x*y computed twice", g, w, _CASCADE))
    g, x, y = base()
    g.outputs = (
        g.op("sum", [x], axes=(0,), keepdims=True),
        g.op("sum", [x], axes=(1,), keepdims=True),
    )
    out.append(("sum over axis 0 and over axis 1", g, g, _ATTRS))
    g, x, y = base()
    c1, c2 = g.constant(np.asarray(1.0, np.float32)), g.constant(np.asarray(1.0, np.float32))
    a1, a2 = g.op("add", [g.op("exp", [x]), c1]), g.op("add", [g.op("exp", [x]), c2])
    g.outputs = (g.op("mul", [a1, a2]),)
    w, x, y = base()
    a = w.op("add", [w.op("exp", [x]), w.constant(np.asarray(1.0, np.float32))])
    w.outputs = (w.op("mul", [a, a]),)
    out.append(("a cascade: exp(x) + 1 twice, with two equal constants", g, w, _CASCADE))
    g, x, y = base()
    g.outputs = (g.op("mul", [g.op("tanh", [x]), g.op("tanh", [y])]),)
    out.append(("tanh(x) * tanh(y): two inputs of equal shape", g, g, _INPUTS_CSE))
    g, x, y = base()
    e = g.op("exp", [x])
    g.outputs = (g.op("add", [e, y]), g.op("exp", [x]))
    w, x, y = base()
    e = w.op("exp", [x])
    w.outputs = (w.op("add", [e, y]), e)
    out.append(("exp(x) twice, the second one a graph output", g, w, _OUTPUTS_CSE))
    g, x, y = base()
    g.outputs = (g.op("mul", [g.op("sub", [x, y]), g.op("sub", [y, x])]),)
    out.append(("x - y and y - x", g, g, _ORDER_CSE))
    return [(label, g, w, h) for label, g, w, h in out]


def _fixed(hint: str, got: Graph, want: Graph) -> str:
    inputs = sum(n.op == "placeholder" for n in got.nodes)
    return _INPUTS_CSE if inputs < sum(n.op == "placeholder" for n in want.nodes) else hint


def _dead_free(g: Graph) -> Graph:
    live = live_names(g)
    return Graph([n for n in g.nodes if n.name in live], g.outputs)


@grader("14.2", blocks=(f"{_P}:cse", f"{_P}:_key"), hand="property")
def check_cse(cse: Callable[..., Any]) -> str:
    """Exercise 14.2: ``cse(graph) -> Graph`` with every repeated computation done once."""
    gen, merged, cases = rng(1402), 0, _cse_cases()
    for label, g, want, hint in cases:
        merged += _one(cse, g, want, label, functools.partial(_fixed, hint), gen, "CSE")
    new = fresh_rng("14.2")
    for i in range(3):
        g = random_graph(new)
        case = fresh(f"random graph {i}")
        got = read_graph(cse(copy.deepcopy(g)), case)
        problems = verify(got)
        assert_true(
            not problems,
            f"[{case}] the result is not a well-formed graph: {problems[:2]}. "
            + (_OUTPUTS_CSE if any(p.startswith("output") for p in problems) else _RENAME),
        )
        # a CSE that also sweeps dead code, or merges x + y with y + x, is still a CSE
        dead_free = len(_dead_free(got).nodes) == len(got.nodes)
        ref = _dead_free(g) if dead_free else g
        distinct, fewest = value_number(ref), value_number(ref, commutative=True)
        assert_true(
            len(got.nodes) <= distinct,
            f"[{case}] {len(got.nodes)} nodes left, only {distinct} distinct values. {_CASCADE}",
        )
        assert_true(
            len(got.nodes) >= fewest,
            f"[{case}] {len(got.nodes)} nodes for {fewest} distinct values. {_ATTRS}",
        )
        same_semantics(g, got, case, new, "CSE")
        merged += len(g.nodes) - len(got.nodes)
    return (
        f"{len(cases) + 3} graphs (3 fresh): {merged} repeated computations merged, none with "
        "different attributes"
    )
