"""Ground truth of lab 28's graders, written here as plain numpy loops (RMSNorm and the
attention of one query over the cache are the shared :mod:`a2s.checks.truths`).

* :func:`int8_rows`: every linear weight rounded to INT8 per output row (scale max|w| / 127);
* :func:`direct_generate`: greedy decoding of one request, one token at a time, with the
  model's weights read from its state dict and its K/V kept in lab 11's contiguous
  ``Int8KVCache`` (one scale per token and head): the "direct quantized generation" the served
  model must equal. Returns the tokens and the logits of each sampled token;
* :func:`no_cache_work`: passes and token positions of no-cache one-at-a-time decoding,
  counted token by token.

None of it calls ``minitorch.runtime``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from a2s.checks.truths import attention, rms_norm
from minitorch.model.gpt import GPT
from minitorch.model.quant_kv import Int8KVCache

__all__ = ["direct_generate", "int8_rows", "linear_names", "no_cache_work"]


def linear_names(model: GPT) -> list[str]:
    """The state-dict names of the model's linear weights (projections and MLPs)."""
    return [k for k in model.state_dict() if k.endswith("_proj.weight") or ".mlp.w" in k]


def int8_rows(w: np.ndarray) -> np.ndarray:
    """Symmetric INT8 round to nearest, one scale per output row, dequantized (float64)."""
    w = np.asarray(w, np.float64)
    scale = np.abs(w).max(axis=1, keepdims=True) / 127.0
    scale = np.where(scale > 0, scale, 1.0)
    return np.round(w / scale) * scale


def _rope(x: np.ndarray, pos: int, base: float) -> np.ndarray:
    d = x.shape[-1]
    angle = pos * base ** (-np.arange(0, d, 2) / d)
    c, s = np.cos(angle), np.sin(angle)
    out = np.empty_like(x)
    out[..., 0::2] = x[..., 0::2] * c - x[..., 1::2] * s
    out[..., 1::2] = x[..., 0::2] * s + x[..., 1::2] * c
    return out


def direct_generate(
    state: dict[str, Any], cfg: Any, prompt: list[int], n: int, int8_kv: bool = True
) -> tuple[list[int], np.ndarray]:
    """Greedy tokens (n) and their logits (n, V) of the model given by ``state`` and ``cfg``."""
    sd = {k: np.asarray(v, np.float64) for k, v in state.items()}
    heads, kv_heads, d, eps = cfg.n_head, cfg.n_kv_head, cfg.head_dim, cfg.norm_eps
    caches = [Int8KVCache(kv_heads, d, len(prompt) + n) for _ in range(cfg.n_layer)]
    plain_k: list[list[np.ndarray]] = [[] for _ in range(cfg.n_layer)]
    plain_v: list[list[np.ndarray]] = [[] for _ in range(cfg.n_layer)]
    tokens, rows = list(prompt), []

    for t in range(len(prompt) + n - 1):
        h = sd["tok_emb.weight"][tokens[t]]
        for layer in range(cfg.n_layer):
            p = f"blocks.{layer}."
            x = rms_norm(h, sd[p + "norm1.weight"], eps)
            q = _rope((sd[p + "attn.q_proj.weight"] @ x).reshape(heads, d), t, cfg.rope_base)
            k = _rope((sd[p + "attn.k_proj.weight"] @ x).reshape(kv_heads, d), t, cfg.rope_base)
            v = (sd[p + "attn.v_proj.weight"] @ x).reshape(kv_heads, d)
            if int8_kv:
                caches[layer].append(k.astype(np.float32), v.astype(np.float32))
                keys, values = caches[layer].keys(), caches[layer].values()
            else:
                plain_k[layer].append(k)
                plain_v[layer].append(v)
                keys, values = np.array(plain_k[layer]), np.array(plain_v[layer])
            # one query per head over the cache (L, H_kv, d): query head h reads K/V h // rep
            kh, vh = np.swapaxes(keys, 0, 1), np.swapaxes(values, 0, 1)
            y = attention(q[:, None], kh, vh, causal=False)[:, 0]
            h = h + sd[p + "attn.o_proj.weight"] @ y.reshape(-1)
            x = rms_norm(h, sd[p + "norm2.weight"], eps)
            a, b = sd[p + "mlp.w1.weight"] @ x, sd[p + "mlp.w3.weight"] @ x
            h = h + sd[p + "mlp.w2.weight"] @ (a / (1.0 + np.exp(-a)) * b)
        if t >= len(prompt) - 1:
            head = sd["tok_emb.weight"] if cfg.tie_head else sd["lm_head.weight"]
            logits = head @ rms_norm(h, sd["norm_f.weight"], eps)
            rows.append(logits)
            tokens.append(int(np.argmax(logits)))
    return tokens[len(prompt) :], np.array(rows)


def no_cache_work(prompts: list[int], outputs: list[int]) -> tuple[int, int]:
    """(passes, token positions): each output token is one pass over the whole prefix."""
    passes = tokens = 0
    for p, o in zip(prompts, outputs, strict=True):
        for i in range(o):
            passes += 1
            tokens += p + i
    return passes, tokens
