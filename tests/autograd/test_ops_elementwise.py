"""Elementwise ops against torch.autograd in float64, over broadcasting edge cases."""

import zlib

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from minitorch.autograd import Tensor, gelu
from tests.helpers.torch_compare import check_op

# (shape of a, shape of b): equal, size-1 axes, missing leading axes, scalars, zero-size
BROADCAST_CASES = [
    ((3, 4), (3, 4)),
    ((3, 1), (1, 4)),
    ((2, 3, 4), (4,)),
    ((4,), (2, 3, 4)),
    ((2, 1, 4), (3, 1)),
    ((), (2, 3)),
    ((2, 3), ()),
    ((), ()),
    ((0, 3), (3,)),
    ((0, 3), (1, 3)),
    ((1, 0), (2, 1)),
]

BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
}


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize(("sa", "sb"), BROADCAST_CASES)
def test_binary_broadcasting(name, sa, sb):
    rng = np.random.default_rng(zlib.crc32(repr((name, sa, sb)).encode()))
    a = rng.standard_normal(sa)
    b = rng.uniform(0.5, 2.0, sb) * rng.choice([-1, 1], sb)  # away from 0 for div
    check_op(BINARY[name], BINARY[name], a, b)


@pytest.mark.parametrize(("sa", "sb"), BROADCAST_CASES[:6])
def test_pow_tensor_exponent(sa, sb):
    rng = np.random.default_rng(1)
    a = rng.uniform(0.5, 2.0, sa)
    b = rng.uniform(-2.0, 2.0, sb)
    check_op(lambda x, y: x**y, lambda x, y: x**y, a, b)


@pytest.mark.parametrize("k", [2, 3, 0.5, -1.5])
def test_pow_constant(k):
    a = np.random.default_rng(2).uniform(0.5, 2.0, (3, 4))
    check_op(lambda x: x**k, lambda x: x**k, a)


def test_constants_on_either_side():
    a = np.random.default_rng(3).uniform(0.5, 2.0, (2, 3))
    check_op(lambda x: 2.0 - x, lambda x: 2.0 - x, a)
    check_op(lambda x: 3.0 / x + 1, lambda x: 3.0 / x + 1, a)
    check_op(lambda x: 2.0**x * -x, lambda x: 2.0**x * -x, a)


UNARY = {
    "exp": (lambda x: x.exp(), torch.exp),
    "log": (lambda x: x.log(), torch.log),
    "tanh": (lambda x: x.tanh(), torch.tanh),
    "sigmoid": (lambda x: x.sigmoid(), torch.sigmoid),
    "relu": (lambda x: x.relu(), torch.relu),
    "neg": (lambda x: -x, torch.neg),
    "gelu": (gelu, torch.nn.functional.gelu),
    "gelu_tanh": (
        lambda x: gelu(x, approximate="tanh"),
        lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
    ),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("shape", [(5, 7), (), (0, 2), (2, 1, 3)])
def test_unary(name, shape):
    rng = np.random.default_rng(4)
    x = rng.standard_normal(shape) * 3
    if name == "log":
        x = np.abs(x) + 0.1
    ours, theirs = UNARY[name]
    check_op(ours, theirs, x)


def test_sigmoid_does_not_overflow():
    x = Tensor(np.array([-1000.0, 0.0, 1000.0]), requires_grad=True)
    y = x.sigmoid()
    y.sum().backward()
    assert np.allclose(y.data, [0, 0.5, 1]) and np.all(np.isfinite(x.grad))


def test_float32_stays_float32():
    x = Tensor(np.ones((2, 2), np.float32), requires_grad=True)
    y = (x * 2.5 + 1).tanh() / 3 - x**2
    y.sum().backward()
    assert y.dtype == np.float32 and x.grad.dtype == np.float32


def test_gelu_rejects_unknown_approximation():
    with pytest.raises(ValueError, match="approximate"):
        gelu(Tensor(np.ones(2)), approximate="erf")


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(-5, 5), min_size=1, max_size=8))
def test_mul_by_self_gradient_is_twice_x(values):
    x = Tensor(np.array(values), requires_grad=True)
    (x * x).sum().backward()
    assert np.allclose(x.grad, 2 * np.array(values))
