"""The tiny GPT's forward pass over a paged KV cache, reusing the model's own modules.

One call runs a *flattened batch*: any mix of prompt chunks (prefill) and single decode
tokens from different sequences, as vLLM does. Every token goes through the embedding, the
norms, the projections and the MLPs together (one matmul per weight); attention alone runs
per sequence, each writing its new K/V at its slots and reading its whole context through
its block table (:func:`~minitorch.runtime.paged_attention.paged_attention`). Positions are
absolute, so RoPE rotates each token at its own position and ALiBi biases by distance.

    runner = PagedGPT(load_pretrained(), cache)
    logits = runner.forward([Chunk(tokens=[3, 7, 8], start=0, block_table=[4, 9])])  # (1, V)

Greedy decoding with it gives exactly the tokens of ``model.generate`` (which recomputes
the whole window every step) as long as a sequence stays within ``block_size`` positions.

Lab: 18_paged_kv_cache
Paper: Kwon et al., vLLM, SOSP 2023; Pope et al., "Efficiently Scaling Transformer
Inference", MLSys 2023 (the KV cache)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from minitorch.autograd import Tensor, no_grad
from minitorch.model.blocks import Block
from minitorch.model.gpt import GPT
from minitorch.model.positions import alibi_slopes, rope_tables
from minitorch.runtime.paged_attention import PagedKVCache, paged_attention, slot_mapping

__all__ = ["Chunk", "PagedGPT"]


@dataclass(slots=True)
class Chunk:
    """Tokens of one sequence at positions start .. start + len(tokens) - 1."""

    tokens: Sequence[int]
    start: int
    block_table: Sequence[int]


def _rope(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """Rotate pairs of x (N, H, d) by per-token tables (N, d/2)."""
    x0, x1 = x[..., 0::2], x[..., 1::2]
    c, s = cos[:, None, :], sin[:, None, :]
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = x0 * c - x1 * s, x0 * s + x1 * c
    return out


class PagedGPT:
    """Runs a :class:`~minitorch.model.gpt.GPT` with its K/V in a :class:`PagedKVCache`."""

    def __init__(self, model: GPT, cache: PagedKVCache) -> None:
        self.model, self.cache, self.cfg = model, cache, model.config
        cfg = self.cfg
        self.cos, self.sin = rope_tables(4 * cfg.block_size, cfg.head_dim, cfg.rope_base)
        self.slopes = alibi_slopes(cfg.n_head) if cfg.pos == "alibi" else None
        self.tokens_computed = 0

    def forward(self, chunks: Sequence[Chunk], all_logits: bool = False) -> np.ndarray:
        """Logits of each chunk's last token (n_chunks, V), or of every token (N, V)."""
        cfg, bs = self.cfg, self.cache.block_size
        ids = np.concatenate([np.asarray(c.tokens, np.int64) for c in chunks])
        pos = np.concatenate([np.arange(c.start, c.start + len(c.tokens)) for c in chunks])
        bounds = np.cumsum([0] + [len(c.tokens) for c in chunks])
        slots = [
            slot_mapping(c.block_table, range(c.start, c.start + len(c.tokens)), bs) for c in chunks
        ]
        n, hd = len(ids), cfg.head_dim
        self.tokens_computed += n
        with no_grad():
            h = self.model.tok_emb(ids)  # (N, C)
            for layer, blk in enumerate(self.model.blocks):
                assert isinstance(blk, Block)
                x = blk.norm1(h)
                attn = blk.attn
                q = attn.q_proj(x).data.reshape(n, cfg.n_head, hd)
                k = attn.k_proj(x).data.reshape(n, cfg.n_kv_head, hd)
                v = attn.v_proj(x).data.reshape(n, cfg.n_kv_head, hd)
                if cfg.pos == "rope":
                    cos, sin = self.cos[pos], self.sin[pos]
                    q, k = _rope(q, cos, sin), _rope(k, cos, sin)
                y = np.empty_like(q)
                for i, c in enumerate(chunks):
                    lo, hi = bounds[i], bounds[i + 1]
                    self.cache.write(layer, slots[i], k[lo:hi], v[lo:hi])
                    y[lo:hi] = paged_attention(
                        q[lo:hi],
                        self.cache.k[layer],
                        self.cache.v[layer],
                        c.block_table,
                        c.start + hi - lo,
                        self.slopes,
                    )
                h = h + attn.o_proj(Tensor(y.reshape(n, cfg.n_head * hd)))
                h = h + blk.mlp(blk.norm2(h))
            if not all_logits:
                h = h[bounds[1:] - 1]
            h = self.model.norm_f(h)
            if cfg.tie_head:
                return (h @ self.model.tok_emb.weight.T).data
            return self.model.lm_head(h).data
