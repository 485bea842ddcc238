"""The C++ bias + GELU as an op of the course autograd, forward and backward in C++.

An extension kernel joins an autograd engine the way ``torch.autograd.Function`` joins
torch's: the forward computes the output with the compiled kernel and records a node
(``native_bias_gelu``, parents ``x`` and ``b``), the backward rule registered under that name
calls the compiled backward, ``dh = g * gelu'(x + b)``; the gradient of ``x`` is ``dh`` and
that of ``b`` is ``dh`` summed over every row (``b`` was broadcast over them). Inputs of any
rank ``(..., d)`` run as ``(rows, d)``; the result has ``x``'s dtype (the kernel computes in
float64).

Lab: 37_python_to_machine_code
Paper: Hendrycks & Gimpel 2016, GELU (the tanh form); the PyTorch documentation,
"Extending torch.autograd" and "Custom C++ and CUDA Extensions".
"""

from __future__ import annotations

import numpy as np

from minitorch.autograd.engine import Grads, Node, backward_rule
from minitorch.autograd.tensor import Tensor, make
from minitorch.native.loader import kernels

__all__ = ["OP", "bias_gelu"]

OP = "native_bias_gelu"


def _rows(x: np.ndarray, b: np.ndarray) -> np.ndarray:
    if b.ndim != 1 or x.ndim < 1 or x.shape[-1] != b.shape[0]:
        raise ValueError(f"x (..., d) and b (d,) needed, got {x.shape} and {b.shape}")
    return x.reshape(-1, b.shape[0])


def bias_gelu(x: Tensor, b: Tensor) -> Tensor:
    """``gelu(x + b)`` by the C++ kernel, differentiable in ``x`` and ``b``."""
    y = kernels().bias_gelu(_rows(x.data, b.data), b.data)
    return make(OP, y.reshape(x.data.shape).astype(x.data.dtype, copy=False), (x, b))


@backward_rule(OP)
def bias_gelu_backward(node: Node, g: np.ndarray) -> Grads:
    x, b = node.parents
    rows = _rows(x.data, b.data)
    dh = kernels().bias_gelu_backward(rows, b.data, np.reshape(g, rows.shape))
    gx = dh.reshape(x.data.shape).astype(x.data.dtype, copy=False)
    return gx, dh.sum(axis=0).astype(b.data.dtype, copy=False)
