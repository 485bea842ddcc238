"""The chip's op table: ATen overloads -> numpy kernels (forward and the backward ATen calls).

    OPS["aten::mm"]            # name -> kernel(*args, **kwargs) on numpy arrays
    register("mm", "bmm")(lambda a, b: a @ b)   # one kernel, two overloads

A backend implements ATen, PyTorch's operator set, one overload at a time: autograd's
backward formulas are themselves ATen calls (``_softmax_backward_data``,
``native_layer_norm_backward``, ``embedding_dense_backward``...), so the same table serves the
backward pass. Kernels take numpy arrays where the op takes tensors and return arrays (or
tuples of arrays); view kernels return numpy views, so the result shares the chip buffer.
Names are ``aten::op.overload`` strings, so this module imports no torch, and a name the
running torch lacks (``_safe_softmax`` is not in every torch the course accepts) is simply
never dispatched. Nothing here calls torch to compute: every value is numpy's.

Lab: 31_pytorch_backend
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["INPLACE", "OPS", "erf", "register"]

Kernel = Callable[..., Any]
OPS: dict[str, Kernel] = {}
INPLACE = {
    "aten::copy_",
    "aten::add_.Scalar",
    "aten::add_.Tensor",
    "aten::mul_.Tensor",
    "aten::zero_",
    "aten::fill_.Scalar",
}
_ERF = np.frompyfunc(math.erf, 1, 1)


def erf(x: np.ndarray) -> np.ndarray:
    """The error function elementwise (``math.erf`` on each element), dtype kept."""
    return np.asarray(_ERF(x), dtype=np.float64).astype(np.asarray(x).dtype)


def register(*names: str) -> Callable[[Kernel], Kernel]:
    """Register one numpy kernel under ATen overload names (``"mm"`` is ``aten::mm``)."""

    def add(fn: Kernel) -> Kernel:
        for name in names:
            full = name if "::" in name else f"aten::{name}"
            OPS[full.removesuffix(".default")] = fn
        return fn

    return add


def _axes(x: np.ndarray, dim: Any) -> tuple[int, ...]:
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return tuple(range(x.ndim))
    dims = [dim] if isinstance(dim, int) else list(dim)
    return tuple(d % max(x.ndim, 1) for d in dims)


def _a(x: Any) -> np.ndarray:
    return np.asarray(x)


# matmuls ------------------------------------------------------------------------------
register("mm", "bmm")(lambda a, b: a @ b)
register("addmm")(
    lambda c, a, b, beta=1, alpha=1: (
        beta * c + alpha * (a @ b) if (beta, alpha) != (1, 1) else c + a @ b
    )
)

# elementwise --------------------------------------------------------------------------
register("add.Tensor", "add.Scalar")(lambda a, b, alpha=1: a + (b if alpha == 1 else alpha * b))
register("sub.Tensor", "sub.Scalar")(lambda a, b, alpha=1: a - (b if alpha == 1 else alpha * b))
register("rsub.Scalar", "rsub.Tensor")(lambda a, b, alpha=1: b - (a if alpha == 1 else alpha * a))
register("mul.Tensor", "mul.Scalar")(lambda a, b: a * b)
register("div.Tensor", "div.Scalar")(lambda a, b: a / b)
register("neg")(lambda a: -a)
register("pow.Tensor_Scalar", "pow.Tensor_Tensor")(lambda a, e: a**e)
register("pow.Scalar")(lambda base, e: np.power(base, e))
register("exp")(np.exp)
register("log")(np.log)
register("sqrt")(np.sqrt)
register("rsqrt")(lambda a: 1 / np.sqrt(a))
register("reciprocal")(lambda a: 1 / a)
register("tanh")(np.tanh)
register("sigmoid")(lambda a: 1 / (1 + np.exp(-a)))
register("relu")(lambda a: np.maximum(a, 0))
register("silu")(lambda a: a / (1 + np.exp(-a)))
register("maximum")(np.maximum)
register("eq.Tensor", "eq.Scalar")(lambda a, b: _a(a == b))
register("lt.Tensor", "lt.Scalar")(lambda a, b: _a(a < b))
register("gt.Tensor", "gt.Scalar")(lambda a, b: _a(a > b))
register("bitwise_not", "logical_not")(lambda a: ~a if a.dtype == bool else np.invert(a))
register("where.self")(lambda c, a, b: np.where(c, a, b))
register("masked_fill.Scalar", "masked_fill.Tensor")(
    lambda a, m, v: np.where(m, _a(v).astype(a.dtype), a)
)
register("tril")(lambda a, diagonal=0: np.tril(a, diagonal))
register("triu")(lambda a, diagonal=0: np.triu(a, diagonal))


@register("gelu")
def _gelu(x: np.ndarray, approximate: str = "none") -> np.ndarray:
    if approximate == "tanh":
        inner = math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)
        return 0.5 * x * (1 + np.tanh(inner))
    return (0.5 * x * (1 + erf(x / math.sqrt(2)))).astype(x.dtype)


@register("gelu_backward")
def _gelu_backward(g: np.ndarray, x: np.ndarray, approximate: str = "none") -> np.ndarray:
    if approximate == "tanh":
        k = math.sqrt(2 / math.pi)
        t = np.tanh(k * (x + 0.044715 * x**3))
        return g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x))
    cdf = 0.5 * (1 + erf(x / math.sqrt(2)))
    pdf = np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
    return (g * (cdf + x * pdf)).astype(x.dtype)


@register("silu_backward")
def _silu_backward(g: np.ndarray, x: np.ndarray) -> np.ndarray:
    s = 1 / (1 + np.exp(-x))
    return g * s * (1 + x * (1 - s))


register("threshold_backward")(lambda g, x, t: np.where(x > t, g, 0).astype(g.dtype))
register("tanh_backward")(lambda g, y: g * (1 - y * y))
register("sigmoid_backward")(lambda g, y: g * y * (1 - y))

# reductions ---------------------------------------------------------------------------
register("sum.dim_IntList")(
    lambda x, dim=None, keepdim=False, dtype=None: _a(x.sum(axis=_axes(x, dim), keepdims=keepdim))
)
register("sum")(lambda x, dtype=None: _a(x.sum()))
register("mean.dim")(
    lambda x, dim=None, keepdim=False, dtype=None: _a(x.mean(axis=_axes(x, dim), keepdims=keepdim))
)
register("mean")(lambda x, dtype=None: _a(x.mean()))
register("amax")(lambda x, dim=(), keepdim=False: _a(x.max(axis=_axes(x, dim), keepdims=keepdim)))
register("argmax")(
    lambda x, dim=None, keepdim=False: _a(
        np.argmax(x) if dim is None else np.argmax(x, axis=dim, keepdims=keepdim)
    ).astype(np.int64)
)


def _softmax_of(x: np.ndarray, dim: int) -> np.ndarray:
    m = x.max(axis=dim, keepdims=True)
    e = np.exp(x - np.where(np.isfinite(m), m, 0))
    return e / e.sum(axis=dim, keepdims=True)


register("_softmax")(lambda x, dim, half_to_float=False: _softmax_of(x, dim))
register("_safe_softmax")(
    lambda x, dim, dtype=None: np.nan_to_num(_softmax_of(x, dim), nan=0.0).astype(x.dtype)
)
register("_softmax_backward_data")(
    lambda g, y, dim, input_dtype=None: y * (g - (g * y).sum(axis=dim, keepdims=True))
)


@register("_log_softmax")
def _log_softmax(x: np.ndarray, dim: int, half_to_float: bool = False) -> np.ndarray:
    z = x - x.max(axis=dim, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=dim, keepdims=True))


register("_log_softmax_backward_data")(
    lambda g, y, dim, input_dtype=None: g - np.exp(y) * g.sum(axis=dim, keepdims=True)
)

# norms, embedding, loss ---------------------------------------------------------------


@register("native_layer_norm")
def _layer_norm(x: np.ndarray, shape: Any, w: Any, b: Any, eps: float) -> tuple[Any, ...]:
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    rstd = (1 / np.sqrt(((x - mean) ** 2).mean(axis=axes, keepdims=True) + eps)).astype(x.dtype)
    y = (x - mean) * rstd
    y = y * w if w is not None else y
    return (y + b if b is not None else y), mean, rstd


@register("native_layer_norm_backward")
def _layer_norm_backward(
    g: Any, x: Any, shape: Any, mean: Any, rstd: Any, w: Any, b: Any, mask: Any
) -> tuple[Any, ...]:
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    outer = tuple(range(x.ndim - len(shape)))
    xhat = (x - mean) * rstd
    gw = g * w if w is not None else g
    dx = rstd * (
        gw - gw.mean(axis=axes, keepdims=True) - xhat * (gw * xhat).mean(axis=axes, keepdims=True)
    )
    dw = (g * xhat).sum(axis=outer) if mask[1] and w is not None else None
    db = g.sum(axis=outer) if mask[2] and b is not None else None
    return (dx if mask[0] else None), dw, db


register("embedding")(lambda w, idx, padding_idx=-1, scale_grad_by_freq=False, sparse=False: w[idx])


@register("embedding_dense_backward")
def _embedding_backward(g: Any, idx: Any, num: int, padding_idx: int, scale: bool) -> Any:
    out = np.zeros((num, g.shape[-1]), g.dtype)
    np.add.at(out, idx.reshape(-1), g.reshape(-1, g.shape[-1]))
    if padding_idx >= 0:
        out[padding_idx] = 0
    return out


@register("nll_loss_forward")
def _nll(x: Any, t: Any, w: Any, reduction: int, ignore: int) -> tuple[Any, Any]:
    keep = t != ignore
    picked = -x[np.arange(len(t)), np.where(keep, t, 0)] * keep
    total = _a(keep.sum()).astype(x.dtype)
    out = picked.sum() / total if reduction == 1 else picked.sum() if reduction == 2 else picked
    return _a(out).astype(x.dtype), total


@register("nll_loss_backward")
def _nll_backward(g: Any, x: Any, t: Any, w: Any, reduction: int, ignore: int, total: Any) -> Any:
    keep = t != ignore
    out = np.zeros_like(x)
    scale = g / total if reduction == 1 else g
    out[np.arange(len(t)), np.where(keep, t, 0)] = -np.where(keep, scale, 0)
    return out


# views and copies ---------------------------------------------------------------------
register("view", "_unsafe_view", "reshape")(lambda x, size: x.reshape(size))
register("t")(lambda x: x.T)
register("transpose.int")(lambda x, a, b: np.swapaxes(x, a, b))
register("permute")(lambda x, dims: x.transpose(dims))
register("unsqueeze")(lambda x, d: np.expand_dims(x, d % (x.ndim + 1)))
register("squeeze.dim", "squeeze.dims")(
    lambda x, d: x.squeeze(tuple(a for a in _axes(x, d) if x.shape[a] == 1))
)
register("alias", "detach", "lift_fresh")(lambda x: x.view())
register("clone")(lambda x, memory_format=None: x.copy())
register("select.int")(lambda x, d, i: x.take(i, axis=d))
register("cat")(lambda xs, dim=0: np.concatenate(xs, axis=dim))


@register("expand")
def _expand(x: np.ndarray, size: Any, implicit: bool = False) -> np.ndarray:
    lead = len(size) - x.ndim
    full = [x.shape[i - lead] if s == -1 else s for i, s in enumerate(size)]
    return np.broadcast_to(x, full)


@register("slice.Tensor")
def _slice(x: np.ndarray, dim: int = 0, start: Any = None, end: Any = None, step: int = 1) -> Any:
    index = [slice(None)] * x.ndim
    index[dim] = slice(start, end, step)
    return x[tuple(index)]


# factories like an existing tensor and in-place writes --------------------------------
register("ones_like")(lambda x, dtype=None, **kw: np.ones_like(x, dtype=dtype))
register("zeros_like", "empty_like")(lambda x, dtype=None, **kw: np.zeros_like(x, dtype=dtype))
register("full_like")(lambda x, v, dtype=None, **kw: np.full_like(x, v, dtype=dtype))
register("new_zeros", "new_empty")(
    lambda x, size, dtype=None, **kw: np.zeros(size, dtype or x.dtype)
)
register("new_empty_strided")(
    lambda x, size, stride, dtype=None, **kw: np.zeros(size, dtype or x.dtype)
)
register("new_ones")(lambda x, size, dtype=None, **kw: np.ones(size, dtype or x.dtype))


def _write(dst: np.ndarray, value: Any) -> np.ndarray:
    dst[...] = value
    return dst


register("copy_")(lambda dst, src, non_blocking=False: _write(dst, src))
register("add_.Scalar")(lambda dst, b, alpha=1: _write(dst, dst + alpha * b))
register("add_.Tensor")(lambda dst, b, alpha=1: _write(dst, dst + alpha * b))
register("mul_.Tensor")(lambda dst, b: _write(dst, dst * b))
register("zero_")(lambda dst: _write(dst, 0))
register("fill_.Scalar")(lambda dst, v: _write(dst, v))
