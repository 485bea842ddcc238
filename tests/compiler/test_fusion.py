"""Fusion: generated kernels are bit-exact, intermediates stay inside, bytes moved fall."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from a2s.checks.lab14._truth import random_graph
from minitorch.autograd import Tensor
from minitorch.compiler import capture, fusion, interp, models, passes
from minitorch.compiler.ir import verify

pytestmark = pytest.mark.lab14


@pytest.mark.parametrize(
    ("name", "d"),
    [("gelu_layernorm", 32), ("attention_block", 32), ("mlp", 16)],
)
def test_fused_models_are_bit_exact_with_eager(name: str, d: int) -> None:
    fn = models.mlp([16, 32, 8])[0] if name == "mlp" else getattr(models, name)(d)[0]
    x = np.random.default_rng(0).standard_normal((7, d)).astype(np.float32)
    g = capture.trace(fn, [x])
    f = fusion.fuse(g)
    assert verify(f) == [] and len(f.nodes) < len(g.nodes)
    (out,) = interp.run(f, x)
    assert np.array_equal(out, fn(Tensor(x)).data)
    assert fusion.bytes_moved(f) < fusion.bytes_moved(g)


def test_matmul_bias_relu_is_one_epilogue_kernel() -> None:
    g = capture.trace(models.mlp([8, 16])[0], [np.zeros((4, 8), np.float32)])
    g = capture.trace(
        lambda x: (x @ Tensor(np.ones((8, 16), np.float32)) + 1.0).relu(),
        [np.zeros((4, 8), np.float32)],
    )
    (group,) = fusion.groups(g)
    assert [g.node(m).op for m in group] == ["matmul", "add", "relu"]
    src, ext = fusion.kernel_source(g, group)
    assert src.count("out=") == 2 and len(ext) == 3


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_fusion_preserves_random_graphs(seed: int) -> None:
    gen = np.random.default_rng(seed)
    g = passes.dce(random_graph(gen))[0]
    f = fusion.fuse(g)
    assert verify(f) == []
    xs = [gen.standard_normal(n.shape).astype(np.float32) for n in g.nodes if n.op == "placeholder"]
    for a, b in zip(interp.run(f, *xs), interp.run(g, *xs), strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
    for names in fusion.groups(g):  # no member but the last is read outside its group
        inside = set(names)
        for m in names[:-1]:
            assert {u.name for u in g.users(m)} <= inside and m not in g.outputs
