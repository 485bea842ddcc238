"""2-D convolution by im2col, and max / average pooling.

im2col copies every (C, kh, kw) input patch into a column, turning the convolution into
one matrix multiply per image (the way cuDNN's GEMM algorithms and most CPU libraries do):

    cols: (N, C*kh*kw, Ho*Wo)      W: (O, C*kh*kw)       y = W @ cols  -> (N, O, Ho*Wo)
    dL/dW = sum_n dY_n @ cols_n^T      dL/dcols = W^T @ dY      dL/dx = col2im(dL/dcols)

col2im is the adjoint of im2col: each input pixel appears in up to kh*kw patches, so it
*adds* the gradient of every copy. Pooling has the same window structure: max pooling
routes g to the arg-max of each window, average pooling spreads g/(kh*kw) over it.

Lab: 03_autograd_tensor
Paper: Chellapilla, Puri & Simard 2006, "High Performance Convolutional Neural Networks
for Document Processing" (convolution as matrix multiply)
"""

from __future__ import annotations

import numpy as np

from minitorch.autograd.engine import Node, backward_rule
from minitorch.autograd.tensor import Tensor, make

__all__ = ["avg_pool2d", "col2im", "conv2d", "im2col", "max_pool2d"]

Grads = tuple[np.ndarray | None, ...]


def _out_size(size: int, k: int, stride: int, pad: int) -> int:
    return (size + 2 * pad - k) // stride + 1


def _windows(x: np.ndarray, kh: int, kw: int, stride: int, pad: int, fill: float) -> np.ndarray:
    """A strided view of every kh x kw window: (N, C, Ho, Wo, kh, kw), no copy."""
    if pad:
        x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=fill)
    view = np.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(2, 3))
    return view[:, :, ::stride, ::stride]


def im2col(x: np.ndarray, kh: int, kw: int, stride: int = 1, pad: int = 0) -> np.ndarray:
    """Patches of x: (N, C, H, W) -> (N, C*kh*kw, Ho*Wo), one column per output pixel."""
    win = _windows(x, kh, kw, stride, pad, 0.0)  # (N, C, Ho, Wo, kh, kw)
    n, c, ho, wo = win.shape[:4]
    return win.transpose(0, 1, 4, 5, 2, 3).reshape(n, c * kh * kw, ho * wo)  # copies


def _scatter_windows(
    gwin: np.ndarray, x_shape: tuple[int, ...], stride: int, pad: int
) -> np.ndarray:
    """Add window gradients (N, C, kh, kw, Ho, Wo) back onto the input (N, C, H, W)."""
    n, c, h, w = x_shape
    kh, kw, ho, wo = gwin.shape[2:]
    gx = np.zeros((n, c, h + 2 * pad, w + 2 * pad), dtype=gwin.dtype)
    for i in range(kh):  # kh*kw strided adds instead of one add per pixel
        for j in range(kw):
            gx[:, :, i : i + stride * ho : stride, j : j + stride * wo : stride] += gwin[:, :, i, j]
    return gx[:, :, pad : pad + h, pad : pad + w]


def col2im(
    cols: np.ndarray, x_shape: tuple[int, ...], kh: int, kw: int, stride: int = 1, pad: int = 0
) -> np.ndarray:
    """Adjoint of :func:`im2col`: (N, C*kh*kw, Ho*Wo) -> (N, C, H, W), summing overlaps."""
    n, c, h, w = x_shape
    ho, wo = _out_size(h, kh, stride, pad), _out_size(w, kw, stride, pad)
    gwin = cols.reshape(n, c, kh, kw, ho, wo)  # (N, C*kh*kw, Ho*Wo) -> (N, C, kh, kw, Ho, Wo)
    return _scatter_windows(gwin, x_shape, stride, pad)


def conv2d(
    x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: int = 1, padding: int = 0
) -> Tensor:
    """Cross-correlation y[n,o] = sum_c x[n,c] * W[o,c] + b[o].

    x: (N, C, H, W), W: (O, C, kh, kw), b: (O,) -> y: (N, O, Ho, Wo).
    """
    o, _, kh, kw = weight.shape
    n, _, h, w = x.shape
    cols = im2col(x.data, kh, kw, stride, padding)  # (N, C*kh*kw, Ho*Wo)
    y = weight.data.reshape(o, -1) @ cols  # (N, O, Ho*Wo)
    if bias is not None:
        y += bias.data[:, None]
    ho, wo = _out_size(h, kh, stride, padding), _out_size(w, kw, stride, padding)
    out = y.reshape(n, o, ho, wo)  # (N, O, Ho*Wo) -> (N, O, Ho, Wo)
    parents = (x, weight) if bias is None else (x, weight, bias)
    return make("conv2d", out, parents, cols, stride, padding)


@backward_rule("conv2d")
def conv2d_backward(node: Node, g: np.ndarray) -> Grads:
    x, w = node.parents[0], node.parents[1]
    cols, stride, pad = node.saved
    o, _, kh, kw = w.shape
    g3 = g.reshape(g.shape[0], o, -1)  # (N, O, Ho*Wo)
    gw = None
    if w.requires_grad:  # sum over images of dY_n @ cols_n^T, as one GEMM
        gw = np.tensordot(g3, cols, axes=([0, 2], [0, 2])).reshape(w.shape)  # (O, C, kh, kw)
    gx = None
    if x.requires_grad:
        gcols = w.data.reshape(o, -1).T @ g3  # (C*kh*kw, O) @ (N, O, L) -> (N, C*kh*kw, L)
        gx = col2im(gcols, x.shape, kh, kw, stride, pad)
    return (gx, gw) if len(node.parents) == 2 else (gx, gw, g3.sum(axis=(0, 2)))


def max_pool2d(x: Tensor, kernel_size: int, stride: int | None = None, padding: int = 0) -> Tensor:
    """Max over each kernel_size^2 window: (N, C, H, W) -> (N, C, Ho, Wo)."""
    k, s = kernel_size, stride or kernel_size
    win = _windows(x.data, k, k, s, padding, -np.inf)
    flat = win.reshape(*win.shape[:4], k * k)  # (N, C, Ho, Wo, k*k)
    arg = flat.argmax(axis=-1)
    out = np.take_along_axis(flat, arg[..., None], axis=-1)[..., 0]
    return make("max_pool2d", out, (x,), arg, k, s, padding)


@backward_rule("max_pool2d")
def max_pool2d_backward(node: Node, g: np.ndarray) -> Grads:
    arg, k, s, pad = node.saved
    onehot = arg[..., None] == np.arange(k * k)  # (N, C, Ho, Wo, k*k): where each max came from
    gwin = (g[..., None] * onehot).reshape(*g.shape, k, k).transpose(0, 1, 4, 5, 2, 3)
    return (_scatter_windows(gwin, node.parents[0].shape, s, pad),)  # gwin: (N, C, k, k, Ho, Wo)


def avg_pool2d(x: Tensor, kernel_size: int, stride: int | None = None, padding: int = 0) -> Tensor:
    """Mean over each window, zero padding counted (torch's count_include_pad=True)."""
    k, s = kernel_size, stride or kernel_size
    out = _windows(x.data, k, k, s, padding, 0.0).mean(axis=(-2, -1))
    return make("avg_pool2d", out.astype(x.dtype, copy=False), (x,), k, s, padding)


@backward_rule("avg_pool2d")
def avg_pool2d_backward(node: Node, g: np.ndarray) -> Grads:
    k, s, pad = node.saved
    n, c, ho, wo = g.shape
    share = np.broadcast_to((g / (k * k))[:, :, None, None], (n, c, k, k, ho, wo))
    return (_scatter_windows(share, node.parents[0].shape, s, pad),)
