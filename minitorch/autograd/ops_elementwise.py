"""Elementwise ops, each a numpy forward plus a short backward rule.

For y = f(a, b) applied elementwise, dL/da = dL/dy * df/da, elementwise. Binary ops
broadcast in forward; their rules return grads in the broadcast shape and the engine
sums them back (``unbroadcast``). Rules reuse what forward computed: exp, tanh and
sigmoid save their output, because their derivatives are cheapest in terms of it.

    rule          dL/da                     dL/db
    add           g                         g
    sub           g                         -g
    mul           g*b                       g*a
    div           g/b                       -g*a/b^2
    pow (a^b)     g*b*a^(b-1)               g*a^b*ln a
    exp           g*exp(a)
    log           g/a
    tanh          g*(1-tanh^2 a)
    sigmoid       g*s*(1-s)
    relu          g*[a>0]
    gelu          g*(Phi(a)+a*phi(a))       (tanh form: derivative of the tanh formula)

Lab: 03_autograd_tensor
Paper: Hendrycks & Gimpel 2016, "Gaussian Error Linear Units (GELUs)"
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from minitorch.autograd.engine import Node, backward_rule
from minitorch.autograd.tensor import Tensor, as_tensor, make

__all__ = [
    "add",
    "div",
    "exp",
    "gelu",
    "log",
    "mul",
    "neg",
    "pow",
    "relu",
    "sigmoid",
    "sub",
    "tanh",
]

Grads = tuple[np.ndarray | None, ...]
_GELU_C = math.sqrt(2.0 / math.pi)


def _pair(a: Any, b: Any) -> tuple[Tensor, Tensor]:
    if isinstance(a, Tensor):
        return a, as_tensor(b, like=a)
    return as_tensor(a, like=b), b


def add(a: Any, b: Any) -> Tensor:
    a, b = _pair(a, b)
    return make("add", a.data + b.data, (a, b))


@backward_rule("add")
def add_backward(node: Node, g: np.ndarray) -> Grads:
    return g, g


def sub(a: Any, b: Any) -> Tensor:
    a, b = _pair(a, b)
    return make("sub", a.data - b.data, (a, b))


@backward_rule("sub")
def sub_backward(node: Node, g: np.ndarray) -> Grads:
    return g, -g


def mul(a: Any, b: Any) -> Tensor:
    a, b = _pair(a, b)
    return make("mul", a.data * b.data, (a, b))


@backward_rule("mul")
def mul_backward(node: Node, g: np.ndarray) -> Grads:
    a, b = node.parents
    return (g * b.data if a.requires_grad else None), (g * a.data if b.requires_grad else None)


def div(a: Any, b: Any) -> Tensor:
    a, b = _pair(a, b)
    return make("div", a.data / b.data, (a, b))


@backward_rule("div")
def div_backward(node: Node, g: np.ndarray) -> Grads:
    a, b = node.parents
    ga = g / b.data if a.requires_grad else None
    gb = -g * a.data / (b.data * b.data) if b.requires_grad else None
    return ga, gb


def neg(a: Tensor) -> Tensor:
    return make("neg", -a.data, (a,))


@backward_rule("neg")
def neg_backward(node: Node, g: np.ndarray) -> Grads:
    return (-g,)


def pow(a: Any, b: Any) -> Tensor:
    a, b = _pair(a, b)
    out = a.data**b.data
    return make("pow", out, (a, b), out)


@backward_rule("pow")
def pow_backward(node: Node, g: np.ndarray) -> Grads:
    a, b = node.parents
    (out,) = node.saved
    ga = g * b.data * a.data ** (b.data - 1) if a.requires_grad else None
    gb = g * out * np.log(a.data) if b.requires_grad else None
    return ga, gb


def exp(a: Tensor) -> Tensor:
    out = np.exp(a.data)
    return make("exp", out, (a,), out)


@backward_rule("exp")
def exp_backward(node: Node, g: np.ndarray) -> Grads:
    (out,) = node.saved
    return (g * out,)


def log(a: Tensor) -> Tensor:
    return make("log", np.log(a.data), (a,))


@backward_rule("log")
def log_backward(node: Node, g: np.ndarray) -> Grads:
    return (g / node.parents[0].data,)


def tanh(a: Tensor) -> Tensor:
    out = np.tanh(a.data)
    return make("tanh", out, (a,), out)


@backward_rule("tanh")
def tanh_backward(node: Node, g: np.ndarray) -> Grads:
    (out,) = node.saved
    return (g * (1 - out * out),)


def sigmoid(a: Tensor) -> Tensor:
    # 1/(1+e^-x) = (1+tanh(x/2))/2, which never overflows
    out = 0.5 * (1 + np.tanh(0.5 * a.data))
    return make("sigmoid", out, (a,), out)


@backward_rule("sigmoid")
def sigmoid_backward(node: Node, g: np.ndarray) -> Grads:
    (out,) = node.saved
    return (g * out * (1 - out),)


def relu(a: Tensor) -> Tensor:
    out = np.maximum(a.data, 0)
    return make("relu", out, (a,), out)


@backward_rule("relu")
def relu_backward(node: Node, g: np.ndarray) -> Grads:
    (out,) = node.saved
    return (g * (out > 0),)


def gelu(a: Tensor, approximate: str = "none") -> Tensor:
    """x * Phi(x); ``approximate="tanh"`` uses 0.5x(1+tanh(sqrt(2/pi)(x+0.044715x^3)))."""
    x = a.data
    if approximate == "tanh":
        out = 0.5 * x * (1 + np.tanh(_GELU_C * (x + 0.044715 * x**3)))
    elif approximate == "none":
        out = x * _phi_cdf(x)
    else:
        raise ValueError(f"approximate must be 'none' or 'tanh', not {approximate!r}")
    return make("gelu", out.astype(x.dtype, copy=False), (a,), approximate)


@backward_rule("gelu")
def gelu_backward(node: Node, g: np.ndarray) -> Grads:
    x = node.parents[0].data
    (approximate,) = node.saved
    if approximate == "tanh":
        t = np.tanh(_GELU_C * (x + 0.044715 * x**3))
        dt = _GELU_C * (1 + 3 * 0.044715 * x * x) * (1 - t * t)
        return (g * (0.5 * (1 + t) + 0.5 * x * dt),)
    pdf = np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
    return (g * (_phi_cdf(x) + x * pdf),)


_erf = np.frompyfunc(math.erf, 1, 1)  # exact erf, elementwise (numpy has none)


def _phi_cdf(x: np.ndarray) -> np.ndarray:
    """Standard normal CDF, Phi(x) = (1 + erf(x/sqrt 2)) / 2."""
    erf = np.asarray(_erf(x / math.sqrt(2.0)), dtype=x.dtype)
    return 0.5 * (1.0 + erf)
