"""Shape ops: reshape, permute/transpose, indexing, concat, stack.

These move elements without changing them, so each backward moves the gradient back:

    reshape    dL/dx = g.reshape(x.shape)
    permute    dL/dx = g.transpose(inverse permutation)
    getitem    dL/dx = zeros; scatter-add g into the indexed positions
               (add, not assign: an index array may pick the same element twice)
    concat     dL/dx_i = the i-th slice of g along the axis

Lab: 03_autograd_tensor
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from minitorch.autograd.engine import Node, backward_rule
from minitorch.autograd.tensor import Tensor, make

__all__ = ["concat", "flatten", "getitem", "permute", "reshape", "stack", "transpose"]

Grads = tuple[np.ndarray | None, ...]


def reshape(x: Tensor, shape: int | Sequence[int]) -> Tensor:
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return make("reshape", x.data.reshape(shape), (x,))


@backward_rule("reshape")
def reshape_backward(node: Node, g: np.ndarray) -> Grads:
    return (g.reshape(node.parents[0].data.shape),)


def flatten(x: Tensor, start_dim: int = 0) -> Tensor:
    """Merge the axes from ``start_dim`` on: (N, C, H, W) -> (N, C*H*W) for start_dim=1."""
    start_dim %= max(x.ndim, 1)
    return reshape(x, (*x.shape[:start_dim], -1))


def permute(x: Tensor, dims: Sequence[int]) -> Tensor:
    dims = tuple(d % x.ndim for d in dims)
    return make("permute", x.data.transpose(dims), (x,), dims)


@backward_rule("permute")
def permute_backward(node: Node, g: np.ndarray) -> Grads:
    (dims,) = node.saved
    return (g.transpose(np.argsort(dims)),)


def transpose(x: Tensor, dim0: int, dim1: int) -> Tensor:
    dims = list(range(x.ndim))
    dims[dim0], dims[dim1] = dims[dim1], dims[dim0]
    return permute(x, dims)


def _plain_index(index: Any) -> Any:
    """The index with tensors replaced by their arrays and lists by arrays."""
    if isinstance(index, tuple):
        return tuple(_plain_index(i) for i in index)
    if isinstance(index, Tensor):
        return index.data
    if isinstance(index, list):
        return np.asarray(index)
    return index


def _has_int_array(index: Any) -> bool:
    parts = index if isinstance(index, tuple) else (index,)
    return any(isinstance(i, np.ndarray) and i.dtype.kind in "iu" for i in parts)


def getitem(x: Tensor, index: Any) -> Tensor:
    """``x[index]`` for basic (ints, slices, None, ...) and advanced (arrays, masks) indexing."""
    index = _plain_index(index)
    return make("getitem", np.asarray(x.data[index]), (x,), index)


@backward_rule("getitem")
def getitem_backward(node: Node, g: np.ndarray) -> Grads:
    x = node.parents[0]
    (index,) = node.saved
    gx = np.zeros_like(x.data)
    if _has_int_array(index):
        np.add.at(gx, index, g)  # repeated indices add up
    else:
        gx[index] = g  # slices and masks hit each element at most once
    return (gx,)


def concat(tensors: Sequence[Tensor], axis: int = 0) -> Tensor:
    """Join tensors along an existing ``axis``."""
    tensors = tuple(tensors)
    sizes = [t.shape[axis] for t in tensors]
    out = np.concatenate([t.data for t in tensors], axis=axis)
    return make("concat", out, tensors, axis, sizes)


@backward_rule("concat")
def concat_backward(node: Node, g: np.ndarray) -> Grads:
    axis, sizes = node.saved
    return tuple(np.split(g, np.cumsum(sizes)[:-1], axis=axis))


def stack(tensors: Sequence[Tensor], axis: int = 0) -> Tensor:
    """Join tensors along a new ``axis`` (a reshape to size 1 there, then concat)."""
    tensors = tuple(tensors)
    axis %= tensors[0].ndim + 1
    parts = [reshape(t, (*t.shape[:axis], 1, *t.shape[axis:])) for t in tensors]
    return concat(parts, axis=axis)
