"""Graph passes preserve semantics on random graphs and reach the expected graphs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from a2s.checks.lab14._truth import live_names, random_graph, value_number
from minitorch.compiler import interp, passes
from minitorch.compiler.ir import Graph, same_structure, verify

pytestmark = pytest.mark.lab14

ALL = passes.PassManager([passes.fold_constants, passes.simplify, passes.cse, passes.dce])


def _outputs(g: Graph, seed: int) -> list[np.ndarray]:
    gen = np.random.default_rng(seed)
    xs = [gen.standard_normal(n.shape).astype(np.float32) for n in g.nodes if n.op == "placeholder"]
    return interp.run(g, *xs)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_every_pass_preserves_semantics(seed: int) -> None:
    g = random_graph(np.random.default_rng(seed))
    want = _outputs(g, seed)
    for p in (passes.fold_constants, passes.simplify, passes.cse, passes.dce):
        h, _ = p(g)
        assert verify(h) == [], p.__name__
        for a, b in zip(_outputs(h, seed), want, strict=True):
            assert a.dtype == b.dtype and np.array_equal(a, b), p.__name__
    h, report = ALL.run(g)
    assert report[-1][0] >= 1 and all(c == 0 for r, _, c, _ in report if r == report[-1][0])
    for a, b in zip(_outputs(h, seed), want, strict=True):
        assert np.array_equal(a, b)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_dce_and_cse_match_the_plain_loops(seed: int) -> None:
    g = random_graph(np.random.default_rng(seed))
    h, removed = passes.dce(g)
    assert {n.name for n in h.nodes} == live_names(g) and removed == len(g.nodes) - len(h.nodes)
    assert len(passes.cse(g)[0].nodes) == value_number(g)


def test_simplify_reaches_the_expected_graph() -> None:
    g = Graph()
    x = g.placeholder("x", (3, 4))
    one, zero = g.constant(np.float32(1)), g.constant(np.float32(0))
    t = g.op(
        "transpose",
        [g.op("transpose", [g.op("add", [g.op("mul", [x, one]), zero])], dim0=0, dim1=1)],
        dim0=0,
        dim1=1,
    )
    g.outputs = (g.op("reshape", [g.op("reshape", [t], shape=(12,))], shape=(4, 3)),)
    want = Graph()
    want.outputs = (want.op("reshape", [want.placeholder("x", (3, 4))], shape=(4, 3)),)
    assert same_structure(ALL.run(g)[0], want)


def test_cse_keeps_ops_with_different_attributes() -> None:
    g = Graph()
    x = g.placeholder("x", (3, 4))
    g.outputs = (
        g.op("sum", [x], axes=(0,), keepdims=True),
        g.op("sum", [x], axes=(1,), keepdims=True),
    )
    assert passes.cse(g)[1] == 0


def test_broadcasting_multiply_by_one_stays() -> None:
    g = Graph()
    x = g.placeholder("x", (4,))
    g.outputs = (g.op("mul", [x, g.constant(np.ones((3, 4), np.float32))]),)
    assert passes.simplify(g)[1] == 0
