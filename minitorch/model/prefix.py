"""Prefix tuning: trainable key and value vectors prepended to every layer's attention.

Li & Liang (2021) freeze the whole pretrained model and learn, for every layer, P "virtual
tokens" that exist only as keys and values. A head's attention over T real tokens becomes

    K' = [PK; K]  (P + T, d),   V' = [PV; V]  (P + T, d)
    out = softmax(Q K'^T / sqrt(d) + M) V'            Q: (T, d) -> out: (T, d)

where M is 0 on the P prefix columns (every query sees the whole prefix) and the causal mask
on the T real columns (query i sees real keys j <= i). The prefix is not a token: it has no
position, so RoPE rotates only the real queries and keys (a learned prefix key is already "in
rotated space", as the keys of a KV cache are) and ALiBi adds no bias on its columns. With
GQA the prefix is per K/V head, ``n_kv_head`` heads of ``(P, head_dim)`` per layer, repeated to
the query heads as the real K/V are. Trainable: 2 n_layer n_kv_head P head_dim numbers; at
inference the prefix sits in the KV cache of every sequence, ``itemsize`` bytes per number,
where a merged LoRA adds nothing. The paper's MLP reparameterisation of the prefix (for
stable training of large models) is left out: the tiny GPT trains the prefix directly.

Gradients (one head, A = softmax(S), S = Q K'^T / sqrt(d) + M, upstream G = dL/dout):

    dV' = A^T G,  dS = A * (G V'^T - rowsum(A * G V'^T)),  dK' = dS^T Q / sqrt(d)
    dPK, dPV = the first P rows of dK', dV'

Lab: 12_lora_peft
Paper: Li & Liang 2021, "Prefix-Tuning: Optimizing Continuous Prompts for Generation" (ACL)
"""

from __future__ import annotations

import math

import numpy as np

from minitorch.autograd import Tensor, concat
from minitorch.model.attention import CausalSelfAttention, causal_mask, repeat_kv
from minitorch.model.attention import scaled_dot_product_attention as sdpa
from minitorch.model.positions import alibi_bias, apply_rope, rope_tables
from minitorch.nn import Module, Parameter

__all__ = [
    "PrefixSelfAttention",
    "apply_prefix",
    "prefix_attention_backward",
    "prefix_attention_forward",
    "prefix_mask",
    "prefix_parameter_count",
]


def prefix_mask(n_prefix: int, t_q: int, t: int, dtype: type = np.float64) -> np.ndarray:
    """(t_q, P + t) additive mask: 0 on the prefix, causal on the real keys (the queries are
    the last t_q of the t real positions)."""
    return np.concatenate(
        [np.zeros((t_q, n_prefix), dtype), causal_mask(t, dtype)[t - t_q :]], axis=1
    )


def _probs(q, k, pk):  # (..., Tq, P + T) attention weights
    n_prefix, t_q, t = pk.shape[-2], q.shape[-2], k.shape[-2]
    s = q @ np.concatenate([pk, k], axis=-2).swapaxes(-1, -2) / math.sqrt(q.shape[-1])
    s = s + prefix_mask(n_prefix, t_q, t, s.dtype)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def prefix_attention_forward(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, pk: np.ndarray, pv: np.ndarray
) -> np.ndarray:
    """softmax(Q [PK; K]^T / sqrt(d) + M) [PV; V]; q: (..., Tq, d), k, v: (..., T, d),
    pk, pv: (..., P, d) -> (..., Tq, d)."""
    return _probs(q, k, pk) @ np.concatenate([pv, v], axis=-2)


def prefix_attention_backward(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    pk: np.ndarray,
    pv: np.ndarray,
    gout: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """(dPK, dPV) of :func:`prefix_attention_forward` for the upstream gradient gout."""
    n_prefix = pk.shape[-2]
    a = _probs(q, k, pk)  # (..., Tq, P + T)
    vv = np.concatenate([pv, v], axis=-2)
    da = gout @ vv.swapaxes(-1, -2)
    ds = a * (da - (da * a).sum(axis=-1, keepdims=True))
    dk = ds.swapaxes(-1, -2) @ q / math.sqrt(q.shape[-1])
    dv = a.swapaxes(-1, -2) @ gout
    return dk[..., :n_prefix, :], dv[..., :n_prefix, :]


class PrefixSelfAttention(Module):
    """A frozen :class:`CausalSelfAttention` with P trainable prefix keys and values per
    K/V head; ``enabled = False`` (or P = 0) runs the base exactly."""

    def __init__(
        self, base: CausalSelfAttention, n_prefix: int, rng: np.random.Generator, std: float
    ) -> None:
        super().__init__()
        self.base = base
        for p in base.parameters():
            p.requires_grad = False
        cfg = base.config
        shape = (cfg.n_kv_head, n_prefix, cfg.head_dim)
        dtype = base.q_proj.weight.dtype.type
        self.prefix_k = Parameter((rng.standard_normal(shape) * std).astype(dtype))
        self.prefix_v = Parameter((rng.standard_normal(shape) * std).astype(dtype))
        self.n_prefix, self.enabled = n_prefix, True

    def forward(self, x: Tensor) -> Tensor:
        if not self.enabled or self.n_prefix == 0:
            return self.base(x)
        base, cfg = self.base, self.base.config
        b, t, _ = x.shape
        hd, p = cfg.head_dim, self.n_prefix
        q = base.q_proj(x).reshape(b, t, cfg.n_head, hd).transpose(1, 2)  # (B, H, T, hd)
        k = base.k_proj(x).reshape(b, t, cfg.n_kv_head, hd).transpose(1, 2)  # (B, Hkv, T, hd)
        v = base.v_proj(x).reshape(b, t, cfg.n_kv_head, hd).transpose(1, 2)
        mask = prefix_mask(p, t, t)  # (T, P + T)
        if cfg.pos == "rope":  # the real tokens only: the prefix has no position
            cos, sin = rope_tables(t, hd, cfg.rope_base, np.float64)
            q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
            bias = mask
        else:  # ALiBi: no distance penalty on the prefix columns
            bias = mask + np.pad(alibi_bias(cfg.n_head, t, np.float64), ((0, 0), (0, 0), (p, 0)))
        rows = np.zeros(b, dtype=np.int64)  # one prefix for every sequence of the batch
        k = concat([self.prefix_k[None][rows], k], axis=2)  # (B, Hkv, P + T, hd)
        v = concat([self.prefix_v[None][rows], v], axis=2)
        k, v = repeat_kv(k, cfg.n_rep), repeat_kv(v, cfg.n_rep)
        y = sdpa(q, k, v, bias=bias, causal=False)  # (B, H, T, hd)
        return base.o_proj(y.transpose(1, 2).reshape(b, t, cfg.n_head * hd))


def apply_prefix(
    model: Module, n_prefix: int, *, rng: np.random.Generator, std: float = 0.02
) -> Module:
    """Freeze every parameter of ``model``; give each block's attention a trainable prefix of
    ``n_prefix`` keys and values per K/V head, drawn N(0, std^2)."""
    for p in model.parameters():
        p.requires_grad = False
    for _, parent in list(model.named_modules()):
        for key, child in list(parent._modules.items()):
            if isinstance(child, CausalSelfAttention):
                child = PrefixSelfAttention(child, n_prefix, rng, std)
            setattr(parent, key, child)  # every child, in order: assignment moves a key last
    return model


def prefix_parameter_count(n_layers: int, n_kv_heads: int, head_dim: int, n_prefix: int) -> int:
    """Trainable numbers of prefix tuning: a key and a value of head_dim per K/V head, per
    prefix position, per layer."""
    return 2 * n_layers * n_kv_heads * n_prefix * head_dim
