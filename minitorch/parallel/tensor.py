"""Tensor parallelism, Megatron style: column/row-parallel layers, the f/g operators, attention
sharded by heads, a vocabulary-parallel embedding and cross-entropy, in numpy per rank.

Activations are ``(s, b, h)`` (sequence, batch, hidden), replicated on the ``t`` ranks of the
tensor-parallel group. A weight ``w`` of shape ``(h_in, h_out)`` is *column-parallel* when rank
r holds ``w[:, r-th slice]`` (its output is a slice of the features, no communication) and
*row-parallel* when it holds ``w[r-th slice, :]`` (its output is a partial sum, which must be
all-reduced). The MLP is column then row: one all-reduce forward. Two conjugate operators mark
the region (Shoeybi et al. 2019, Fig. 3): ``f`` is the identity forward and an all-reduce
backward (every rank's ``dx`` is partial); ``g`` is an all-reduce forward and the identity
backward. Attention is the same with heads for columns: 1 all-reduce forward and 1 backward
per block, so 2 + 2 per transformer layer.

Every function is one rank's part; ``comm`` is any Communicator (SimWorld or gloo).
Gradients of sharded weights are shards; gradients of replicated biases are whole.

Lab: 24_tensor_sequence_parallel
Paper: M. Shoeybi et al., "Megatron-LM: Training Multi-Billion Parameter Language Models
Using Model Parallelism" (2019).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from minitorch.comm.collectives import all_gather, all_reduce
from minitorch.comm.protocol import Communicator

__all__ = [
    "all_reduce_max",
    "attention_partial",
    "attention_partial_backward",
    "f_backward",
    "f_forward",
    "g_backward",
    "g_forward",
    "gelu",
    "gelu_grad",
    "mlp_partial",
    "mlp_partial_backward",
    "shard",
    "tp_attention_backward",
    "tp_attention_forward",
    "tp_mlp_backward",
    "tp_mlp_forward",
    "vocab_embedding_backward",
    "vocab_embedding_forward",
    "vocab_parallel_cross_entropy",
]

Cache = dict[str, Any]


def shard(w: np.ndarray, t: int, r: int, axis: int) -> np.ndarray:
    """Rank ``r``'s equal slice of ``w`` along ``axis`` (its size must divide by ``t``)."""
    if w.shape[axis] % t:
        raise ValueError(f"axis {axis} of size {w.shape[axis]} does not divide by t={t}")
    return np.split(w, t, axis=axis)[r].copy()


def gelu(z: np.ndarray) -> np.ndarray:
    """GELU, tanh approximation (GPT-2's)."""
    return 0.5 * z * (1.0 + np.tanh(0.7978845608028654 * (z + 0.044715 * z**3)))


def gelu_grad(z: np.ndarray) -> np.ndarray:
    """d gelu(z) / dz."""
    u = 0.7978845608028654 * (z + 0.044715 * z**3)
    th = np.tanh(u)
    return 0.5 * (1 + th) + 0.5 * z * (1 - th**2) * 0.7978845608028654 * (1 + 0.134145 * z**2)


# ------------------------------------------------------------------ the conjugate operators
def f_forward(comm: Communicator, x: np.ndarray) -> np.ndarray:
    """Enter the tensor-parallel region: identity (x is already on every rank)."""
    return x


def f_backward(comm: Communicator, dx: np.ndarray) -> np.ndarray:
    """Each rank's ``dx`` is a partial sum over its columns: all-reduce it."""
    return all_reduce(comm, dx)


def g_forward(comm: Communicator, y: np.ndarray) -> np.ndarray:
    """Leave the region: the row-parallel outputs are partial sums: all-reduce them."""
    return all_reduce(comm, y)


def g_backward(comm: Communicator, dy: np.ndarray) -> np.ndarray:
    """The gradient of a replicated output is already on every rank: identity."""
    return dy


def _rows(a: np.ndarray) -> np.ndarray:
    return a.reshape(-1, a.shape[-1])


# ------------------------------------------------------------------ MLP: column then row
def mlp_partial(x: np.ndarray, w1: np.ndarray, b1: np.ndarray, w2: np.ndarray) -> tuple:
    """This rank's partial MLP output ``gelu(x w1 + b1) w2`` and ``(z, a)`` for backward."""
    z = x @ w1 + b1  # column-parallel: (s, b, 4h/t), no communication
    a = gelu(z)
    return a @ w2, z, a  # row-parallel: a partial sum of the output


def mlp_partial_backward(
    x: np.ndarray, z: np.ndarray, a: np.ndarray, w1: np.ndarray, w2: np.ndarray, dy: np.ndarray
) -> tuple:
    """``(dx_partial, dw1, db1, dw2)`` of :func:`mlp_partial` given the output gradient."""
    dw2 = _rows(a).T @ _rows(dy)
    dz = (dy @ w2.T) * gelu_grad(z)
    dw1, db1 = _rows(x).T @ _rows(dz), _rows(dz).sum(axis=0)
    return dz @ w1.T, dw1, db1, dw2


def tp_mlp_forward(
    comm: Communicator,
    x: np.ndarray,
    w1: np.ndarray,
    b1: np.ndarray,
    w2: np.ndarray,
    b2: np.ndarray,
) -> np.ndarray:
    """``gelu(x W1 + b1) W2 + b2`` with W1 column- and W2 row-sharded: one all-reduce."""
    partial, _, _ = mlp_partial(f_forward(comm, x), w1, b1, w2)
    return g_forward(comm, partial) + b2  # the bias once, after the sum


def tp_mlp_backward(
    comm: Communicator,
    x: np.ndarray,
    w1: np.ndarray,
    b1: np.ndarray,
    w2: np.ndarray,
    dy: np.ndarray,
) -> tuple:
    """``(dx, dw1, db1, dw2, db2)``: shard gradients, ``dx`` all-reduced (f's backward)."""
    z = x @ w1 + b1
    dx, dw1, db1, dw2 = mlp_partial_backward(x, z, gelu(z), w1, w2, g_backward(comm, dy))
    return f_backward(comm, dx), dw1, db1, dw2, _rows(dy).sum(axis=0)


# ------------------------------------------------------------------ attention, by heads
def attention_partial(
    x: np.ndarray,
    wq: np.ndarray,
    wk: np.ndarray,
    wv: np.ndarray,
    wo: np.ndarray,
    heads: int,
    keep: np.ndarray | None = None,
    rate: float = 0.0,
) -> tuple[np.ndarray, Cache]:
    """Causal attention over this rank's ``heads`` heads; the output projection's partial sum.

    ``keep`` (b, heads, s, s) is the dropout mask of the attention probabilities (scaled by
    ``1 / (1 - rate)``). The cache holds what backward needs (Korthikanti et al.'s list).
    """
    s, b, _ = x.shape
    d = wq.shape[1] // heads
    q, k, v = ((x @ w).reshape(s, b, heads, d) for w in (wq, wk, wv))
    scores = np.einsum("sbnd,tbnd->bnst", q, k) / np.sqrt(d)
    scores = np.where(np.tril(np.ones((s, s), bool)), scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    prob = e / e.sum(axis=-1, keepdims=True)
    dropped = prob if keep is None else prob * keep / (1.0 - rate)
    ctx = np.einsum("bnst,tbnd->sbnd", dropped, v).reshape(s, b, heads * d)
    cache = {"x": x, "q": q, "k": k, "v": v, "prob": prob, "dropped": dropped, "ctx": ctx}
    if keep is not None:
        cache["keep"] = keep
    return ctx @ wo, cache


def attention_partial_backward(
    cache: Cache,
    wq: np.ndarray,
    wk: np.ndarray,
    wv: np.ndarray,
    wo: np.ndarray,
    dout: np.ndarray,
    rate: float = 0.0,
) -> tuple:
    """``(dx_partial, dwq, dwk, dwv, dwo)`` of :func:`attention_partial`."""
    x, q, k, v, prob = cache["x"], cache["q"], cache["k"], cache["v"], cache["prob"]
    s, b, heads, d = q.shape
    dwo = _rows(cache["ctx"]).T @ _rows(dout)
    dctx = (dout @ wo.T).reshape(s, b, heads, d)
    dv = np.einsum("bnst,sbnd->tbnd", cache["dropped"], dctx)
    dprob = np.einsum("sbnd,tbnd->bnst", dctx, v)
    if "keep" in cache:
        dprob = dprob * cache["keep"] / (1.0 - rate)
    ds = prob * (dprob - (dprob * prob).sum(axis=-1, keepdims=True)) / np.sqrt(d)
    dq = np.einsum("bnst,tbnd->sbnd", ds, k).reshape(s, b, -1)
    dk = np.einsum("bnst,sbnd->tbnd", ds, q).reshape(s, b, -1)
    dv = dv.reshape(s, b, -1)
    dx = dq @ wq.T + dk @ wk.T + dv @ wv.T
    xr = _rows(x)
    return dx, xr.T @ _rows(dq), xr.T @ _rows(dk), xr.T @ _rows(dv), dwo


def tp_attention_forward(
    comm: Communicator,
    x: np.ndarray,
    wq: np.ndarray,
    wk: np.ndarray,
    wv: np.ndarray,
    wo: np.ndarray,
    bo: np.ndarray,
    heads: int,
) -> np.ndarray:
    """Head-parallel causal self-attention: Q, K, V column-, W_o row-sharded; one all-reduce."""
    partial, _ = attention_partial(f_forward(comm, x), wq, wk, wv, wo, heads)
    return g_forward(comm, partial) + bo


def tp_attention_backward(
    comm: Communicator,
    x: np.ndarray,
    wq: np.ndarray,
    wk: np.ndarray,
    wv: np.ndarray,
    wo: np.ndarray,
    heads: int,
    dy: np.ndarray,
) -> tuple:
    """``(dx, dwq, dwk, dwv, dwo, dbo)``, recomputing the forward; ``dx`` all-reduced."""
    _, cache = attention_partial(x, wq, wk, wv, wo, heads)
    dx, *grads = attention_partial_backward(cache, wq, wk, wv, wo, g_backward(comm, dy))
    return (f_backward(comm, dx), *grads, _rows(dy).sum(axis=0))


# ------------------------------------------------------------------ the vocabulary, sharded
def vocab_embedding_forward(
    comm: Communicator, ids: np.ndarray, table: np.ndarray, start: int
) -> np.ndarray:
    """Look up ``ids`` in a table whose rows ``start .. start + V/t`` this rank holds.

    Ids outside the shard give zeros; the all-reduce fills in every row from its owner.
    """
    local = ids - start
    mine = (local >= 0) & (local < table.shape[0])
    out = table[np.where(mine, local, 0)] * mine[..., None]
    return all_reduce(comm, out)


def vocab_embedding_backward(
    ids: np.ndarray, shape: tuple[int, ...], start: int, dout: np.ndarray
) -> np.ndarray:
    """Gradient of this rank's table shard: scatter-add of the rows it owns (no communication)."""
    local = ids - start
    mine = (local >= 0) & (local < shape[0])
    grad = np.zeros(shape)
    np.add.at(grad, local[mine], dout[mine])
    return grad


def all_reduce_max(comm: Communicator, x: np.ndarray) -> np.ndarray:
    """Element-wise maximum over ranks (all-gather of ``x``, then max): ``(t-1) |x|`` per rank."""
    return all_gather(comm, x[None]).max(axis=0)


def vocab_parallel_cross_entropy(
    comm: Communicator, logits: np.ndarray, targets: np.ndarray, start: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per-token loss and this shard's gradient of the mean loss, logits never gathered.

    ``logits`` is ``(n, V/t)``, the columns ``start ..`` of the full ``(n, V)``. Three
    collectives of ``n`` values each: the max (for stability), the sum of exponentials and
    the target's logit (held by one rank). Gathering the logits would move ``n V`` values.
    """
    n, v = logits.shape
    m = all_reduce_max(comm, logits.max(axis=1))
    e = np.exp(logits - m[:, None])
    total = all_reduce(comm, e.sum(axis=1))
    local = targets - start
    mine = (local >= 0) & (local < v)
    rows = np.arange(n)
    picked = np.where(mine, logits[rows, np.where(mine, local, 0)], 0.0)
    target_logit = all_reduce(comm, picked)
    loss = np.log(total) + m - target_logit
    grad = e / total[:, None]
    grad[rows[mine], local[mine]] -= 1.0
    return loss, grad / n
