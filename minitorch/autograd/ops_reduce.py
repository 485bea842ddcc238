"""Reductions over axes: sum, mean, max.

A reduction y = R(x) over axes A maps many inputs to one output, so backward fans the
gradient back out: broadcast dL/dy over the reduced axes, then weight it.

    sum   dL/dx = broadcast(g)
    mean  dL/dx = broadcast(g) / |A|              (|A| = number of reduced elements)
    max   dL/dx = broadcast(g) * [x == max] / #ties   (ties share, like torch.amax)

Lab: 03_autograd_tensor
"""

from __future__ import annotations

import builtins

import numpy as np

from minitorch.autograd.engine import Node, backward_rule
from minitorch.autograd.tensor import Axis, Tensor, make

__all__ = ["max", "mean", "normalize_axes", "sum"]

Grads = tuple[np.ndarray | None, ...]


def normalize_axes(axis: Axis, ndim: int) -> tuple[int, ...]:
    """Axes as a sorted tuple of non-negative ints (None = all)."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    return tuple(sorted(a % ndim if ndim else a for a in axes))


def _fan_out(g: np.ndarray, node: Node) -> np.ndarray:
    """Reshape g to keepdims form and broadcast it back to the input's shape."""
    x = node.parents[0]
    axes, keepdims = node.saved[0], node.saved[1]
    if not keepdims:
        g = np.expand_dims(g, axes)  # (.., 1, ..) at every reduced axis
    return np.broadcast_to(g, x.data.shape)


def sum(x: Tensor, axis: Axis = None, keepdims: bool = False) -> Tensor:
    axes = normalize_axes(axis, x.ndim)
    return make("sum", np.asarray(x.data.sum(axis=axes, keepdims=keepdims)), (x,), axes, keepdims)


@backward_rule("sum")
def sum_backward(node: Node, g: np.ndarray) -> Grads:
    return (_fan_out(g, node),)


def mean(x: Tensor, axis: Axis = None, keepdims: bool = False) -> Tensor:
    axes = normalize_axes(axis, x.ndim)
    count = int(np.prod([x.shape[a] for a in axes]))
    total = np.asarray(x.data.sum(axis=axes, keepdims=keepdims))
    with np.errstate(invalid="ignore"):  # the mean of nothing is 0/0 = nan, as in torch
        out = total / count
    return make("mean", np.asarray(out, dtype=x.dtype), (x,), axes, keepdims, count)


@backward_rule("mean")
def mean_backward(node: Node, g: np.ndarray) -> Grads:
    count = node.saved[2]
    return (_fan_out(g, node) / builtins.max(count, 1),)


def max(x: Tensor, axis: Axis = None, keepdims: bool = False) -> Tensor:
    axes = normalize_axes(axis, x.ndim)
    top = x.data.max(axis=axes, keepdims=True)
    out = top if keepdims else np.squeeze(top, axis=axes)
    return make("max", np.asarray(out), (x,), axes, keepdims, top)


@backward_rule("max")
def max_backward(node: Node, g: np.ndarray) -> Grads:
    x = node.parents[0]
    axes, top = node.saved[0], node.saved[2]
    hit = x.data == top  # every maximum of its slice
    share = (hit / hit.sum(axis=axes, keepdims=True)).astype(x.data.dtype)
    return (_fan_out(g, node) * share,)
