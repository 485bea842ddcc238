"""Matrix multiply (batched, broadcasting) and the fused linear layer op.

For C = A @ B with A: (..., n, k), B: (..., k, m):

    dL/dA = dL/dC @ B^T        (..., n, k)
    dL/dB = A^T @ dL/dC        (..., k, m)

Batch axes broadcast like elementwise ops, so the engine's ``unbroadcast`` sums the
batch axes a weight was shared over. ``linear`` is the same math with the weight stored
(out, in) as in torch, fused into one node: fewer temporaries than matmul + add.

Lab: 03_autograd_tensor
"""

from __future__ import annotations

import numpy as np

from minitorch.autograd.engine import Node, backward_rule
from minitorch.autograd.tensor import Tensor, make

__all__ = ["linear", "matmul"]

Grads = tuple[np.ndarray | None, ...]


def matmul(a: Tensor, b: Tensor) -> Tensor:
    """``a @ b``; 1-d operands are promoted to matrices and the added axis removed."""
    if a.ndim == 1 or b.ndim == 1:
        out = matmul(a.reshape(1, -1) if a.ndim == 1 else a, b.reshape(-1, 1) if b.ndim == 1 else b)
        n = () if a.ndim == 1 else out.shape[-2:-1]
        m = () if b.ndim == 1 else out.shape[-1:]
        return out.reshape(out.shape[:-2] + n + m)  # (.., n, m) minus the promoted axes
    return make("matmul", a.data @ b.data, (a, b))


@backward_rule("matmul")
def matmul_backward(node: Node, g: np.ndarray) -> Grads:
    a, b = node.parents
    ga = g @ np.swapaxes(b.data, -1, -2) if a.requires_grad else None
    gb = np.swapaxes(a.data, -1, -2) @ g if b.requires_grad else None
    return ga, gb


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y = x W^T + b with x: (..., in), W: (out, in), b: (out,) -> y: (..., out)."""
    out = x.data @ weight.data.T
    if bias is None:
        return make("linear", out, (x, weight))
    out += bias.data  # in place: ``out`` is a fresh array
    return make("linear", out, (x, weight, bias))


@backward_rule("linear")
def linear_backward(node: Node, g: np.ndarray) -> Grads:
    x, w = node.parents[0], node.parents[1]
    g2 = g.reshape(-1, g.shape[-1])  # (N, out), N = all leading axes
    gx = g @ w.data if x.requires_grad else None
    gw = g2.T @ x.data.reshape(-1, x.shape[-1]) if w.requires_grad else None  # (out, in)
    if len(node.parents) == 2:
        return gx, gw
    return gx, gw, g2.sum(axis=0)
