"""Grader of exercise 13.3: a tracer that captures functions over Tensors into the IR.

Each case is a function over ``minitorch.autograd.Tensor`` (operators with numbers on either
side, a weight read twice, reductions with negative axes, reshape with -1, the MLP and the
attention block of ``minitorch.compiler.models``) and its expected graph, written out here op
by op. The student's graph must equal it up to renaming, pass the verifier, and compute what
eager execution computes, bit for bit.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np

from a2s.checks.cases import fresh
from a2s.checks.core import assert_true, fresh_rng, grader, rng
from a2s.checks.lab13._truth import (
    assert_same_bits,
    attention_graph,
    call,
    mlp_graph,
    read_graph,
)
from minitorch.autograd import Tensor
from minitorch.compiler import interp, models
from minitorch.compiler.ir import Graph, same_structure, verify

__all__ = ["check_trace"]

_C = "minitorch.compiler"
_REUSE = (
    "A Tensor the function holds (a weight) must become ONE constant node however often it is "
    "read: remember the constant made for each tensor (keyed by id(tensor)) and reuse it."
)
_ORDER = (
    "Same ops, wired differently: a number on the left (2.0 - x, 1 + x) calls __rsub__/__radd__ "
    "and must give sub(constant, x), keeping the operand order; and attributes are normalized: "
    "axes as a sorted tuple of non-negative ints, transpose dims non-negative with dim0 < dim1, "
    "reshape sizes with -1 resolved."
)


_DTYPE = (
    "Same ops, other dtypes: a Python number becomes a 0-d constant in the proxy operand's dtype "
    "(np.asarray(x, dtype)), and a node's dtype is its proxy operand's: a float64 constant would "
    "promote the result."
)


def _f32(x: float) -> np.ndarray:
    return np.asarray(x, np.float32)


def _named(gen: np.random.Generator) -> list[tuple[str, Callable[..., Any], np.ndarray, Graph]]:
    w = gen.standard_normal((3, 2)).astype(np.float32)
    tw = Tensor(w)
    cases = []

    def g0(n: int = 3) -> tuple[Graph, str]:
        g = Graph()
        return g, g.placeholder("x", (4, n))

    g, x = g0()
    g.outputs = (g.op("matmul", [x, g.constant(w)]),)
    cases.append(("x @ W", lambda x: x @ tw, g))
    g, x = g0()
    g.outputs = (g.op("add", [g.op("mul", [x, g.constant(_f32(0.5))]), g.constant(_f32(1.0))]),)
    cases.append(("x * 0.5 + 1.0", lambda x: x * 0.5 + 1.0, g))
    g, x = g0()
    g.outputs = (g.op("sub", [g.constant(_f32(2.0)), x]),)
    cases.append(("2.0 - x (a number on the left)", lambda x: 2.0 - x, g))
    g, x = g0()
    c = g.constant(w)
    g.outputs = (g.op("add", [g.op("matmul", [x, c]), g.op("tanh", [g.op("matmul", [x, c])])]),)
    cases.append(
        ("x @ W + tanh(x @ W): one weight read twice", lambda x: x @ tw + (x @ tw).tanh(), g)
    )
    g, x = g0()
    s = g.op("sum", [x], axes=(1,), keepdims=True)
    g.outputs = (g.op("div", [s, g.constant(_f32(3.0))]),)
    cases.append(
        ("x.sum(axis=-1, keepdims=True) / 3", lambda x: x.sum(axis=-1, keepdims=True) / 3, g)
    )
    g, x = g0()
    r = g.op("reshape", [x], shape=(6, 2))
    g.outputs = (g.op("max", [g.op("transpose", [r], dim0=0, dim1=1)], axes=(0,), keepdims=False),)
    cases.append(
        (
            "x.reshape(-1, 2).transpose(-1, 0).max(axis=0)",
            lambda x: x.reshape(-1, 2).transpose(-1, 0).max(axis=0),
            g,
        )
    )
    fn, params = models.mlp([3, 8, 2])
    cases.append(("MLP 3-8-2 (relu)", fn, mlp_graph(params, 4, "relu")))
    fn, params = models.attention_block(8, 2)
    cases.append(("attention block d=8, 2 heads", fn, attention_graph(params, 4, 2)))
    return [
        (label, f, gen.standard_normal((4, 8 if "attention" in label else 3)).astype(np.float32), g)
        for label, f, g in cases
    ]


def _hint(got: Graph, want: Graph) -> str:
    count = lambda g, op: sum(n.op == op for n in g.nodes)  # noqa: E731
    if count(got, "constant") > count(want, "constant"):
        return _REUSE
    ops = lambda g: Counter(n.op for n in g.nodes)  # noqa: E731
    typed = lambda g: Counter((n.op, n.dtype) for n in g.nodes)  # noqa: E731
    if ops(got) == ops(want) and typed(got) != typed(want):
        return _DTYPE
    if ops(got) == ops(want):
        return _ORDER
    return f"Expected:\n{want}\nGot:\n{got}"


def _one(
    student: Callable[..., Any], label: str, fn: Callable[..., Any], x: np.ndarray, want: Graph
) -> int:
    got = read_graph(call(student, label, fn, [x.copy()]), label)
    problems = verify(got)
    dtypes = any("float64" in p for p in problems)
    axes = any("out of range" in p for p in problems)
    assert_true(
        not problems,
        f"[{label}] your graph is not well formed: {problems[:3]}"
        + (f" {_DTYPE}" if dtypes else "")
        + (f" {_ORDER}" if axes else ""),
    )
    assert_true(
        same_structure(got, want),
        f"[{label}] the graph differs from the expected one. {_hint(got, want)}",
    )
    eager = fn(Tensor(x)).data
    (out,) = interp.run(got, x)
    assert_same_bits(out, eager, case=label, what="your graph run by the interpreter vs eager")
    return len(got.nodes)


@grader(
    "13.3",
    blocks=(
        f"{_C}.capture:trace",
        f"{_C}.capture:Proxy",
        f"{_C}.capture:Tracer",
        f"{_C}.ir:Graph.op",
    ),
    uses=(("13.2", "infer_shape", f"{_C}.ir:infer_shape"),),
    hand="object",
)
def check_trace(trace: Callable[..., Any]) -> str:
    """Exercise 13.3: ``trace(fn, example_inputs) -> Graph`` by running ``fn`` on proxies."""
    nodes = 0
    cases = _named(rng(1303))
    for label, fn, x, want in cases:
        nodes += _one(trace, label, fn, x, want)
    gen = fresh_rng("13.3")
    for i in range(2):
        sizes = [int(s) for s in gen.integers(1, 9, int(gen.integers(2, 5)))]
        act = str(gen.choice(["relu", "tanh", "sigmoid"]))
        fn, params = models.mlp(sizes, seed=i, act=act)
        x = gen.standard_normal((3, sizes[0])).astype(np.float32)
        nodes += _one(trace, fresh(f"random MLP {sizes} ({act})"), fn, x, mlp_graph(params, 3, act))
    return (
        f"{len(cases) + 2} functions (2 fresh MLPs) captured exactly, {nodes} nodes, "
        "each graph bit-exact with eager"
    )
