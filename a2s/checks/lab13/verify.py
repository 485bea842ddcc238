"""Grader of exercise 13.1: a verifier that finds every ill-formed graph and passes good ones.

Good graphs: the captured MLP and attention block (and fresh random MLPs). Bad graphs: each
made from a good one by one defect (a use before its definition, an undefined use, a value
defined twice, an undefined output, a wrong shape, a wrong dtype, shapes that do not
broadcast, a matmul whose inner sizes differ). Ground truth is the defect the grader planted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import assert_true, fresh_rng, grader, plain
from a2s.checks.lab13._truth import attention_graph, call, mlp_graph
from minitorch.compiler import models
from minitorch.compiler.ir import Graph, Node

__all__ = ["check_verify"]

_USE_BEFORE_DEF = (
    "A node reads a value that is defined only *later* in the list. In SSA form in topological "
    "order, every input must be defined by an earlier node: check each use against the names "
    "seen so far, not against every name in the graph."
)


def _copy(g: Graph) -> Graph:
    return Graph(list(g.nodes), tuple(g.outputs))


def _index(g: Graph, op: str) -> int:
    return next(i for i, n in enumerate(g.nodes) if n.op == op)


def _defects(g: Graph) -> list[tuple[str, Graph, str]]:
    out = []
    bad = _copy(g)  # move the first matmul below its first user
    i = _index(bad, "matmul")
    j = next(k for k, n in enumerate(bad.nodes) if bad.nodes[i].name in n.inputs)
    node = bad.nodes.pop(i)
    bad.nodes.insert(j, node)
    out.append(("a use before its definition", bad, _USE_BEFORE_DEF))
    bad = _copy(g)
    i = _index(bad, "add")
    bad.nodes[i] = replace(bad.nodes[i], inputs=(bad.nodes[i].inputs[0], "ghost"))
    out.append(("an input never defined", bad, "Every input name must be defined by some node."))
    bad = _copy(g)  # the first matmul defined again right below itself: nothing else is wrong
    i = _index(bad, "matmul")
    bad.nodes.insert(i + 1, bad.nodes[i])
    out.append(("a value defined twice", bad, "SSA: each name is defined exactly once."))
    bad = _copy(g)
    bad.outputs = ("nowhere",)
    out.append(("an output never defined", bad, "The graph's outputs must name defined values."))
    bad = _copy(g)
    i = _index(bad, "matmul")
    n = bad.nodes[i]
    bad.nodes[i] = replace(n, shape=(n.shape[0] + 1, *n.shape[1:]))
    out.append(
        (
            "a matmul with the wrong stated shape",
            bad,
            "Recompute each op's shape from its inputs' shapes and compare with the node's.",
        )
    )
    bad = _copy(g)
    bad.nodes[i] = replace(n, dtype="float64")
    out.append(
        ("a node with the wrong dtype", bad, "Compare the stated dtype with the inputs' too.")
    )
    return out


def _extra_defects() -> list[tuple[str, Graph, str]]:
    x = Node("x", "placeholder", shape=(3, 4))
    b = Node("b", "constant", shape=(3,), value=np.zeros(3, np.float32))
    y = Node("y", "add", ("x", "b"), (), (3, 4))
    no_bcast = Graph([x, b, y], ("y",))
    w = Node("w", "constant", shape=(5, 2), value=np.zeros((5, 2), np.float32))
    m = Node("m", "matmul", ("x", "w"), (), (3, 2))
    return [
        (
            "(3, 4) + (3,): shapes that do not broadcast",
            no_bcast,
            "Broadcasting aligns shapes on the right: (3, 4) and (3,) compare 4 with 3: illegal.",
        ),
        (
            "(3, 4) @ (5, 2): inner sizes differ",
            Graph([x, w, m], ("m",)),
            "matmul needs a.shape[-1] == b.shape[-2].",
        ),
    ]


def _run(student: Callable[..., object], g: Graph, case: str) -> list[object]:
    got = plain(call(student, case, _copy(g)), what="the list of problems", case=case)
    assert_true(
        isinstance(got, list), f"[{case}] return a list of problems (str), got {type(got).__name__}"
    )
    return got


@grader("13.1", blocks=("minitorch.compiler.ir:verify",), hand="object")
def check_verify(verify: Callable[..., object]) -> str:
    """Exercise 13.1: ``verify(graph) -> list[str]``, empty exactly for a well-formed graph."""
    n_good = n_bad = 0
    goods = [("MLP 8-16-4", mlp_graph(models.mlp([8, 16, 4])[1], 4, "relu"))]
    goods.append(
        ("attention block d=16, 2 heads", attention_graph(models.attention_block(16, 2)[1], 4, 2))
    )
    gen = fresh_rng("13.1")
    for i in range(3):
        sizes = [int(s) for s in gen.integers(1, 9, int(gen.integers(2, 5)))]
        act = str(gen.choice(["relu", "tanh", "sigmoid"]))
        goods.append(
            (fresh(f"random MLP {sizes} {act}"), mlp_graph(models.mlp(sizes, seed=i)[1], 3, act))
        )
    for label, g in goods:
        got = _run(verify, g, label)
        assert_true(got == [], f"[{label}] a well-formed graph was rejected: {got[:3]}")
        n_good += 1
        for what, bad, hint in _defects(g):
            case = f"{label}, {what}"
            assert_true(_run(verify, bad, case) != [], f"[{case}] returned no problem. {hint}")
            n_bad += 1
    for case, bad, hint in _extra_defects():
        assert_true(_run(verify, bad, case) != [], f"[{case}] returned no problem. {hint}")
        n_bad += 1
    return (
        f"{n_good} well-formed graphs (3 fresh) pass; {n_bad} graphs with one planted defect "
        "each are caught"
    )
