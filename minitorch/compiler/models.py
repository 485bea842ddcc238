"""The small models the compiler labs capture: an MLP and a single-head-group attention block.

    fn, _ = mlp([8, 16, 4], seed=0)        # fn(x: Tensor (N, 8)) -> Tensor (N, 4)
    fn, _ = attention_block(d=16, heads=2)  # fn(x: Tensor (T, 16)) -> Tensor (T, 16)

Both are written with Tensor operators and methods only (softmax spelled out as max, sub,
exp, sum, div, exactly as ``minitorch.autograd.softmax`` computes it), so eager execution,
a trace and the torch twin in the graders all see the same primitive ops. The weights are
returned too (a dict of float32 arrays), for the twins.

Lab: 13_graph_capture_ir, 14_graph_passes_memory_planning
Paper: Vaswani et al. 2017, Attention Is All You Need
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import numpy as np

from minitorch.autograd import Tensor

__all__ = ["attention_block", "gelu_layernorm", "mlp", "transformer"]

Model = tuple[Callable[..., Tensor], dict[str, np.ndarray]]


def _weights(shapes: dict[str, tuple[int, ...]], seed: int) -> dict[str, np.ndarray]:
    g = np.random.default_rng(seed)
    return {k: (g.standard_normal(s) / np.sqrt(s[0])).astype(np.float32) for k, s in shapes.items()}


def mlp(sizes: Sequence[int], seed: int = 0, act: str = "relu") -> Model:
    """Linear layers ``x @ W + b`` with ``act`` between them (none after the last)."""
    shapes: dict[str, tuple[int, ...]] = {}
    for i, (a, b) in enumerate(itertools.pairwise(sizes)):
        shapes[f"w{i}"], shapes[f"b{i}"] = (a, b), (b,)
    params = _weights(shapes, seed)
    t = {k: Tensor(v) for k, v in params.items()}

    def forward(x: Tensor) -> Tensor:
        for i in range(len(sizes) - 1):
            x = x @ t[f"w{i}"] + t[f"b{i}"]
            if i < len(sizes) - 2:
                x = getattr(x, act)()
        return x

    return forward, params


def _attend(x: Tensor, t: dict[str, Tensor], p: str, heads: int) -> Tensor:
    """Multi-head softmax(q k^T / sqrt(dh)) v, projected by ``t[p + "wo"]`` (no residual)."""
    n, d = x.shape
    dh = d // heads
    q, k, v = ((x @ t[p + w]).reshape(n, heads, dh).transpose(0, 1) for w in ("wq", "wk", "wv"))
    s = q @ k.transpose(1, 2) * (1.0 / float(np.sqrt(dh)))
    e = (s - s.max(axis=-1, keepdims=True)).exp()
    att = e / e.sum(axis=-1, keepdims=True)
    return (att @ v).transpose(0, 1).reshape(n, d) @ t[p + "wo"]


def _gelu(h: Tensor) -> Tensor:
    return 0.5 * h * (1.0 + ((h + 0.044715 * h**3.0) * float(np.sqrt(2.0 / np.pi))).tanh())


def _layernorm(h: Tensor, gamma: Tensor, beta: Tensor, eps: float) -> Tensor:
    mu = h.mean(axis=-1, keepdims=True)
    var = ((h - mu) ** 2.0).mean(axis=-1, keepdims=True)
    return (h - mu) / (var + eps) ** 0.5 * gamma + beta


def attention_block(d: int = 16, heads: int = 2, seed: int = 0) -> Model:
    """``x + softmax(q k^T / sqrt(dh)) v Wo`` for x: (T, d), heads split by reshape."""
    params = _weights({"wq": (d, d), "wk": (d, d), "wv": (d, d), "wo": (d, d)}, seed)
    t = {k: Tensor(v) for k, v in params.items()}
    return (lambda x: x + _attend(x, t, "", heads)), params


def gelu_layernorm(d: int = 64, seed: int = 0, eps: float = 1e-5) -> Model:
    """``LayerNorm(GELU_tanh(x @ W + b))``, every step a primitive op (a fusion target)."""
    params = _weights({"w": (d, d), "b": (d,)}, seed)
    params["gamma"], params["beta"] = np.ones(d, np.float32), np.zeros(d, np.float32)
    t = {k: Tensor(v) for k, v in params.items()}
    return (lambda x: _layernorm(_gelu(x @ t["w"] + t["b"]), t["gamma"], t["beta"], eps)), params


def transformer(d: int = 64, heads: int = 4, layers: int = 2, seed: int = 0) -> Model:
    """The tiny GPT's body on primitives: ``layers`` pre-LayerNorm blocks
    ``x + attn(LN(x))``, ``x + W2 GELU(W1 LN(x) + b1) + b2`` (4x wide), then a final LN."""
    shapes: dict[str, tuple[int, ...]] = {}
    for i in range(layers):
        shapes.update({f"{i}{w}": (d, d) for w in ("wq", "wk", "wv", "wo")})
        shapes.update(
            {f"{i}w1": (d, 4 * d), f"{i}b1": (4 * d,), f"{i}w2": (4 * d, d), f"{i}b2": (d,)}
        )
    params = _weights(shapes, seed)
    for i in [*range(layers), "f"]:
        for k in ("1", "2") if i != "f" else ("",):
            params[f"{i}g{k}"] = (1 + 0.1 * np.arange(d) / d).astype(np.float32)
            params[f"{i}be{k}"] = (0.01 * np.arange(d) / d).astype(np.float32)
    t = {k: Tensor(v) for k, v in params.items()}

    def forward(x: Tensor) -> Tensor:
        for i in range(layers):
            x = x + _attend(_layernorm(x, t[f"{i}g1"], t[f"{i}be1"], 1e-5), t, str(i), heads)
            h = _layernorm(x, t[f"{i}g2"], t[f"{i}be2"], 1e-5)
            x = x + (_gelu(h @ t[f"{i}w1"] + t[f"{i}b1"]) @ t[f"{i}w2"] + t[f"{i}b2"])
        return _layernorm(x, t["fg"], t["fbe"], 1e-5)

    return forward, params
