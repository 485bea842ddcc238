"""Tracing: the captured graphs verify, run bit-exact with eager, and match torch.fx's op counts."""

from __future__ import annotations

import numpy as np
import pytest

from a2s.checks.lab13._truth import fx_counts, fx_nodes, torch_attention, torch_mlp
from minitorch.autograd import Tensor
from minitorch.compiler import capture, interp, ir, models

pytestmark = pytest.mark.lab13

MODELS = {
    "mlp": lambda: (models.mlp([8, 16, 16, 4], act="tanh"), 8),
    "attention": lambda: (models.attention_block(16, 4), 16),
    "gelu_layernorm": lambda: (models.gelu_layernorm(16), 16),
    "transformer": lambda: (models.transformer(16, 2, 2), 16),
}


@pytest.mark.parametrize("name", MODELS)
def test_capture_verifies_and_runs_bit_exact(name: str) -> None:
    (fn, _), d = MODELS[name]()
    x = np.random.default_rng(0).standard_normal((6, d)).astype(np.float32)
    g = capture.trace(fn, [Tensor(x)])
    assert ir.verify(g) == []
    (out,) = interp.run(g, x)
    want = fn(Tensor(x)).data
    assert out.dtype == want.dtype and np.array_equal(out, want)


def test_op_counts_match_torch_fx() -> None:
    (fn, params), _ = MODELS["attention"]()
    g = capture.trace(fn, [np.zeros((5, 16), np.float32)])
    assert ir.op_counts(g) == fx_counts(fx_nodes(torch_attention(params, 5, 4)))
    fn, params = models.mlp([8, 16, 4], act="sigmoid")
    g = capture.trace(fn, [np.zeros((5, 8), np.float32)])
    assert ir.op_counts(g) == fx_counts(fx_nodes(torch_mlp(params, "sigmoid")))


def test_weights_become_one_constant_and_numbers_keep_the_dtype() -> None:
    w = Tensor(np.ones((3, 3), np.float32))
    g = capture.trace(lambda x: x @ w + (x @ w) * 2 - 1.0, [np.zeros((2, 3), np.float32)])
    consts = [n for n in g.nodes if n.op == "constant"]
    assert sum(n.shape == (3, 3) for n in consts) == 1
    assert all(n.dtype == "float32" for n in consts)


def test_reshape_minus_one_and_negative_axes_are_normalized() -> None:
    g = capture.trace(
        lambda x: x.reshape(-1, 2).transpose(-1, 0).sum(axis=-1), [np.zeros((3, 4), np.float32)]
    )
    ops = {n.op: dict(n.attrs) for n in g.nodes}
    assert ops["reshape"] == {"shape": (6, 2)}
    assert ops["transpose"] == {"dim0": 0, "dim1": 1}
    assert ops["sum"] == {"axes": (1,), "keepdims": False}
