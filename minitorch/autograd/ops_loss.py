"""Softmax, log-softmax, the fused cross-entropy, and seeded dropout.

    softmax      p = exp(x - max x) / sum exp(x - max x)      dL/dx = p * (g - sum(g * p))
    log_softmax  y = x - logsumexp(x)                         dL/dx = g - p * sum(g)
    cross_entropy  L = -mean_i log p[i, t_i]                  dL/dx = (p - onehot(t)) / N
    dropout      y = x * mask / (1 - p)                       dL/dx = g * mask / (1 - p)

Subtracting the row maximum changes nothing mathematically and keeps exp from overflowing.
Fusing log-softmax with the negative log-likelihood gives the famous (p - onehot) gradient
without ever forming log(0).

Lab: 03_autograd_tensor
"""

from __future__ import annotations

import numpy as np

from minitorch.autograd.engine import Node, backward_rule
from minitorch.autograd.tensor import Tensor, make

__all__ = ["cross_entropy", "dropout", "log_softmax", "softmax"]

Grads = tuple[np.ndarray | None, ...]


def _log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def softmax(x: Tensor, axis: int = -1) -> Tensor:
    e = np.exp(x.data - x.data.max(axis=axis, keepdims=True))
    out = e / e.sum(axis=axis, keepdims=True)
    return make("softmax", out, (x,), out, axis)


@backward_rule("softmax")
def softmax_backward(node: Node, g: np.ndarray) -> Grads:
    p, axis = node.saved
    return (p * (g - (g * p).sum(axis=axis, keepdims=True)),)


def log_softmax(x: Tensor, axis: int = -1) -> Tensor:
    out = _log_softmax(x.data, axis)
    return make("log_softmax", out, (x,), out, axis)


@backward_rule("log_softmax")
def log_softmax_backward(node: Node, g: np.ndarray) -> Grads:
    out, axis = node.saved
    return (g - np.exp(out) * g.sum(axis=axis, keepdims=True),)


def cross_entropy(logits: Tensor, target: np.ndarray | Tensor, reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of integer classes: logits (..., C), target (...) int.

    ``reduction`` is "mean" (over all positions), "sum" or "none" (shape of target).
    """
    t = np.asarray(target.data if isinstance(target, Tensor) else target)
    c = logits.shape[-1]
    logp = _log_softmax(logits.data.reshape(-1, c), axis=1)  # (N, C), N = all leading axes
    rows = np.arange(logp.shape[0])
    nll = -logp[rows, t.reshape(-1)]  # (N,)
    if reduction == "mean":
        out = np.asarray(nll.mean() if nll.size else np.nan, dtype=logits.dtype)
    elif reduction == "sum":
        out = np.asarray(nll.sum(), dtype=logits.dtype)
    elif reduction == "none":
        out = nll.reshape(t.shape)  # (N,) -> target's shape (...)
    else:
        raise ValueError(f"reduction must be 'mean', 'sum' or 'none', not {reduction!r}")
    return make("cross_entropy", out, (logits,), logp, t.reshape(-1), reduction)


@backward_rule("cross_entropy")
def cross_entropy_backward(node: Node, g: np.ndarray) -> Grads:
    logp, t, reduction = node.saved
    grad = np.exp(logp)  # p, (N, C)
    grad[np.arange(len(t)), t] -= 1  # p - onehot(t)
    if reduction == "none":
        grad *= g.reshape(-1, 1)  # (...) -> (N, 1): one weight per row
    else:
        grad *= g / len(t) if reduction == "mean" else g
    return (grad.reshape(node.parents[0].shape),)  # (N, C) -> (..., C)


def dropout(x: Tensor, p: float, seed: int, training: bool = True) -> Tensor:
    """Zero each element with probability p, scale survivors by 1/(1-p) (inverted dropout).

    The mask is a function of ``seed`` alone, so a recomputed forward draws the same mask.
    """
    if not training or p == 0.0:
        return x
    if p >= 1.0:
        return make("dropout", np.zeros_like(x.data), (x,), np.zeros_like(x.data))
    keep = np.random.default_rng(seed).random(x.shape) >= p
    scale = (keep / (1.0 - p)).astype(x.dtype)  # 0 or 1/(1-p)
    return make("dropout", x.data * scale, (x,), scale)


@backward_rule("dropout")
def dropout_backward(node: Node, g: np.ndarray) -> Grads:
    (scale,) = node.saved
    return (g * scale,)
