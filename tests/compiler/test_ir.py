"""The graph IR: shapes against torch, the verifier on planted defects, equality up to renaming."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from minitorch.compiler import ir
from minitorch.compiler.ir import Graph

pytestmark = pytest.mark.lab13

dims = st.lists(st.integers(1, 4), min_size=0, max_size=4).map(tuple)


@settings(max_examples=60, deadline=None)
@given(dims, dims)
def test_broadcast_shape_matches_torch(a: tuple[int, ...], b: tuple[int, ...]) -> None:
    try:
        want = tuple(torch.broadcast_shapes(a, b))
    except RuntimeError:
        with pytest.raises(ValueError):
            ir.broadcast_shape(a, b)
        return
    assert ir.broadcast_shape(a, b) == want


@pytest.mark.parametrize(
    ("op", "shapes", "attrs", "fn"),
    [
        ("matmul", [(2, 1, 3, 4), (5, 4, 2)], {}, lambda a, b: a @ b),
        ("sum", [(2, 3, 4)], {"axes": (0, 2), "keepdims": True}, lambda a: a.sum((0, 2), True)),
        ("max", [(2, 3, 4)], {"axes": (1,), "keepdims": False}, lambda a: a.amax(1)),
        ("reshape", [(2, 3, 4)], {"shape": (4, 6)}, lambda a: a.reshape(4, 6)),
        ("transpose", [(2, 3, 4)], {"dim0": 0, "dim1": 2}, lambda a: a.transpose(0, 2)),
        ("permute", [(2, 3, 4)], {"dims": (1, 2, 0)}, lambda a: a.permute(1, 2, 0)),
    ],
)
def test_infer_shape_matches_torch(op, shapes, attrs, fn) -> None:
    want = tuple(fn(*[torch.empty(s) for s in shapes]).shape)
    assert ir.infer_shape(op, shapes, attrs) == want


def _mlp() -> Graph:
    g = Graph()
    x = g.placeholder("x", (4, 3))
    w = g.constant(np.ones((3, 2), np.float32), name="w")
    b = g.constant(np.zeros(2, np.float32), name="b")
    g.outputs = (g.op("relu", [g.op("add", [g.op("matmul", [x, w]), b])]),)
    return g


def test_text_form_has_one_node_a_line() -> None:
    text = str(_mlp())
    assert text.splitlines()[3] == "%v0 : float32[4, 2] = matmul(%x, %w)"
    assert text.splitlines()[-1] == "return (%v2)"


def test_verify_finds_each_planted_defect() -> None:
    g = _mlp()
    assert ir.verify(g) == []
    moved = Graph([g.nodes[0], g.nodes[3], g.nodes[1], g.nodes[2], *g.nodes[4:]], g.outputs)
    assert any("defined only later" in p for p in ir.verify(moved))
    twice = Graph([*g.nodes[:4], replace(g.nodes[4], name="v0"), *g.nodes[5:]], g.outputs)
    assert any("twice" in p for p in ir.verify(twice))
    wrong = Graph([*g.nodes[:3], replace(g.nodes[3], shape=(4, 3)), *g.nodes[4:]], g.outputs)
    assert any("says" in p for p in ir.verify(wrong))
    assert ir.verify(Graph(g.nodes, ("nowhere",))) == ["output %nowhere never defined"]


def test_same_structure_is_up_to_renaming_only() -> None:
    a, b = _mlp(), _mlp()
    renamed = {n.name: f"r{i}" for i, n in enumerate(b.nodes)}
    b = Graph(
        [
            replace(n, name=renamed[n.name], inputs=tuple(renamed[i] for i in n.inputs))
            for n in b.nodes
        ],
        tuple(renamed[o] for o in b.outputs),
    )
    assert ir.same_structure(a, b)
    c = _mlp()
    c.nodes[-1] = replace(c.nodes[-1], op="tanh")
    assert not ir.same_structure(a, c)
    d = _mlp()  # the same op twice is not the same graph as once
    d.nodes.append(replace(d.nodes[3], name="dup"))
    assert not ir.same_structure(a, d)
    assert ir.op_counts(a) == {"matmul": 1, "add": 1, "relu": 1}
