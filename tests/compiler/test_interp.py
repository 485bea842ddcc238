"""The interpreter equals eager Tensor ops bit for bit, op by op (including 0-d constants)."""

from __future__ import annotations

import numpy as np
import pytest

from minitorch.autograd import Tensor
from minitorch.compiler import capture, interp

pytestmark = pytest.mark.lab13

FNS = {
    "arith": lambda x: (x * 0.5 + 1.0) / (x * x + 2.0) - x**2.0,
    "unary": lambda x: x.tanh() + x.sigmoid() + x.relu() + (x * 0.1).exp() + (x * x + 1.0).log(),
    "reduce": lambda x: x.sum(axis=0) + x.mean(axis=0) + x.max(axis=0) - (-x).max(axis=0),
    "shape": lambda x: x.reshape(2, 3, 4).permute(2, 0, 1).transpose(0, 2).reshape(6, 4) * x,
    "rsub_rdiv": lambda x: 2.0 - 1.0 / (x * x + 1.0),
}


@pytest.mark.parametrize("name", FNS)
def test_interpreter_is_bit_exact_with_eager(name: str) -> None:
    x = np.random.default_rng(1).standard_normal((6, 4)).astype(np.float32)
    fn = FNS[name]
    g = capture.trace(fn, [x])
    (out,) = interp.run(g, x)
    want = fn(Tensor(x)).data
    assert out.dtype == want.dtype and np.array_equal(out, want)


def test_unknown_op_raises() -> None:
    with pytest.raises(ValueError, match="no kernel"):
        interp.evaluate("conv", [np.zeros(2)], {})
