"""Batch norm and layer norm, each one fused node with the closed-form backward.

Both normalize x over a set of axes A (m elements), then scale and shift:

    mu = mean_A(x)   var = mean_A((x - mu)^2)   xhat = (x - mu) / sqrt(var + eps)
    y = gamma * xhat + beta

Differentiating through mu and var collapses to one line (g = dL/dy):

    dL/dx = gamma / (m * sqrt(var + eps)) * (m*g - sum_A(g) - xhat * sum_A(g * xhat))
    dL/dgamma = sum(g * xhat)     dL/dbeta = sum(g)      (over the axes gamma is shared)

Batch norm reduces over the batch (and spatial) axes per channel; in eval mode it uses the
running statistics, so y is affine in x and dL/dx = g * gamma / sqrt(running_var + eps).
Layer norm reduces over the trailing feature axes of each sample, in train and eval alike.

Lab: 03_autograd_tensor
Paper: Ioffe & Szegedy 2015, "Batch Normalization"; Ba, Kiros & Hinton 2016, "Layer
Normalization"
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from minitorch.autograd.engine import Node, backward_rule
from minitorch.autograd.tensor import Tensor, make

__all__ = ["batch_norm", "layer_norm"]

Grads = tuple[np.ndarray | None, ...]


def _normalize(x: np.ndarray, axes: tuple[int, ...], eps: float) -> tuple[np.ndarray, ...]:
    mu = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    invstd = 1.0 / np.sqrt(var + eps)
    return (x - mu) * invstd, invstd, mu, var


def _dx(
    g_xhat: np.ndarray, xhat: np.ndarray, invstd: np.ndarray, axes: tuple[int, ...]
) -> np.ndarray:
    """dL/dx from dL/dxhat when mean and variance were taken over ``axes``."""
    m = xhat.size // invstd.size
    s1 = g_xhat.sum(axis=axes, keepdims=True)
    s2 = (g_xhat * xhat).sum(axis=axes, keepdims=True)
    return invstd / m * (m * g_xhat - s1 - xhat * s2)


def _affine(t: Tensor | None, fill: float, shape: tuple[int, ...], dtype: np.dtype) -> Tensor:
    """``t``, or a constant gamma (1) / beta (0) when the layer has no affine part."""
    return t if t is not None else Tensor(np.full(shape, fill, dtype=dtype))


def _update_running(
    mean: np.ndarray, var: np.ndarray, mu: np.ndarray, v: np.ndarray, m: int, momentum: float
) -> None:
    """In place: r <- (1 - momentum) r + momentum * stat, unbiased variance v * m / (m - 1)."""
    mean *= 1 - momentum
    mean += momentum * mu.reshape(mean.shape)  # (1, C, 1, ...) -> (C,)
    var *= 1 - momentum
    var += momentum * v.reshape(var.shape) * m / max(m - 1, 1)


def batch_norm(
    x: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    running_mean: np.ndarray | None,
    running_var: np.ndarray | None,
    training: bool,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalize x: (N, C) or (N, C, ...) per channel C; update running stats in training.

    Running stats follow torch: r <- (1 - momentum) r + momentum * batch_stat, with the
    unbiased batch variance (m / (m - 1)) in ``running_var``.
    """
    c = x.shape[1]
    axes = (0, *range(2, x.ndim))
    bshape = (1, c) + (1,) * (x.ndim - 2)  # gamma, beta broadcast over (N, C, ...)
    weight, bias = _affine(weight, 1.0, (c,), x.dtype), _affine(bias, 0.0, (c,), x.dtype)
    if training:
        xhat, invstd, mu, var = _normalize(x.data, axes, eps)
        if running_mean is not None and running_var is not None:
            _update_running(running_mean, running_var, mu, var, x.size // c, momentum)
    else:
        if running_mean is None or running_var is None:
            raise ValueError("batch_norm in eval mode needs running_mean and running_var")
        invstd = (1.0 / np.sqrt(running_var + eps)).reshape(bshape)  # (C,) -> (1, C, 1, ...)
        xhat = (x.data - running_mean.reshape(bshape)) * invstd
    out = xhat * weight.data.reshape(bshape) + bias.data.reshape(bshape)
    return make(
        "batch_norm",
        out.astype(x.dtype, copy=False),
        (x, weight, bias),
        xhat,
        invstd,
        axes,
        training,
    )


@backward_rule("batch_norm")
def batch_norm_backward(node: Node, g: np.ndarray) -> Grads:
    x, weight, bias = node.parents
    xhat, invstd, axes, training = node.saved
    gamma = weight.data.reshape(invstd.shape)  # (C,) -> (1, C, 1, ...)
    gx = None
    if x.requires_grad:
        gx = _dx(g * gamma, xhat, invstd, axes) if training else g * gamma * invstd
    gw = (g * xhat).sum(axis=axes) if weight.requires_grad else None  # (C,)
    gb = g.sum(axis=axes) if bias.requires_grad else None  # (C,)
    return gx, gw, gb


def layer_norm(
    x: Tensor,
    normalized_shape: Sequence[int],
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalize over the trailing ``normalized_shape`` axes of x: (..., *normalized_shape)."""
    k = len(tuple(normalized_shape))
    axes = tuple(range(x.ndim - k, x.ndim))
    xhat, invstd, _, _ = _normalize(x.data, axes, eps)
    shape = x.shape[x.ndim - k :]
    weight, bias = _affine(weight, 1.0, shape, x.dtype), _affine(bias, 0.0, shape, x.dtype)
    out = xhat * weight.data + bias.data
    return make(
        "layer_norm", out.astype(x.dtype, copy=False), (x, weight, bias), xhat, invstd, axes
    )


@backward_rule("layer_norm")
def layer_norm_backward(node: Node, g: np.ndarray) -> Grads:
    x, weight, bias = node.parents
    xhat, invstd, axes = node.saved
    gx = _dx(g * weight.data, xhat, invstd, axes) if x.requires_grad else None
    # returned in x's shape; the engine sums the leading axes down to gamma's shape
    gw = g * xhat if weight.requires_grad else None
    return gx, gw, (g if bias.requires_grad else None)
