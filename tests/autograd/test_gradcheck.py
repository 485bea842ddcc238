"""gradcheck passes on correct rules and catches a wrong one."""

import numpy as np
import pytest

from minitorch.autograd import (
    conv2d,
    gradcheck,
    layer_norm,
    numerical_derivative,
    numerical_grad,
    override_rule,
    softmax,
)

rng = np.random.default_rng(0)


def test_gradcheck_passes_on_composite_functions():
    assert gradcheck(
        lambda a, b: (a @ b).tanh() * a.sum(),
        rng.standard_normal((3, 4)),
        rng.standard_normal((4, 4)),
    )
    assert gradcheck(lambda x: softmax(layer_norm(x, (5,)), 0), rng.standard_normal((3, 5)))
    assert gradcheck(
        lambda x, w: conv2d(x, w, padding=1),
        rng.standard_normal((1, 2, 4, 4)),
        rng.standard_normal((3, 2, 3, 3)),
    )


def test_gradcheck_catches_a_wrong_rule():
    def wrong_exp(node, g):
        return (g,)  # forgot the * exp(x)

    with override_rule("exp", wrong_exp), pytest.raises(AssertionError, match="input 0"):
        gradcheck(lambda x: x.exp(), rng.standard_normal((2, 3)))


def test_numerical_helpers():
    (d,) = numerical_derivative(lambda x: x**3, 2.0)
    assert abs(d - 12.0) < 1e-6
    x = rng.standard_normal((2, 2))
    (g,) = numerical_grad(lambda a: float((a**2).sum()), [x])
    assert np.allclose(g, 2 * x, atol=1e-6)
