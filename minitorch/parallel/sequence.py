"""Sequence parallelism: a whole transformer layer under TP, TP + SP and full recomputation,
with the activations each rank keeps for backward counted against Korthikanti et al.

A pre-LayerNorm GPT layer (attention block, MLP block, dropout after each, residuals) runs on
one rank of a ``t``-way group. In ``"tp"`` mode the input ``(s, b, h)`` is replicated: each
block enters through ``f`` (identity) and leaves through ``g`` (all-reduce), so LayerNorm,
dropout and the residuals are computed -- and stored -- ``t`` times over. In ``"sp"`` mode
the input is split along the sequence: LayerNorm, dropout and the residuals run on ``s/t``
rows; a block enters through an all-gather (backward: reduce-scatter) and leaves through a
reduce-scatter (backward: all-gather). An all-reduce *is* a reduce-scatter then an
all-gather, so SP moves the same bytes as TP and stores everything ``1/t`` times. In
``"recompute"`` mode only the layer's input is kept and backward runs the forward again.

Stored bytes follow the paper's accounting (16-bit activations: 2 bytes per element, dropout
masks 1 byte): :func:`activation_bytes` of a cache equals :func:`korthikanti_bytes`
exactly, ``sbh(34 + 5as/h)`` at t = 1, ``sbh(10 + 24/t + 5as/(ht))`` with TP,
``sbh(34/t + 5as/(ht))`` with TP + SP and ``2sbh`` with full recomputation.
In ``"sp"`` mode the gradients of replicated parameters (LayerNorms, ``bo``, ``b2``) are
partial sums over the rank's rows: Megatron all-reduces them over the group.

Lab: 24_tensor_sequence_parallel
Paper: V. Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
Models" (2022), sections 4.1-4.2.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from minitorch.comm.collectives import all_gather, all_reduce, chunk_bounds, reduce_scatter
from minitorch.comm.protocol import Communicator
from minitorch.parallel.tensor import (
    attention_partial,
    attention_partial_backward,
    mlp_partial,
    mlp_partial_backward,
    shard,
)

__all__ = [
    "MODES",
    "activation_bytes",
    "dropout_masks",
    "init_layer",
    "korthikanti_bytes",
    "layer_backward",
    "layer_forward",
    "layer_norm",
    "layer_norm_backward",
    "rank_masks",
    "shard_layer",
    "sp_mlp_forward",
]

MODES = ("tp", "sp", "recompute")
Params = dict[str, np.ndarray]
_COLUMN, _ROW = ("wq", "wk", "wv", "w1", "b1"), ("wo", "w2")


def korthikanti_bytes(s: int, b: int, h: int, a: int, t: int, mode: str) -> float:
    """Activation bytes per layer per rank (Korthikanti et al. 2022, Table 2)."""
    sbh, att = s * b * h, 5 * a * s / h
    formulas = {
        "none": sbh * (34 + att),
        "tp": sbh * (10 + 24 / t + att / t),
        "sp": sbh * (34 / t + att / t),
        "recompute": 2.0 * sbh,
    }
    return formulas[mode]


def activation_bytes(cache: Any) -> int:
    """Bytes of every array in ``cache`` as the paper counts them: 2 per value, 1 per mask bit."""
    if isinstance(cache, dict):
        return sum(activation_bytes(v) for v in cache.values())
    if isinstance(cache, np.ndarray):
        return cache.size * (1 if cache.dtype == bool else 2)
    return 0


def init_layer(h: int, seed: int = 0) -> Params:
    """Full (unsharded) float64 parameters of one layer, hidden ``h``, MLP width ``4h``."""
    gen = np.random.default_rng(seed)
    p = {n: gen.standard_normal((h, h)) / np.sqrt(h) for n in ("wq", "wk", "wv", "wo")}
    p["w1"] = gen.standard_normal((h, 4 * h)) / np.sqrt(h)
    p["w2"] = gen.standard_normal((4 * h, h)) / np.sqrt(4 * h)
    for n, size in (("bo", h), ("b1", 4 * h), ("b2", h), ("ln1_b", h), ("ln2_b", h)):
        p[n] = 0.1 * gen.standard_normal(size)
    p["ln1_g"], p["ln2_g"] = 1 + 0.1 * gen.standard_normal((2, h))
    return p


def shard_layer(params: Params, t: int, r: int) -> Params:
    """Rank ``r``'s parameters: Q/K/V/W1/b1 by columns, W_o/W2 by rows, the rest replicated."""
    out = {n: v.copy() for n, v in params.items()}
    for n in _COLUMN:
        out[n] = shard(params[n], t, r, axis=params[n].ndim - 1)
    for n in _ROW:
        out[n] = shard(params[n], t, r, axis=0)
    return out


def dropout_masks(s: int, b: int, h: int, a: int, rate: float, seed: int = 1) -> dict:
    """Full keep-masks: attention probabilities ``(b, a, s, s)`` and the two block outputs."""
    gen = np.random.default_rng(seed)
    keep = {"attn": gen.random((b, a, s, s)) >= rate}
    for n in ("out1", "out2"):
        keep[n] = gen.random((s, b, h)) >= rate
    return keep


def rank_masks(masks: dict, t: int, r: int, mode: str) -> dict:
    """Rank ``r``'s masks: its heads of the attention mask; its rows of the others under SP."""
    out = {"attn": shard(masks["attn"], t, r, axis=1)}
    lo, hi = chunk_bounds(masks["out1"].shape[0], t)[r] if mode == "sp" else (0, None)
    for n in ("out1", "out2"):
        out[n] = masks[n][lo:hi].copy()
    return out


def layer_norm(x: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    """LayerNorm over the last axis."""
    mu = x.mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(x.var(axis=-1, keepdims=True) + eps) * g + b


def layer_norm_backward(x: np.ndarray, g: np.ndarray, dy: np.ndarray, eps: float = 1e-5) -> tuple:
    """``(dx, dg, db)`` of :func:`layer_norm`, from its input (mean and variance recomputed)."""
    rstd = 1 / np.sqrt(x.var(axis=-1, keepdims=True) + eps)
    xh = (x - x.mean(axis=-1, keepdims=True)) * rstd
    dxh = dy * g
    dx = rstd * (dxh - dxh.mean(-1, keepdims=True) - xh * (dxh * xh).mean(-1, keepdims=True))
    return dx, (dy * xh).reshape(-1, x.shape[-1]).sum(0), dy.reshape(-1, x.shape[-1]).sum(0)


def _enter(comm: Communicator, x: np.ndarray, mode: str) -> np.ndarray:
    return all_gather(comm, x) if mode == "sp" else x  # TP: f, the identity


def _leave(comm: Communicator, y: np.ndarray, mode: str) -> np.ndarray:
    return reduce_scatter(comm, y) if mode == "sp" else all_reduce(comm, y)  # TP: g


def _enter_backward(comm: Communicator, dx: np.ndarray, mode: str) -> np.ndarray:
    return reduce_scatter(comm, dx) if mode == "sp" else all_reduce(comm, dx)


def _leave_backward(comm: Communicator, dy: np.ndarray, mode: str) -> np.ndarray:
    return all_gather(comm, dy) if mode == "sp" else dy


def sp_mlp_forward(
    comm: Communicator,
    x: np.ndarray,
    ln_g: np.ndarray,
    ln_b: np.ndarray,
    w1: np.ndarray,
    b1: np.ndarray,
    w2: np.ndarray,
    b2: np.ndarray,
) -> tuple[np.ndarray, dict]:
    """The MLP block under SP on this rank's ``s/t`` rows: ``x + MLP(LN(x))`` and what backward
    keeps (the LayerNorm output as a shard: backward all-gathers it again)."""
    ln = layer_norm(x, ln_g, ln_b)
    part, z, a = mlp_partial(all_gather(comm, ln), w1, b1, w2)
    return x + reduce_scatter(comm, part) + b2, {"x": x, "ln": ln, "z": z, "a": a}


def layer_forward(
    comm: Communicator, x: np.ndarray, p: Params, masks: dict, heads: int, rate: float, mode: str
) -> tuple[np.ndarray, dict]:
    """One layer on one rank: ``x`` is ``(s, b, h)`` (``"tp"``, ``"recompute"``) or this
    rank's ``s/t`` rows (``"sp"``); ``p`` and ``masks`` from :func:`shard_layer` and
    :func:`rank_masks`, ``heads`` this rank's heads. Returns the output and the cache."""
    if mode == "recompute":
        y, _ = layer_forward(comm, x, p, masks, heads, rate, "tp")
        return y, {"x": x}
    scale = 1.0 / (1.0 - rate)
    c: dict[str, Any] = {"x": x, "ln1": layer_norm(x, p["ln1_g"], p["ln1_b"])}
    u = _enter(comm, c["ln1"], mode)
    part, c["attn"] = attention_partial(
        u, p["wq"], p["wk"], p["wv"], p["wo"], heads, masks["attn"], rate
    )
    del c["attn"]["x"]  # that is ln1 (gathered again in backward under SP)
    c["m1"] = masks["out1"]
    c["h1"] = x + (_leave(comm, part, mode) + p["bo"]) * c["m1"] * scale
    c["ln2"] = layer_norm(c["h1"], p["ln2_g"], p["ln2_b"])
    part, c["z"], c["a"] = mlp_partial(_enter(comm, c["ln2"], mode), p["w1"], p["b1"], p["w2"])
    c["m2"] = masks["out2"]
    return c["h1"] + (_leave(comm, part, mode) + p["b2"]) * c["m2"] * scale, c


def layer_backward(
    comm: Communicator,
    cache: dict,
    p: Params,
    masks: dict,
    heads: int,
    rate: float,
    mode: str,
    dy: np.ndarray,
) -> tuple[np.ndarray, Params]:
    """``(dx, grads)`` of :func:`layer_forward`; grads keyed like ``p`` (shards for sharded
    weights). Under ``"recompute"`` the forward runs again first (2 more all-reduces)."""
    if mode == "recompute":
        _, cache = layer_forward(comm, cache["x"], p, masks, heads, rate, "tp")
        mode = "tp"
    c, scale, g = cache, 1.0 / (1.0 - rate), {}
    do2 = dy * c["m2"] * scale
    g["b2"] = do2.reshape(-1, do2.shape[-1]).sum(0)
    u2 = _enter(comm, c["ln2"], mode)  # SP: the extra all-gather that saves storing it
    du2, g["w1"], g["b1"], g["w2"] = mlp_partial_backward(
        u2, c["z"], c["a"], p["w1"], p["w2"], _leave_backward(comm, do2, mode)
    )
    dh, g["ln2_g"], g["ln2_b"] = layer_norm_backward(
        c["h1"], p["ln2_g"], _enter_backward(comm, du2, mode)
    )
    dh = dy + dh
    do1 = dh * c["m1"] * scale
    g["bo"] = do1.reshape(-1, do1.shape[-1]).sum(0)
    attn = dict(c["attn"], x=_enter(comm, c["ln1"], mode))
    du1, g["wq"], g["wk"], g["wv"], g["wo"] = attention_partial_backward(
        attn, p["wq"], p["wk"], p["wv"], p["wo"], _leave_backward(comm, do1, mode), rate
    )
    dx, g["ln1_g"], g["ln1_b"] = layer_norm_backward(
        c["x"], p["ln1_g"], _enter_backward(comm, du1, mode)
    )
    return dh + dx, g
